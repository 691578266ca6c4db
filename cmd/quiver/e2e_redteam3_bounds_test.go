package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Red team 3, the bounds and renewal findings: a resources/read or
// prompts/get result of many short parts and a log notification of many
// short records past max_result_bytes; a subscription renewed, after the
// server restarted, past a tools.yaml switch made since.

// rt3ManyEnv makes the test binary a downstream server whose resource,
// prompt and log message are many short parts.
const rt3ManyEnv = "QUIVER_REDTEAM3_MANY"

const rt3Limit = 64 << 10

func init() {
	serveMini(rt3ManyEnv, "rt3-many", func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("log_many", mcp.WithDescription("Logs many short records in one message."),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				recs := make([]any, 40000)
				for i := range recs {
					recs[i] = fmt.Sprint(i % 10)
				}
				if srv := server.ServerFromContext(ctx); srv != nil {
					_ = srv.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelError, "rt3", map[string]any{"records": recs}))
				}
				time.Sleep(300 * time.Millisecond)
				return mcp.NewToolResultText("done"), nil
			})
		s.AddResource(mcp.NewResource("rt3://many", "many", mcp.WithMIMEType("text/plain")),
			func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				out := make([]mcp.ResourceContents, 0, 40000)
				for i := 0; i < 40000; i++ {
					out = append(out, mcp.TextResourceContents{URI: "rt3://many", Text: fmt.Sprint(i % 10)})
				}
				return out, nil
			})
		s.AddPrompt(mcp.NewPrompt("many", mcp.WithPromptDescription("Many short messages.")),
			func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				res := &mcp.GetPromptResult{Description: "many"}
				for i := 0; i < 40000; i++ {
					res.Messages = append(res.Messages, mcp.PromptMessage{Role: mcp.RoleUser, Content: mcp.NewTextContent(fmt.Sprint(i % 10))})
				}
				return res, nil
			})
	})
}

func startRT3Many(t *testing.T) *hostileRig {
	t.Helper()
	return startMini(t, rt3ManyEnv, rt3Limit, "", testWriter{t}, "mini__log_many")
}

// startMini starts quiver on one server, "mini": the test binary made the
// server miniEnv names, with results bounded at limit. A secret, when
// given, is passed to it as RT_SECRET by ${RT_SECRET}, so quiver knows it
// as a secret; stderr (nil for the default) takes quiver's log.
func startMini(t *testing.T, miniEnv string, limit int, secret string, stderr io.Writer, tools ...string) *hostileRig {
	t.Helper()
	l := launch{stderr: stderr}
	passed := ""
	if secret != "" {
		passed = `, RT_SECRET: "${RT_SECRET}"`
		l.env = []string{"RT_SECRET=" + secret}
	}
	l.cfg = fmt.Sprintf(`
surface:
  reveal: direct
  max_result_bytes: %d
servers:
  mini:
    command: %q
    env: {%s: "1"%s}
%s`, limit, testBinary(t), miniEnv, passed, allowAll)
	h, rec, _ := l.start(t)
	h.waitTools(tools...)
	return &hostileRig{h: h, rec: rec}
}

// TestRedTeam3PassThroughManySmallParts: red team 2's fix leaves items
// out of a tool result of many short parts; resources/read and
// prompts/get are bounded only at the exit, which cuts long strings, and
// a result of 40,000 one-character parts (about 1.5 MB) reaches the host
// whole, far over surface.max_result_bytes.
func TestRedTeam3PassThroughManySmallParts(t *testing.T) {
	r := startRT3Many(t)
	t.Run("resources_read", func(t *testing.T) {
		out, err := r.readResource("quiver://mini/rt3://many")
		if err != nil && out.Result == nil {
			t.Fatalf("control: the read failed: %v", err)
		}
		if n := len(out.Result); n > rt3Limit+1024 {
			t.Errorf("a resources/read result of %d bytes reached the host; surface.max_result_bytes is %d", n, rt3Limit)
		}
	})
	t.Run("prompts_get", func(t *testing.T) {
		r.rec.forget(string(mcp.MethodPromptsGet))
		req := mcp.GetPromptRequest{}
		req.Params.Name = "mini__many"
		_, err := r.h.c.GetPrompt(r.h.ctx(), req)
		out := r.rec.answer(string(mcp.MethodPromptsGet))
		if err != nil && out.Result == nil {
			t.Fatalf("control: the prompt failed: %v", err)
		}
		if n := len(out.Result); n > rt3Limit+1024 {
			t.Errorf("a prompts/get result of %d bytes reached the host; surface.max_result_bytes is %d", n, rt3Limit)
		}
	})
}

// TestRedTeam3LogNotificationManySmallParts: a notification is bounded at
// the exit by cutting long strings; a log message whose data is 40,000
// one-character records (about 200 KB) reaches the host whole, over
// surface.max_result_bytes.
func TestRedTeam3LogNotificationManySmallParts(t *testing.T) {
	r := startRT3Many(t)
	biggest := 0
	for _, n := range notificationsDuring(t, r, "mini__log_many", 700*time.Millisecond) {
		biggest = max(biggest, len(n))
	}
	if biggest == 0 {
		t.Fatalf("control: no notification reached the host")
	}
	if biggest > rt3Limit+1024 {
		t.Errorf("a log notification of %d bytes reached the host; surface.max_result_bytes is %d", biggest, rt3Limit)
	}
}

// rt3SubEnv makes the test binary a downstream server with a resource one
// can subscribe to; every request it gets is appended to the file
// RT3_MARK names ("<pid> <method>" a line), and its tool crash_later ends
// the process a moment after it answers, as a server that crashes does.
const rt3SubEnv = "QUIVER_REDTEAM3_SUB"

func init() {
	if os.Getenv(rt3SubEnv) == "" {
		return
	}
	mark := os.Getenv("RT3_MARK")
	hooks := &server.Hooks{}
	hooks.AddBeforeAny(func(ctx context.Context, id any, method mcp.MCPMethod, message any) {
		f, err := os.OpenFile(mark, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintf(f, "%d %s\n", os.Getpid(), method)
			f.Close()
		}
	})
	s := server.NewMCPServer("rt3-sub", "1.0.0", server.WithToolCapabilities(false),
		server.WithResourceCapabilities(true, true), server.WithHooks(hooks))
	s.AddResource(mcp.NewResource("rt3://feed", "feed", mcp.WithMIMEType("text/plain")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "rt3://feed", Text: "feed"}}, nil
		})
	s.AddTool(mcp.NewTool("crash_later", mcp.WithDescription("Ends the server a moment from now."),
		mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			go func() { time.Sleep(1500 * time.Millisecond); os.Exit(3) }()
			return mcp.NewToolResultText("ok"), nil
		})
	if err := server.ServeStdio(s); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// TestRedTeam3ResubscribeAfterSwitchOff: quiver renews the subscriptions
// it holds when a server comes back after a restart, straight to the
// server: not through the gate, not in the ledger. A subscription made
// while allowed is sent again to a server that tools.yaml has since
// switched off ("sub__*" covers sub__resources.subscribe), where a new
// subscribe is refused.
func TestRedTeam3ResubscribeAfterSwitchOff(t *testing.T) {
	self := testBinary(t)
	mark := filepath.Join(t.TempDir(), "requests.log")
	lc := newLiveConfig(t, fmt.Sprintf(`
surface:
  reveal: direct
servers:
  sub:
    command: %q
    env: {%s: "1", RT3_MARK: %q}
%s`, self, rt3SubEnv, mark, allowAll))
	h := startQuiver(t, "", hostOptions{args: lc.args()})
	h.waitTools("sub__crash_later")
	sub := func() error {
		//lint:ignore SA1019 resources/subscribe is current for the 2025-11-25 host this test plays
		return h.c.Subscribe(h.ctx(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "rt3://feed"}})
	}
	if err := sub(); err != nil {
		t.Fatalf("control: the subscription while allowed failed: %v", err)
	}
	count := func() int {
		b, _ := os.ReadFile(mark)
		return strings.Count(string(b), "resources/subscribe")
	}
	if count() != 1 {
		t.Fatalf("control: the server did not get the subscription: %d", count())
	}
	h.call("sub__crash_later", map[string]any{})
	lc.write(lc.tgl, "disabled:\n  - sub__*\n")
	time.Sleep(1 * time.Second)
	if err := sub(); err == nil {
		t.Fatalf("control: a subscription after tools.yaml switched sub__* off was not refused")
	}
	before := count()
	// Control: the server restarts (a second process writes to the
	// mark); then quiver has had time to renew what it holds.
	processes := func() int {
		b, _ := os.ReadFile(mark)
		pids := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if pid, _, ok := strings.Cut(line, " "); ok {
				pids[pid] = true
			}
		}
		return len(pids)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && processes() < 2 {
		time.Sleep(100 * time.Millisecond)
	}
	if processes() < 2 {
		t.Fatalf("control: the server did not restart")
	}
	time.Sleep(2 * time.Second)
	b, _ := os.ReadFile(mark)
	t.Logf("requests the server got:\n%s", b)
	if count() > before {
		t.Errorf("after tools.yaml switched sub__* off, quiver sent resources/subscribe to the restarted server without the gate")
	}
}

// notificationsDuring collects, as sent, the notifications the host gets
// at log level debug while tool runs, and for wait after it answers.
func notificationsDuring(t *testing.T, r *hostileRig, tool string, wait time.Duration) []string {
	t.Helper()
	var mu sync.Mutex
	var notes []string
	r.h.c.OnNotification(func(n mcp.JSONRPCNotification) {
		b, _ := json.Marshal(n)
		mu.Lock()
		notes = append(notes, string(b))
		mu.Unlock()
	})
	//lint:ignore SA1019 logging/setLevel is current for the 2025-11-25 host this test plays
	if err := r.h.c.SetLevel(r.h.ctx(), mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	r.h.call(tool, map[string]any{})
	time.Sleep(wait)
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(notes)
}

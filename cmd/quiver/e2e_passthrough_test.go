package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// everythingServerVersion is the pinned @modelcontextprotocol/server-everything.
const everythingServerVersion = "2026.8.31"

// everythingServer installs @modelcontextprotocol/server-everything (once
// per machine, in the user cache) and returns its entry script.
func everythingServer(t testing.TB) string {
	return npmServer(t, "server-everything", everythingServerVersion)
}

// upstream is a host that can sample and elicit, and records the
// notifications quiver sends it.
type upstream struct {
	mu       sync.Mutex
	notes    []mcp.JSONRPCNotification
	samples  int
	elicits  int
	stderr   syncBuffer
	arrived  chan struct{}
	elicitFn func(mcp.ElicitationRequest) *mcp.ElicitationResult
}

func newUpstream() *upstream { return &upstream{arrived: make(chan struct{}, 1000)} }

func (u *upstream) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	u.mu.Lock()
	u.samples++
	u.mu.Unlock()
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("sampled by the host")},
		Model:           "test-model",
		StopReason:      "endTurn",
	}, nil
}

func (u *upstream) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	u.mu.Lock()
	u.elicits++
	fn := u.elicitFn
	u.mu.Unlock()
	if fn != nil {
		return fn(req), nil
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Quinn"}}}, nil
}

func (u *upstream) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///work/host-root", Name: "host"}}}, nil
}

func (u *upstream) notify(n mcp.JSONRPCNotification) {
	u.mu.Lock()
	u.notes = append(u.notes, n)
	u.mu.Unlock()
	select {
	case u.arrived <- struct{}{}:
	default:
	}
}

// waitNote waits for a notification that ok accepts.
func (u *upstream) waitNote(t testing.TB, within time.Duration, what string, ok func(mcp.JSONRPCNotification) bool) mcp.JSONRPCNotification {
	t.Helper()
	deadline := time.After(within)
	for {
		u.mu.Lock()
		for _, n := range u.notes {
			if ok(n) {
				u.mu.Unlock()
				return n
			}
		}
		u.mu.Unlock()
		select {
		case <-u.arrived:
		case <-deadline:
			t.Fatalf("no %s within %s", what, within)
		}
	}
}

func (u *upstream) options() hostOptions {
	return hostOptions{
		client: []client.ClientOption{client.WithSamplingHandler(u), client.WithElicitationHandler(u), client.WithRootsHandler(u)},
		notify: u.notify,
		stderr: &u.stderr,
	}
}

const allowAll = `
policy:
  defaults: {read: allow, write: allow, destructive: allow, execute: allow, network: allow, admin: allow}
`

// TestPassThroughEverything drives the published reference server
// through quiver over stdio: prompts, resources, completion, sampling,
// elicitation, progress, logging and cancellation.
func TestPassThroughEverything(t *testing.T) {
	script := everythingServer(t)
	node := needTool(t, "node")
	u := newUpstream()
	h := startQuiver(t, fmt.Sprintf(`
surface:
  reveal: direct
servers:
  ev:
    command: %s
    args: [%s, stdio]
    timeout: 30s
%s`, node, script, allowAll), u.options())
	h.waitTools("ev__echo", "ev__trigger-sampling-request", "ev__trigger-elicitation-request", "ev__trigger-long-running-operation")
	ctx := h.ctx()

	t.Run("prompts", func(t *testing.T) {
		var names []string
		deadline := time.Now().Add(10 * time.Second)
		for !slices.Contains(names, "ev__args-prompt") && time.Now().Before(deadline) {
			res, err := h.c.ListPrompts(ctx, mcp.ListPromptsRequest{})
			if err != nil {
				t.Fatalf("prompts/list: %v", err)
			}
			names = names[:0]
			for _, p := range res.Prompts {
				names = append(names, p.Name)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !containsAll(names, []string{"ev__simple-prompt", "ev__args-prompt"}) {
			t.Fatalf("prompts/list = %v, want the server's prompts prefixed", names)
		}
		req := mcp.GetPromptRequest{}
		req.Params.Name = "ev__args-prompt"
		req.Params.Arguments = map[string]string{"city": "Lisbon"}
		res, err := h.c.GetPrompt(ctx, req)
		if err != nil {
			t.Fatalf("prompts/get: %v", err)
		}
		if len(res.Messages) == 0 || !strings.Contains(fmt.Sprint(res.Messages[0].Content), "Lisbon") {
			t.Fatalf("prompts/get lost the argument: %+v", res.Messages)
		}
		creq := mcp.CompleteRequest{}
		creq.Params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: "ev__completable-prompt"}
		creq.Params.Argument = mcp.CompleteArgument{Name: "department", Value: "E"}
		cres, err := h.c.Complete(ctx, creq)
		if err != nil {
			t.Fatalf("completion/complete: %v", err)
		}
		if len(cres.Completion.Values) == 0 {
			t.Fatalf("completion/complete gave no values")
		}
	})

	t.Run("resources", func(t *testing.T) {
		res, err := h.c.ListResources(ctx, mcp.ListResourcesRequest{})
		if err != nil || len(res.Resources) == 0 {
			t.Fatalf("resources/list: %v, %d resources", err, len(res.Resources))
		}
		first := res.Resources[0].URI
		if !strings.HasPrefix(first, "demo://") {
			t.Fatalf("a URI no other server uses must pass unchanged, got %q", first)
		}
		rr, err := h.c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: first}})
		if err != nil || len(rr.Contents) == 0 {
			t.Fatalf("resources/read %s: %v", first, err)
		}
		tres, err := h.c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
		if err != nil {
			t.Fatalf("resources/templates/list: %v", err)
		}
		var raws []string
		for _, tpl := range tres.ResourceTemplates {
			raws = append(raws, tpl.URITemplate.Raw())
		}
		if !slices.Contains(raws, "demo://resource/dynamic/text/{resourceId}") || slices.Contains(raws, "{+uri}") {
			t.Fatalf("templates = %v", raws)
		}
		rr, err = h.c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/7"}})
		if err != nil || len(rr.Contents) == 0 {
			t.Fatalf("read through a template: %v", err)
		}
		if tc, ok := rr.Contents[0].(mcp.TextResourceContents); !ok || tc.URI != "demo://resource/dynamic/text/7" {
			t.Fatalf("contents = %#v", rr.Contents[0])
		}
	})

	t.Run("roots", func(t *testing.T) {
		// The server asks for roots when told they changed; it must see the
		// host's.
		if err := h.c.RootListChanges(ctx); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			res := h.call("ev__get-roots-list", map[string]any{})
			if strings.Contains(toolresult.Text(res), "file:///work/host-root") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the server never saw the host's roots: %s", toolresult.Text(res))
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("sampling", func(t *testing.T) {
		res := h.call("ev__trigger-sampling-request", map[string]any{"prompt": "say hi", "maxTokens": 20})
		if res.IsError || !strings.Contains(toolresult.Text(res), "sampled by the host") {
			t.Fatalf("sampling did not reach the host and back: %s", toolresult.Text(res))
		}
	})

	t.Run("elicitation", func(t *testing.T) {
		res := h.call("ev__trigger-elicitation-request", map[string]any{})
		if res.IsError || !strings.Contains(toolresult.Text(res), "Quinn") {
			t.Fatalf("elicitation did not reach the host and back: %s", toolresult.Text(res))
		}
	})

	t.Run("progress", func(t *testing.T) {
		req := mcp.CallToolRequest{}
		req.Params.Name = "ev__trigger-long-running-operation"
		req.Params.Arguments = map[string]any{"duration": 1, "steps": 3}
		req.Params.Meta = &mcp.Meta{ProgressToken: "host-token-1"}
		res, err := h.c.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("long-running operation: %v %s", err, toolresult.Text(res))
		}
		n := u.waitNote(t, 5*time.Second, "progress with the host's token", func(n mcp.JSONRPCNotification) bool {
			return n.Method == "notifications/progress" && n.Params.AdditionalFields["progressToken"] == "host-token-1"
		})
		if n.Params.AdditionalFields["total"] == nil {
			t.Fatalf("progress lost its fields: %v", n.Params.AdditionalFields)
		}
	})

	t.Run("logging", func(t *testing.T) {
		//lint:ignore SA1019 logging/setLevel is current for the 2025-11-25 host this test plays
		if err := h.c.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}); err != nil {
			t.Fatalf("logging/setLevel: %v", err)
		}
		// setLevel reaches the server in the background; toggling after a
		// moment makes the first message pass its filter.
		time.Sleep(300 * time.Millisecond)
		res := h.call("ev__toggle-simulated-logging", map[string]any{})
		if res.IsError {
			t.Fatalf("toggle logging: %s", toolresult.Text(res))
		}
		n := u.waitNote(t, 12*time.Second, "a log message from the server", func(n mcp.JSONRPCNotification) bool {
			return n.Method == "notifications/message"
		})
		if logger, _ := n.Params.AdditionalFields["logger"].(string); !strings.HasPrefix(logger, "ev") {
			t.Fatalf("log message not prefixed with the server: %v", n.Params.AdditionalFields)
		}
		h.call("ev__toggle-simulated-logging", map[string]any{})
	})

	t.Run("cancel", func(t *testing.T) {
		cctx, cancel := context.WithCancel(context.Background())
		req := mcp.CallToolRequest{}
		req.Params.Name = "ev__trigger-long-running-operation"
		req.Params.Arguments = map[string]any{"duration": 20, "steps": 20}
		req.Params.Meta = &mcp.Meta{ProgressToken: "host-token-2"}
		done := make(chan error, 1)
		go func() {
			_, err := h.c.CallTool(cctx, req)
			done <- err
		}()
		u.waitNote(t, 5*time.Second, "the first progress of the long call", func(n mcp.JSONRPCNotification) bool {
			return n.Method == "notifications/progress" && n.Params.AdditionalFields["progressToken"] == "host-token-2"
		})
		start := time.Now()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled call: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the cancelled call did not return")
		}
		// quiver saw the cancellation and ended its downstream call.
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(u.stderr.String(), "context canceled") {
			if time.Now().After(deadline) {
				t.Fatalf("quiver did not end the downstream call on cancellation; log:\n%s", u.stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("cancellation took too long")
		}
		// And keeps working.
		if res := h.call("ev__echo", map[string]any{"message": "still here"}); res.IsError {
			t.Fatalf("echo after cancel: %s", toolresult.Text(res))
		}
	})
}

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/quiver-mcp/quiver/internal/hostileserver"
)

// The hostile tests put quiver in front of internal/hostileserver, a
// downstream that leaks in every channel MCP has, and check what the host
// actually receives: the raw JSON-RPC bytes, not mcp-go's typed structs,
// because mcp-go re-marshals a result (RawStructuredContent among others)
// and would hide what went over the wire.

var hostileServer = builtServer("hostile", "github.com/quiver-mcp/quiver/internal/hostileserver/cmd/hostile")

// A wireAnswer is one JSON-RPC answer as it arrived: the result's bytes
// untouched, or the error.
type wireAnswer struct {
	Result json.RawMessage
	Error  *mcp.JSONRPCErrorDetails
}

// text is everything the host can read in the answer: the raw result and
// the error's message and data.
func (w wireAnswer) text() string {
	s := string(w.Result)
	if w.Error != nil {
		data, _ := json.Marshal(w.Error.Data)
		s += "\n" + w.Error.Message + "\n" + string(data)
	}
	return s
}

// strings returns every string value in the raw result, decoded: what a
// host shows or feeds to a model, whatever JSON escaping did to it.
func (w wireAnswer) strings() string {
	var v any
	if json.Unmarshal(w.Result, &v) != nil {
		return string(w.Result)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			b.WriteString(v)
			b.WriteByte('\n')
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, e := range v {
				b.WriteString(k)
				b.WriteByte('\n')
				walk(e)
			}
		}
	}
	walk(v)
	if w.Error != nil {
		b.WriteString(w.Error.Message)
	}
	return b.String()
}

// A recorder is the host's stdio transport, keeping the last answer to
// each method as it came over the wire.
type recorder struct {
	*transport.Stdio
	mu   sync.Mutex
	last map[string]wireAnswer
}

func (r *recorder) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := r.Stdio.SendRequest(ctx, req)
	if resp != nil {
		r.mu.Lock()
		r.last[req.Method] = wireAnswer{Result: append(json.RawMessage(nil), resp.Result...), Error: resp.Error}
		r.mu.Unlock()
	}
	return resp, err
}

// forget drops the last answer to method, so that a call that gets none
// is not judged on an earlier call's.
func (r *recorder) forget(method string) {
	r.mu.Lock()
	delete(r.last, method)
	r.mu.Unlock()
}

// answer returns the last answer to method.
func (r *recorder) answer(method string) wireAnswer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[method]
}

// A launch says how to start quiver for a test.
type launch struct {
	cfg    string
	env    []string      // added to this process's environment
	dir    string        // quiver's working directory ("" = the test's)
	answer *cardAnswerer // how the person answers cards (nil: the host cannot show them)
	stderr io.Writer     // also receives quiver's log (at info)
	home   string        // where servers.yaml and the state dir go ("": a new temp folder)
	quiet  bool          // log at warn: a fuzz test's thousands of refusals are noise
	// found passes no --config, as a host that names none: quiver finds
	// its configuration itself, in its config folder (XDG_CONFIG_HOME is
	// <home>/config; cfg, when set, is written there) or built in.
	found bool
	args  []string // more flags for serve
}

// start runs quiver serve as l says and connects a recorded host. It
// returns the host, its recorder and quiver's state dir.
func (l launch) start(t *testing.T) (*host, *recorder, string) {
	t.Helper()
	dir := l.home
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, "servers.yaml")
	env := l.env
	args := []string{"--config", path}
	if l.found {
		cfgHome := filepath.Join(dir, "config")
		env, args = append(slices.Clip(env), "XDG_CONFIG_HOME="+cfgHome), nil
		path = filepath.Join(cfgHome, "quiver", "servers.yaml")
	}
	if l.cfg != "" || !l.found {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(l.cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(dir, "state")
	var stderr io.Writer = testWriter{t}
	if l.stderr != nil {
		stderr = l.stderr
	}
	level := "info"
	if l.quiet {
		level = "warn"
	}
	st := transport.NewStdioWithOptions(quiverBin, env,
		append(append([]string{"serve", "--state-dir", state, "--log-level", level}, args...), l.args...),
		transport.WithCommandStderrWriter(stderr),
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.Dir = l.dir
			return cmd, nil
		}))
	rec := &recorder{Stdio: st, last: map[string]wireAnswer{}}
	opts := []client.ClientOption{client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)}
	if l.answer != nil {
		opts = append(opts, client.WithElicitationHandler(l.answer))
	}
	c := client.NewClient(rec, opts...)
	h := &host{t: t, c: c, changed: make(chan struct{}, 64)}
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start quiver: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e-hostile", Version: "1"}
	if _, err := c.Initialize(h.ctx(), init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return h, rec, state
}

// randomWord is 16 hex digits nobody else will write.
func randomWord(t testing.TB) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// auditEntries returns quiver audit --json, one decoded line an entry.
func auditEntries(t testing.TB, state string) ([]map[string]any, string) {
	t.Helper()
	out, err := exec.Command(quiverBin, "audit", "--state-dir", state, "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("quiver audit: %v\n%s", err, out)
	}
	var entries []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var e map[string]any
		if json.Unmarshal(line, &e) == nil {
			entries = append(entries, e)
		}
	}
	return entries, string(out)
}

// refusals counts the audit entries whose decision asked or denied.
func refusals(entries []map[string]any) int {
	n := 0
	for _, e := range entries {
		code, _ := e["code"].(string)
		if strings.HasPrefix(code, "ask.") || strings.HasPrefix(code, "deny.") {
			n++
		}
	}
	return n
}

// auditsRefusal returns a check, to make after a request quiver must
// refuse, that quiver audit then holds one more refusal than now.
func (r *hostileRig) auditsRefusal(t *testing.T) func(what string) {
	t.Helper()
	before, _ := auditEntries(t, r.state)
	return func(what string) {
		t.Helper()
		after, raw := auditEntries(t, r.state)
		if refusals(after) <= refusals(before) {
			t.Errorf("the refused %s is not in quiver audit:\n%s", what, raw)
		}
	}
}

// hostileLimit is surface.max_result_bytes in the hostile tests.
const hostileLimit = 64 << 10

// hostileRig is quiver in front of the hostile server, with a fence of
// one folder and a canary file outside it.
type hostileRig struct {
	h       *host
	rec     *recorder
	state   string
	inside  string // the fence's one folder
	outside string // a folder beside it
	canary  string // outside/canary.txt's content
	secret  string // HOSTILE_SECRET: given to quiver, passed to the server by ${VAR}
	dbPass  string // DB_PASS: in quiver's environment only
	argPass string // the value after --password in the server's args
	log     *syncBuffer
}

func startHostile(t *testing.T) *hostileRig {
	t.Helper()
	bin := hostileServer(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &hostileRig{
		inside:  filepath.Join(base, "fenced"),
		outside: filepath.Join(base, "outside"),
		canary:  "CANARY-" + randomWord(t),
		secret:  "hs-" + randomWord(t),
		dbPass:  "db-" + randomWord(t),
		argPass: "pw-" + randomWord(t),
		log:     &syncBuffer{},
	}
	for _, d := range []string{r.inside, r.outside, filepath.Join(r.outside, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(r.inside, "inside.txt"), []byte("inside text\n"), 0o600)
	os.WriteFile(filepath.Join(r.outside, "canary.txt"), []byte(r.canary+"\n"), 0o600)
	cfg := fmt.Sprintf(`
surface:
  reveal: direct
  max_result_bytes: %d
servers:
  hostile:
    command: %q
    args: [--password, %q]
    env: {%s: "${%s}"}
    cwd: %q
fence:
  allowed_dirs: [%q]
%s`, hostileLimit, bin, r.argPass, hostileserver.SecretEnv, hostileserver.SecretEnv, base, r.inside, allowAll)
	r.h, r.rec, r.state = launch{
		cfg:    cfg,
		env:    []string{hostileserver.SecretEnv + "=" + r.secret, "DB_PASS=" + r.dbPass},
		answer: &cardAnswerer{decision: "decline"},
		stderr: io.MultiWriter(testWriter{t}, r.log),
	}.start(t)
	r.h.waitTools("hostile__echo", "hostile__get_env", "hostile__structured_token")
	return r
}

func (r *hostileRig) readResource(uri string) (wireAnswer, error) {
	r.rec.forget(string(mcp.MethodResourcesRead))
	_, err := r.h.c.ReadResource(r.h.ctx(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	return r.rec.answer(string(mcp.MethodResourcesRead)), err
}

func (r *hostileRig) getPrompt(path string) (wireAnswer, error) {
	r.rec.forget(string(mcp.MethodPromptsGet))
	req := mcp.GetPromptRequest{}
	req.Params.Name = "hostile__quote_file"
	req.Params.Arguments = map[string]string{"path": path}
	_, err := r.h.c.GetPrompt(r.h.ctx(), req)
	return r.rec.answer(string(mcp.MethodPromptsGet)), err
}

func (r *hostileRig) complete(ref any, value string) (wireAnswer, error) {
	r.rec.forget(string(mcp.MethodCompletionComplete))
	req := mcp.CompleteRequest{}
	req.Params.Ref = ref
	req.Params.Argument = mcp.CompleteArgument{Name: "path", Value: value}
	_, err := r.h.c.Complete(r.h.ctx(), req)
	return r.rec.answer(string(mcp.MethodCompletionComplete)), err
}

// callRaw runs tools/call and returns the answer as it came over the wire.
func (r *hostileRig) callRaw(name string, args map[string]any) wireAnswer {
	r.h.t.Helper()
	r.rec.forget(string(mcp.MethodToolsCall))
	r.h.call(name, args)
	return r.rec.answer(string(mcp.MethodToolsCall))
}

// callLong is callRaw for calls that move megabytes: a longer deadline, and
// failures reported on t (a subtest) rather than on the rig's test.
func (r *hostileRig) callLong(t *testing.T, name string, args map[string]any) wireAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	r.rec.forget(string(mcp.MethodToolsCall))
	if _, err := r.h.c.CallTool(ctx, req); err != nil && r.rec.answer(string(mcp.MethodToolsCall)).Result == nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return r.rec.answer(string(mcp.MethodToolsCall))
}

// TestHostileResourceReadOutsideFence: a template that serves any file is
// a way around the fence unless resources/read passes the gate, and the
// refusal must be in the ledger.
func TestHostileResourceReadOutsideFence(t *testing.T) {
	r := startHostile(t)
	inside, err := r.readResource("file://" + filepath.Join(r.inside, "inside.txt"))
	if err != nil || !strings.Contains(inside.strings(), "inside text") {
		t.Fatalf("control: a file inside the fence must be readable: %v %s", err, inside.text())
	}
	audited := r.auditsRefusal(t)
	out, err := r.readResource("file://" + filepath.Join(r.outside, "canary.txt"))
	if strings.Contains(out.text(), r.canary) || strings.Contains(out.strings(), r.canary) {
		t.Fatalf("resources/read served a file outside the fence: %s", out.text())
	}
	if err == nil && out.Error == nil {
		t.Errorf("resources/read outside the fence must be refused, got a result: %s", out.text())
	}
	audited("resources/read")
}

// TestHostileResourceSubscribeOutsideFence: subscribing is reading later.
func TestHostileResourceSubscribeOutsideFence(t *testing.T) {
	r := startHostile(t)
	audited := r.auditsRefusal(t)
	//lint:ignore SA1019 resources/subscribe is current for the 2025-11-25 host this test plays
	err := r.h.c.Subscribe(r.h.ctx(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "file://" + filepath.Join(r.outside, "canary.txt")}})
	if err == nil {
		t.Errorf("resources/subscribe to a file outside the fence must be refused")
	}
	audited("resources/subscribe")
}

// TestHostileSecretResourceRedacted: a resource's contents leave through
// the same exit as results.
func TestHostileSecretResourceRedacted(t *testing.T) {
	r := startHostile(t)
	out, err := r.readResource("secret://token")
	if err != nil {
		t.Fatalf("resources/read secret://token: %v", err)
	}
	for name, s := range map[string]string{"the ghp_ token": hostileserver.Token, "HOSTILE_SECRET's value": r.secret} {
		if strings.Contains(out.text(), s) {
			t.Errorf("resources/read returned %s in clear: %s", name, out.text())
		}
	}
}

// TestHostilePromptOutsideFence: a prompt argument that names a file is a
// path argument like any other.
func TestHostilePromptOutsideFence(t *testing.T) {
	r := startHostile(t)
	if in, err := r.getPrompt(filepath.Join(r.inside, "inside.txt")); err != nil || !strings.Contains(in.strings(), "inside text") {
		t.Fatalf("control: quoting a file inside the fence must work: %v %s", err, in.text())
	}
	audited := r.auditsRefusal(t)
	out, err := r.getPrompt(filepath.Join(r.outside, "canary.txt"))
	if strings.Contains(out.strings(), r.canary) {
		t.Fatalf("prompts/get quoted a file outside the fence: %s", out.text())
	}
	if err == nil && out.Error == nil {
		t.Errorf("prompts/get with a path outside the fence must be refused: %s", out.text())
	}
	audited("prompts/get")
}

// TestHostileCompletionOutsideFence: completions that list a folder show
// what is outside the fence unless the value passes the fence.
func TestHostileCompletionOutsideFence(t *testing.T) {
	r := startHostile(t)
	prompt := mcp.PromptReference{Type: "ref/prompt", Name: "hostile__quote_file"}
	tpl := mcp.ResourceReference{Type: "ref/resource", URI: hostileserver.FileTemplate}
	if in, err := r.complete(prompt, r.inside+"/"); err != nil || !strings.Contains(in.text(), "inside.txt") {
		t.Fatalf("control: completing inside the fence must list it: %v %s", err, in.text())
	}
	for name, c := range map[string]struct {
		ref   any
		value string
	}{
		"prompt_argument":   {prompt, r.outside + "/"},
		"template_argument": {tpl, strings.TrimPrefix(r.outside, "/") + "/"},
	} {
		t.Run(name, func(t *testing.T) {
			audited := r.auditsRefusal(t)
			out, _ := r.complete(c.ref, c.value)
			if strings.Contains(out.text(), "canary.txt") {
				t.Errorf("completion/complete listed a folder outside the fence: %s", out.text())
			}
			audited("completion/complete")
		})
	}
}

// TestHostileStructuredContentRedacted: the redactor must see what is
// serialized, structuredContent's raw bytes included.
func TestHostileStructuredContentRedacted(t *testing.T) {
	r := startHostile(t)
	out := r.callRaw("hostile__structured_token", map[string]any{})
	if !strings.Contains(out.text(), "[redacted:") {
		t.Errorf("control: the text content's token should be redacted: %s", out.text())
	}
	if strings.Contains(out.text(), hostileserver.Token) {
		t.Errorf("the ghp_ token reached the host in clear: %s", out.text())
	}
}

// TestHostileSecretsInEveryChannel: every byte that reaches the host —
// lists, results (text, embedded resources, links, structuredContent,
// _meta), protocol errors, prompts, completions and notifications — goes
// through the redactor.
func TestHostileSecretsInEveryChannel(t *testing.T) {
	r := startHostile(t)
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
	time.Sleep(300 * time.Millisecond) // setLevel reaches the server in the background
	noToken := func(t *testing.T, what string, w wireAnswer) {
		t.Helper()
		if w.Result == nil && w.Error == nil {
			t.Fatalf("control: no answer to %s", what)
		}
		if strings.Contains(w.text(), hostileserver.Token) {
			t.Errorf("%s carries the token in clear: %.600s", what, w.text())
		}
	}
	t.Run("tools_list", func(t *testing.T) {
		r.rec.forget(string(mcp.MethodToolsList))
		r.h.list()
		noToken(t, "tools/list", r.rec.answer(string(mcp.MethodToolsList)))
	})
	t.Run("result_parts", func(t *testing.T) {
		req := mcp.CallToolRequest{}
		req.Params.Name = "hostile__token_everywhere"
		req.Params.Meta = &mcp.Meta{ProgressToken: "p-1"}
		r.rec.forget(string(mcp.MethodToolsCall))
		if _, err := r.h.c.CallTool(r.h.ctx(), req); err != nil {
			t.Fatalf("token_everywhere: %v", err)
		}
		noToken(t, "the result", r.rec.answer(string(mcp.MethodToolsCall)))
	})
	t.Run("protocol_error", func(t *testing.T) {
		r.rec.forget(string(mcp.MethodToolsCall))
		r.h.c.CallTool(r.h.ctx(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "hostile__token_error"}})
		noToken(t, "the error", r.rec.answer(string(mcp.MethodToolsCall)))
	})
	t.Run("prompts", func(t *testing.T) {
		r.rec.forget(string(mcp.MethodPromptsList))
		r.rec.forget(string(mcp.MethodPromptsGet))
		if _, err := r.h.c.ListPrompts(r.h.ctx(), mcp.ListPromptsRequest{}); err != nil {
			t.Fatal(err)
		}
		noToken(t, "prompts/list", r.rec.answer(string(mcp.MethodPromptsList)))
		req := mcp.GetPromptRequest{}
		req.Params.Name = "hostile__token_prompt"
		r.h.c.GetPrompt(r.h.ctx(), req)
		noToken(t, "prompts/get", r.rec.answer(string(mcp.MethodPromptsGet)))
	})
	t.Run("completion", func(t *testing.T) {
		req := mcp.CompleteRequest{}
		req.Params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: "hostile__token_prompt"}
		req.Params.Argument = mcp.CompleteArgument{Name: "token", Value: "gh"}
		r.rec.forget(string(mcp.MethodCompletionComplete))
		r.h.c.Complete(r.h.ctx(), req)
		noToken(t, "completion/complete", r.rec.answer(string(mcp.MethodCompletionComplete)))
	})
	t.Run("resources_list", func(t *testing.T) {
		r.rec.forget(string(mcp.MethodResourcesList))
		if _, err := r.h.c.ListResources(r.h.ctx(), mcp.ListResourcesRequest{}); err != nil {
			t.Fatal(err)
		}
		noToken(t, "resources/list", r.rec.answer(string(mcp.MethodResourcesList)))
	})
	t.Run("notifications", func(t *testing.T) {
		deadline := time.Now().Add(3 * time.Second)
		var logs, progress int
		for time.Now().Before(deadline) {
			mu.Lock()
			logs, progress = 0, 0
			for _, n := range notes {
				logs += strings.Count(n, `"notifications/message"`)
				progress += strings.Count(n, `"notifications/progress"`)
			}
			mu.Unlock()
			if logs > 0 && progress > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if logs == 0 || progress == 0 {
			t.Errorf("control: the server's log message and progress did not reach the host (%d logs, %d progress)", logs, progress)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, n := range notes {
			if strings.Contains(n, hostileserver.Token) {
				t.Errorf("a notification carries the token in clear: %.600s", n)
			}
		}
	})
}

// TestHostileEchoedSecretsRedacted: a token in the arguments comes back
// redacted, and a refusal that quotes its path stores no token in the
// ledger.
func TestHostileEchoedSecretsRedacted(t *testing.T) {
	r := startHostile(t)
	out := r.callRaw("hostile__echo", map[string]any{"note": "use " + hostileserver.Token})
	if strings.Contains(out.text(), hostileserver.Token) {
		t.Errorf("an echoed token reached the host in clear: %s", out.text())
	}
	refused := r.callRaw("hostile__echo", map[string]any{"path": filepath.Join(r.outside, hostileserver.Token)})
	if strings.Contains(refused.text(), hostileserver.Token) {
		t.Errorf("a refusal quoted the token in clear: %s", refused.text())
	}
	if _, raw := auditEntries(t, r.state); strings.Contains(raw, hostileserver.Token) {
		t.Errorf("quiver audit shows the token from the arguments:\n%s", raw)
	}
}

// TestHostileOddPathNames: a server may read a path under any argument
// name; a value that is a path by its shape is fenced whatever its name.
func TestHostileOddPathNames(t *testing.T) {
	r := startHostile(t)
	inside, canary := filepath.Join(r.inside, "inside.txt"), filepath.Join(r.outside, "canary.txt")
	if out := r.callRaw("hostile__read_any", map[string]any{"from": inside}); !strings.Contains(out.strings(), "inside text") {
		t.Fatalf("control: a path inside the fence under any name must run: %s", out.text())
	}
	for name, args := range map[string]map[string]any{
		"from":      {"from": canary},
		"to":        {"to": canary},
		"x":         {"x": canary},
		"file_uri":  {"q": "file://" + canary},
		"nested":    {"opts": map[string]any{"src": canary}},
		"in_a_list": {"items": []any{"hello", canary}},
		"dot_slash": {"v": "./outside/canary.txt"}, // the server's cwd is their parent
	} {
		t.Run(name, func(t *testing.T) {
			if out := r.callRaw("hostile__read_any", args); strings.Contains(out.strings(), r.canary) {
				t.Errorf("a path outside the fence under an odd name reached the server: %s", out.text())
			}
		})
	}
}

// TestHostileChildEnvironment: a child gets a small environment plus its
// env:, not quiver's whole environment; a value after --password in its
// args is a secret.
func TestHostileChildEnvironment(t *testing.T) {
	r := startHostile(t)
	out := r.callRaw("hostile__get_env", map[string]any{}).strings()
	if !strings.Contains(out, hostileserver.SecretEnv+"=") {
		t.Fatalf("control: the child must get its env: entry; get_env said:\n%s", out)
	}
	if strings.Contains(out, r.dbPass) || strings.Contains(out, "DB_PASS") {
		t.Errorf("the child sees DB_PASS, which quiver has and its env: does not give")
	}
	if strings.Contains(out, r.secret) {
		t.Errorf("HOSTILE_SECRET's value (from ${VAR}) came back in clear")
	}
	if strings.Contains(out, r.argPass) {
		t.Errorf("the value after --password in the server's args came back in clear")
	}
}

// TestHostileStderrSecretSplit: a secret that straddles 8 KiB, or a pause,
// in a child's stderr is still redacted in quiver's log.
func TestHostileStderrSecretSplit(t *testing.T) {
	r := startHostile(t)
	if out := r.callRaw("hostile__stderr_secret", map[string]any{}); out.Error != nil {
		t.Fatalf("stderr_secret: %s", out.text())
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(r.log.String(), " end") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	log := r.log.String()
	if !strings.Contains(log, "pause:") {
		t.Fatalf("control: quiver did not log the child's stderr at info:\n%.2000s", log)
	}
	for name, s := range map[string]string{"the ghp_ token": hostileserver.Token, "HOSTILE_SECRET's value": r.secret} {
		h := len(s) / 2
		for _, part := range []string{s, s[:h], s[h:]} {
			if strings.Contains(log, part) {
				t.Errorf("quiver's log shows %s (or half of it, %q) from the child's stderr", name, part)
			}
		}
	}
}

// TestHostileLargeResultsBounded: what the host receives is bounded by
// max_result_bytes, keeps readable text and says it was cut.
func TestHostileLargeResultsBounded(t *testing.T) {
	r := startHostile(t)
	cases := []struct {
		tool  string
		bytes int
		text  string // the unit the text repeats ("": the text is JSON)
	}{
		{"hostile__big_structured", 4 << 20, hostileserver.Readable},
		{"hostile__big_text", 8 << 20, hostileserver.Escapy},
		{"hostile__schema_big", 1 << 20, ""},
	}
	for _, c := range cases {
		t.Run(strings.TrimPrefix(c.tool, "hostile__"), func(t *testing.T) {
			out := r.callLong(t, c.tool, map[string]any{"bytes": c.bytes})
			if out.Error != nil {
				t.Fatalf("a large result must be a result, not a protocol error: %s", out.text())
			}
			// The notice and _meta may add a little to the cut result.
			if n := len(out.Result); n > hostileLimit+1024 {
				t.Errorf("the host received %d bytes, limit %d", n, hostileLimit)
			}
			var res struct {
				Content []struct {
					Type, Text string
				} `json:"content"`
				Structured json.RawMessage `json:"structuredContent"`
				IsError    bool            `json:"isError"`
				Meta       map[string]any  `json:"_meta"`
			}
			if err := json.Unmarshal(out.Result, &res); err != nil {
				t.Fatalf("the result is not JSON: %v (%d bytes)", err, len(out.Result))
			}
			if c.tool == "hostile__schema_big" {
				// Cut so that it still validates (and marked), or an error
				// saying why.
				if !res.IsError && res.Meta["quiver/truncated"] != true {
					t.Errorf(`_meta["quiver/truncated"] = %v, want true`, res.Meta["quiver/truncated"])
				}
				checkOutputSchema(t, r, res.IsError, res.Structured, res.Content)
				return
			}
			if res.Meta["quiver/truncated"] != true {
				t.Errorf(`_meta["quiver/truncated"] = %v, want true`, res.Meta["quiver/truncated"])
			}
			text := ""
			for _, part := range res.Content {
				if part.Type == "text" {
					text += part.Text
				}
			}
			original := strings.Repeat(c.text, len(text)/len(c.text)+2)
			kept := commonPrefix(text, original)
			t.Logf("%d bytes asked, %d received, %d of readable text kept", c.bytes, len(out.Result), kept)
			if want := hostileLimit / 8; kept < want {
				t.Errorf("kept %d bytes of readable text (want at least %d); text begins %.200q", kept, want, text)
			}
			if !utf8.ValidString(text) {
				t.Errorf("the cut text is not valid UTF-8")
			}
		})
	}
}

// checkOutputSchema: where a tool declares an outputSchema, a bounded
// result still validates, or is an error saying why.
func checkOutputSchema(t *testing.T, r *hostileRig, isError bool, structured json.RawMessage, content []struct{ Type, Text string }) {
	t.Helper()
	if isError {
		if len(content) == 0 || content[0].Text == "" {
			t.Errorf("a result cut to an error must say why")
		}
		return
	}
	r.rec.forget(string(mcp.MethodToolsList))
	if _, err := r.h.c.ListTools(r.h.ctx(), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Tools []struct {
			Name         string          `json:"name"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	json.Unmarshal(r.rec.answer(string(mcp.MethodToolsList)).Result, &list)
	var schema json.RawMessage
	for _, tool := range list.Tools {
		if tool.Name == "hostile__schema_big" {
			schema = tool.OutputSchema
		}
	}
	if len(schema) == 0 {
		// quiver's tools/list drops outputSchema today; the server declared
		// it, and that is what the cut result must still meet.
		t.Logf("quiver's tools/list has no outputSchema for hostile__schema_big; using the server's")
		schema = json.RawMessage(hostileserver.OutputSchema)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatalf("outputSchema %s: %v", schema, err)
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("out.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := comp.Compile("out.json")
	if err != nil {
		t.Fatalf("compile outputSchema: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(structured))
	if err != nil {
		t.Fatalf("structuredContent is not JSON (%d bytes): %v", len(structured), err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("the bounded structuredContent no longer validates against the tool's outputSchema: %v", err)
	}
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

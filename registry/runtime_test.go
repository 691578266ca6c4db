package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// exampleServer is a servers.yaml entry that runs this test binary as the
// example server with its test tools. env holds more entries of its env
// mapping in flow style ("A: x, B: y"); extra lines are indented under it.
func exampleServer(name, env string, extra ...string) string {
	if env != "" {
		env = ", " + env
	}
	s := fmt.Sprintf("  %s:\n    command: ${BIN}\n    env: {%s: \"1\"%s}\n", name, childEnv, env)
	for _, e := range extra {
		s += "    " + e + "\n"
	}
	return s
}

func TestStartReturnsBeforeServersAreUp(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	begin := time.Now()
	h := startRegistry(t, "servers:\n"+exampleServer("slow", childGateEnv+": \"${GATE}\""),
		map[string]string{"GATE": gate}, Options{})
	if d := time.Since(begin); d > 500*time.Millisecond {
		t.Errorf("Start took %s; it must return at once", d)
	}
	// The child waits for the gate file, so nothing can be up yet.
	select {
	case <-h.reg.Ready():
		t.Fatal("Ready closed while the only server is still starting")
	default:
	}
	cat := h.reg.Catalog()
	if st, _ := cat.Status("slow"); st.State != StateStarting || len(cat.Tools) != 0 {
		t.Fatalf("before the server is up: state %q, %d tools; want starting, none", st.State, len(cat.Tools))
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cat = h.ready()
	if st, _ := cat.Status("slow"); st.State != StateUp {
		t.Fatalf("after Ready: state %q (%s); want up", st.State, st.LastError)
	}
	if _, ok := cat.Lookup("slow__echo"); !ok {
		t.Fatalf("after Ready the catalog lacks slow__echo: %v", exposedNames(cat))
	}
	// OnChange saw the catalog of generation ReadyGen before Ready closed,
	// and it already shows the server up.
	i := slices.IndexFunc(h.seen(), func(c *Catalog) bool { return c.Gen == h.reg.ReadyGen() })
	if i < 0 {
		t.Fatalf("OnChange never saw the ReadyGen catalog %d", h.reg.ReadyGen())
	}
	if st, _ := h.seen()[i].Status("slow"); st.State != StateUp {
		t.Errorf("the ReadyGen catalog shows the server %q", st.State)
	}
	if cat.Gen < h.reg.ReadyGen() {
		t.Errorf("Catalog() after Ready is gen %d, older than ReadyGen %d", cat.Gen, h.reg.ReadyGen())
	}
}

// TestCloseEndsTheWaitForReady: a command waiting for Ready on a registry
// that is closed before its servers have tried to start is not left hanging.
func TestCloseEndsTheWaitForReady(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, "servers:\n"+exampleServer("slow", childGateEnv+": \"${GATE}\""),
		map[string]string{"GATE": filepath.Join(t.TempDir(), "never")}, Options{})
	h.reg.Close()
	select {
	case <-h.reg.Ready():
	case <-time.After(15 * time.Second):
		t.Fatal("Ready still open 15 s after Close")
	}
}

func exposedNames(c *Catalog) []string {
	var out []string
	for _, t := range c.Tools {
		out = append(out, t.Exposed)
	}
	return out
}

// rawToolsList starts the example server itself and returns its tools/list
// result as it came over the wire.
func rawToolsList(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	c, err := client.NewStdioMCPClient(os.Args[0], []string{childEnv + "=1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "registry-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("raw"), Method: "tools/list", Params: map[string]any{},
	})
	if err != nil || resp.Error != nil {
		t.Fatalf("raw tools/list: %v %v", err, resp)
	}
	var page struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(resp.Result, &page); err != nil {
		t.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for _, raw := range page.Tools {
		var head struct{ Name string }
		_ = json.Unmarshal(raw, &head)
		out[head.Name] = raw
	}
	return out
}

func TestCatalogKeepsWhatTheServerSent(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, "servers:\n"+exampleServer("ex", "", "keywords: [notes, clock]"), nil, Options{})
	cat := h.ready()
	wire := rawToolsList(t)
	if len(cat.Tools) != len(wire) || len(wire) == 0 {
		t.Fatalf("catalog has %v, the server lists %d tools", exposedNames(cat), len(wire))
	}
	for name, raw := range wire {
		tool, ok := cat.Lookup("ex__" + name)
		if !ok {
			t.Errorf("ex__%s missing from the catalog", name)
			continue
		}
		var sent struct {
			Title        string          `json:"title"`
			Description  string          `json:"description"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		}
		if err := json.Unmarshal(raw, &sent); err != nil {
			t.Fatal(err)
		}
		if string(tool.InputSchema) != string(sent.InputSchema) {
			t.Errorf("%s: schema changed on the way\n got %s\nwant %s", name, tool.InputSchema, sent.InputSchema)
		}
		if string(tool.OutputSchema) != string(sent.OutputSchema) {
			t.Errorf("%s: output schema changed\n got %s\nwant %s", name, tool.OutputSchema, sent.OutputSchema)
		}
		if tool.Description != sent.Description || tool.Title != sent.Title {
			t.Errorf("%s: title/description %q/%q, server sent %q/%q", name, tool.Title, tool.Description, sent.Title, sent.Description)
		}
		if tool.Server != "ex" || tool.Name != name || strings.Join(tool.Keywords, ",") != "notes,clock" {
			t.Errorf("%s: server %q name %q keywords %v", name, tool.Server, tool.Name, tool.Keywords)
		}
	}
	// The keywords mcp-go's typed view would drop are there.
	echo, _ := cat.Lookup("ex__echo")
	for _, kw := range []string{`"additionalProperties":true`, `"description":"Any JSON value`} {
		if !strings.Contains(string(echo.InputSchema), kw) {
			t.Errorf("echo schema lost %s: %s", kw, echo.InputSchema)
		}
	}
	if echo.Annotations.ReadOnlyHint == nil || !*echo.Annotations.ReadOnlyHint {
		t.Errorf("echo lost its readOnlyHint: %+v", echo.Annotations)
	}
	st, _ := cat.Status("ex")
	if st.State != StateUp || st.Tools != len(wire) || st.Transport != TransportStdio {
		t.Errorf("status %+v", st)
	}
}

func TestCallForwardsArgumentsByteForByte(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, "servers:\n"+exampleServer("ex", ""), nil, Options{})
	h.ready()
	for _, args := range []string{
		`{"value":12345678901234567890}`,
		`{"z":1,"a":[0.1000000000000000055511151231257827],"value":-98765432109876543210}`,
	} {
		got, err := h.call("ex__echo", args)
		if err != nil {
			t.Fatalf("echo %s: %v", args, err)
		}
		if got != args {
			t.Errorf("echo changed the arguments:\n got %s\nwant %s", got, args)
		}
	}
	if _, err := h.call("ex__nope", `{}`); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("unknown tool: err %v; want ErrUnknownTool", err)
	}
}

func TestServerThatCannotStartIsRetriedAndOthersWork(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-such-server")
	h := startRegistry(t, "servers:\n"+exampleServer("good", "")+"  bad:\n    command: "+missing+"\n  worse:\n    command: "+missing+"\n", nil,
		Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond})
	cat := h.ready()
	bad, _ := cat.Status("bad")
	if bad.State != StateDown || !strings.Contains(bad.LastError, "no-such-server") || !strings.Contains(bad.LastError, "no such file") {
		t.Errorf("bad server: state %q, last error %q; want down, naming the command and the cause", bad.State, bad.LastError)
	}
	if good, _ := cat.Status("good"); good.State != StateUp {
		t.Errorf("good server: state %q (%s); want up", good.State, good.LastError)
	}
	if _, err := h.call("good__echo", `{}`); err != nil {
		t.Errorf("a call to the good server failed: %v", err)
	}
	// Retried with backoff: steps of 10ms, 20ms, 40ms, then capped at
	// 40ms, each wait jittered into the upper half of its step. Two
	// servers that failed together do not retry in lockstep.
	steps := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 40 * time.Millisecond}
	waits := map[string][]time.Duration{}
	for _, name := range []string{"bad", "worse"} {
		eventually(t, 5*time.Second, "four retries of "+name, func() bool {
			return len(h.logs.find("retrying", "server", name)) >= len(steps)
		})
		for i, r := range h.logs.find("retrying", "server", name)[:len(steps)] {
			d, err := time.ParseDuration(r.Attrs["retry_in"])
			if err != nil || d < steps[i]/2 || d > steps[i] {
				t.Errorf("%s: retry %d waits %s; want %s to %s", name, i+1, r.Attrs["retry_in"], steps[i]/2, steps[i])
			}
			waits[name] = append(waits[name], d)
		}
	}
	if slices.Equal(waits["bad"], waits["worse"]) {
		t.Errorf("both servers retried after the same waits %v; want jitter", waits["bad"])
	}
	if st, _ := h.reg.Catalog().Status("bad"); st.State != StateDown {
		t.Errorf("bad server after retries: %q", st.State)
	}
}

func TestCrashedServerIsRestarted(t *testing.T) {
	t.Parallel()
	pids := t.TempDir()
	notes := filepath.Join(t.TempDir(), "notes.json")
	h := startRegistry(t, "servers:\n"+exampleServer("ex", childPidDirEnv+": \"${PIDS}\", "+childNotesEnv+": \"${NOTES}\""),
		map[string]string{"PIDS": pids, "NOTES": notes}, Options{})
	h.ready()
	first := pidsIn(t, pids)
	if _, err := h.call("ex__notes_add", `{"title":"before the crash","body":"kept in the notes file"}`); err != nil {
		t.Fatal(err)
	}
	_, err := h.call("ex__crash", `{}`)
	if !errors.Is(err, ErrServerDown) {
		t.Fatalf("crash: err %v; want one wrapping ErrServerDown", err)
	}
	if !strings.Contains(err.Error(), "ex") {
		t.Errorf("crash error %q does not name the server", err)
	}
	eventually(t, 10*time.Second, "the server up again after a restart", func() bool {
		st, _ := h.reg.Catalog().Status("ex")
		return st.State == StateUp && st.Restarts >= 1
	})
	if got, err := h.call("ex__echo", `{"value":1}`); err != nil || got != `{"value":1}` {
		t.Errorf("echo after the restart: %q, %v", got, err)
	}
	// The new process got the same configuration (env): it reads the
	// notes the old one wrote.
	if got, err := h.call("ex__notes_list", `{}`); err != nil || !strings.Contains(got, "before the crash") {
		t.Errorf("notes after the restart: %q, %v", got, err)
	}
	if now := pidsIn(t, pids); len(now) != len(first)+1 {
		t.Errorf("pids before %v, after %v; want one new process", first, now)
	}
	if len(h.logs.find("restarting", "server", "ex")) == 0 {
		t.Errorf("the restart was not logged:\n%s", h.logs)
	}
}

func TestDeadServerIsFoundByTheHealthCheck(t *testing.T) {
	t.Parallel()
	pids := t.TempDir()
	h := startRegistry(t, "servers:\n"+exampleServer("ex", childPidDirEnv+": \"${PIDS}\""),
		map[string]string{"PIDS": pids}, Options{HealthInterval: 20 * time.Millisecond})
	h.ready()
	first := pidsIn(t, pids)
	if len(first) != 1 {
		t.Fatalf("pids %v; want one child", first)
	}
	proc, err := os.FindProcess(first[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a restart after the child was killed", func() bool {
		st, _ := h.reg.Catalog().Status("ex")
		return st.State == StateUp && st.Restarts >= 1
	})
	if _, err := h.call("ex__echo", `{}`); err != nil {
		t.Errorf("echo after the restart: %v", err)
	}
}

func TestCallDeadline(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, "servers:\n"+exampleServer("ex", "", "timeout: 200ms"), nil, Options{})
	h.ready()
	begin := time.Now()
	_, err := h.call("ex__sleep", `{"ms":2000}`)
	took := time.Since(begin)
	if err == nil {
		t.Fatal("a 2 s sleep under a 200ms timeout succeeded")
	}
	if took > time.Second {
		t.Errorf("the call took %s; the deadline is 200ms", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "200ms") || !strings.Contains(err.Error(), "ex") {
		t.Errorf("err %q; want a deadline error naming the server and its 200ms timeout", err)
	}
	// A slow call is not a dead server.
	if got, err := h.call("ex__sleep", `{"ms":1}`); err != nil || got != "slept 1 ms" {
		t.Errorf("after the timeout: %q, %v", got, err)
	}
	if st, _ := h.reg.Catalog().Status("ex"); st.Restarts != 0 {
		t.Errorf("a timeout restarted the server (%d restarts)", st.Restarts)
	}
}

func TestSlowStartIsNotBoundByTheCallTimeout(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	h := startRegistry(t, "servers:\n"+exampleServer("ex", childGateEnv+": \"${GATE}\"", "timeout: 100ms"),
		map[string]string{"GATE": gate}, Options{})
	time.AfterFunc(400*time.Millisecond, func() { os.WriteFile(gate, nil, 0o644) })
	cat := h.ready()
	if st, _ := cat.Status("ex"); st.State != StateUp || st.Restarts != 0 {
		t.Errorf("a server that took 400ms to start under timeout: 100ms: %+v", st)
	}
}

func TestCloseStopsAndReapsEveryProcess(t *testing.T) {
	t.Parallel()
	needProc(t)
	pids := t.TempDir()
	h := startRegistry(t, "servers:\n"+
		exampleServer("a", childPidDirEnv+": \"${PIDS}\"")+
		exampleServer("b", childPidDirEnv+": \"${PIDS}\", "+childGrandchildEnv+": \"1\""),
		map[string]string{"PIDS": pids}, Options{})
	h.ready()
	// Two children and b's grandchild, which writes its pid on its own time.
	eventually(t, 5*time.Second, "three pid files", func() bool { return len(pidsIn(t, pids)) == 3 })
	all := pidsIn(t, pids)
	for _, pid := range all {
		if !running(pid) {
			t.Fatalf("pid %d is not running before Close", pid)
		}
	}
	begin := time.Now()
	if err := h.reg.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	t.Logf("Close took %s", time.Since(begin))
	eventually(t, 5*time.Second, "every process gone", func() bool {
		for _, pid := range all {
			if running(pid) {
				return false
			}
		}
		return true
	})
	// The children were stopped by closing their stdin, not killed: the
	// example server's clean stop wrote its marker.
	clean := 0
	for _, pid := range all {
		if _, err := os.Stat(filepath.Join(pids, fmt.Sprint(pid)+".clean")); err == nil {
			clean++
		}
	}
	if clean != 2 {
		t.Errorf("%d of the 2 children stopped cleanly; Close must close stdin before it kills", clean)
	}
	if _, err := h.call("a__echo", `{}`); !errors.Is(err, ErrServerDown) {
		t.Errorf("call after Close: %v; want ErrServerDown", err)
	}
}

func TestChildStderrIsLoggedWithTheServerName(t *testing.T) {
	t.Parallel()
	const token = "s3cr3t-t0ken-value"
	h := startRegistry(t, "servers:\n"+exampleServer("talky",
		childStderrEnv+": \"hello from the child; token=${TOKEN}\""),
		map[string]string{"TOKEN": token}, Options{})
	h.ready()
	eventually(t, 5*time.Second, "the child's stderr line in the log", func() bool {
		return len(h.logs.find("hello from the child", "server", "talky")) > 0
	})
	line := h.logs.find("hello from the child", "server", "talky")[0].Msg
	if strings.Contains(h.logs.String(), token) {
		t.Errorf("the secret reached the log:\n%s", h.logs)
	}
	if !strings.Contains(line, "token=[redacted:TOKEN]") {
		t.Errorf("stderr line %q; want the token redacted as [redacted:TOKEN]", line)
	}
}

// TestChildsLastWordsAreLogged: a server that dies printing an error with
// no newline after it still gets that error into the log.
func TestChildsLastWordsAreLogged(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, fmt.Sprintf("servers:\n  dying:\n    command: ${BIN}\n    env: {%s: dying, %s: \"Error: GITLAB_TOKEN is not set\"}\n",
		childEnv, childStderrEnv), nil, Options{MinBackoff: time.Minute, MaxBackoff: time.Minute})
	h.ready()
	eventually(t, 10*time.Second, "the child's last line in the log", func() bool {
		return len(h.logs.find("stderr: Error: GITLAB_TOKEN is not set", "server", "dying")) > 0
	})
}

func listChangedServer(name, delay string) string {
	return fmt.Sprintf("  %s:\n    command: ${BIN}\n    env: {%s: listchanged, %s: %q}\n", name, childEnv, childDelayEnv, delay)
}

func TestDownstreamListChangedRelists(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, "servers:\n"+listChangedServer("lc", "300ms"), nil, Options{})
	h.ready()
	// The catalog OnChange got at Ready was built right after the first
	// list; the server adds its second tool 300 ms after that list.
	seen := h.seen()
	i := slices.IndexFunc(seen, func(c *Catalog) bool { return c.Gen == h.reg.ReadyGen() })
	if i < 0 {
		t.Fatalf("OnChange never saw the ReadyGen catalog")
	}
	if _, ok := seen[i].Lookup("lc__first"); !ok {
		t.Fatalf("ready catalog: %v", exposedNames(seen[i]))
	}
	if _, ok := seen[i].Lookup("lc__second"); ok {
		t.Fatalf("lc__second is there before the server added it: %v", exposedNames(seen[i]))
	}
	var got Tool
	eventually(t, 10*time.Second, "OnChange with lc__second", func() bool {
		for _, c := range h.seen() {
			if tool, ok := c.Lookup("lc__second"); ok {
				got = tool
				return true
			}
		}
		return false
	})
	if string(got.InputSchema) != `{"type":"object","description":"late"}` {
		t.Errorf("lc__second schema %s", got.InputSchema)
	}
	if _, ok := h.reg.Catalog().Lookup("lc__second"); !ok {
		t.Errorf("Catalog() lacks lc__second")
	}
	if out, err := h.call("lc__second", `{}`); err != nil || out != "second" {
		t.Errorf("call lc__second: %q %v", out, err)
	}
}

// A flood of list_changed is coalesced: one re-list at a time, and one
// more if any came meanwhile (red team: 60,000 made 11,396 re-lists).
func TestListChangedFloodIsCoalesced(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, "servers:\n  lf:\n    command: ${BIN}\n    env: {"+childEnv+": listflood}\n", nil, Options{})
	h.ready()
	time.Sleep(2 * time.Second) // the flood has been sent and handled
	out, err := h.call("lf__lists", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(out)
	if n < 2 || n > 100 {
		t.Fatalf("2,000 list_changed made %d tools/list (want a few: coalesced, and at least one re-list)", n)
	}
	t.Logf("2,000 list_changed made %d tools/list", n)
}

// A server that changes its tools while quiver is still listing them must
// not lose the change.
func TestListChangedDuringTheFirstListIsNotLost(t *testing.T) {
	t.Parallel()
	var cfg strings.Builder
	cfg.WriteString("servers:\n")
	for i := range 4 {
		cfg.WriteString(listChangedServer(fmt.Sprintf("lc%d", i), "0s"))
	}
	h := startRegistry(t, cfg.String(), nil, Options{})
	h.ready()
	eventually(t, 10*time.Second, "every server's second tool", func() bool {
		cat := h.reg.Catalog()
		for i := range 4 {
			if _, ok := cat.Lookup(fmt.Sprintf("lc%d__second", i)); !ok {
				return false
			}
		}
		return true
	})
}

// TestCollidingServersAreReportedNotOverwritten: two servers whose tools
// become the same names offer none of those names, whichever started
// first, and each collision is a problem naming both.
func TestCollidingServersAreReportedNotOverwritten(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, "servers:\n"+exampleServer("a", "", `prefix: ""`)+exampleServer("b", "", `prefix: ""`), nil, Options{})
	h.ready()
	eventually(t, 10*time.Second, "both servers up", func() bool {
		a, _ := h.reg.Catalog().Status("a")
		b, _ := h.reg.Catalog().Status("b")
		return a.State == StateUp && b.State == StateUp
	})
	cat := h.reg.Catalog()
	a, _ := cat.Status("a")
	if len(cat.Tools) != 0 || len(cat.Problems) != a.Tools {
		t.Fatalf("%d tools and %d problems; want none offered and one problem for each of a's %d tools", len(cat.Tools), len(cat.Problems), a.Tools)
	}
	if p := cat.Problems[0]; !strings.Contains(p, `server "a"`) || !strings.Contains(p, `server "b"`) || !strings.Contains(p, "another prefix") {
		t.Errorf("problem %q", p)
	}
	eventually(t, 5*time.Second, "the problems logged", func() bool {
		return len(h.logs.find("catalog: ")) == len(cat.Problems)
	})
}

func TestCallerDeadlineIsNotBlamedOnTheServerTimeout(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, "servers:\n"+exampleServer("ex", "", "timeout: 30s"), nil, Options{})
	h.ready()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := h.reg.Call(ctx, "ex__sleep", []byte(`{"ms":2000}`), nil)
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "30s") {
		t.Errorf("err %v; want the caller's deadline, not the server's 30s timeout", err)
	}
}

func TestQuiverCommandRunsTheExecutableWithStateDir(t *testing.T) {
	t.Parallel()
	needProc(t)
	pids, state := t.TempDir(), t.TempDir()
	h := startRegistry(t, "servers:\n  q:\n    command: quiver\n    cwd: ${CWD}\n    env: {"+childEnv+": \"1\", "+childPidDirEnv+": \"${PIDS}\", EXTRA: \"x y\"}\n",
		map[string]string{"PIDS": pids, "CWD": state}, Options{Executable: os.Args[0], StateDir: state})
	cat := h.ready()
	if st, _ := cat.Status("q"); st.State != StateUp {
		t.Fatalf("command quiver with Executable set: %+v", st)
	}
	all := pidsIn(t, pids)
	if len(all) != 1 {
		t.Fatalf("pids %v", all)
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", all[0]))
	if err != nil {
		t.Fatalf("the child's environment: %v", err)
	}
	env := strings.Split(string(environ), "\x00")
	for _, want := range []string{"QUIVER_STATE_DIR=" + state, "EXTRA=x y", childEnv + "=1"} {
		if !slices.Contains(env, want) {
			t.Errorf("the child's environment lacks %q", want)
		}
	}
	want, _ := filepath.EvalSymlinks(state)
	if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", all[0])); err != nil || cwd != want {
		t.Errorf("the child runs in %q (%v); want cwd %q", cwd, err, want)
	}
}

// TestURLServerErrorsHideItsKey: a remote server that cannot be reached
// reports an error quoting its url; the key in it is redacted in the
// status doctor shows and in the log.
func TestURLServerErrorsHideItsKey(t *testing.T) {
	t.Parallel()
	const key = "topsecretkey12345"
	h := startRegistry(t, "servers:\n  remote:\n    url: http://127.0.0.1:1/mcp?key=${K}\n",
		map[string]string{"K": key}, Options{MinBackoff: time.Minute, MaxBackoff: time.Minute})
	cat := h.ready()
	st, _ := cat.Status("remote")
	if st.State != StateDown || !strings.Contains(st.LastError, "key=[redacted:K]") {
		t.Errorf("status %s, last error %q; want down, the key redacted", st.State, st.LastError)
	}
	if strings.Contains(st.LastError, key) || strings.Contains(h.logs.String(), key) {
		t.Errorf("the key is in the status or the log:\n%s\n%s", st.LastError, h.logs)
	}
}

// TestTypoInAlwaysOnIsAProblem: a tool name in always_on or a slash
// command that its server, once up, does not offer is reported with the
// name it probably meant, not silently dropped.
func TestTypoInAlwaysOnIsAProblem(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, "surface:\n  always_on: [a__echo, a__ecko]\nslash:\n  r:\n    description: R.\n    tools: [a__slep]\nservers:\n"+exampleServer("a", ""), nil, Options{})
	cat := h.ready()
	want := []string{
		`surface.always_on names a__ecko, but server "a" offers no such tool; did you mean a__echo?`,
		`slash.r.tools names a__slep, but server "a" offers no such tool; did you mean a__sleep?`,
	}
	if !reflect.DeepEqual(cat.Problems, want) {
		t.Fatalf("problems = %q\nwant %q", cat.Problems, want)
	}
}

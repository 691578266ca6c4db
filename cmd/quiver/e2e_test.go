package main

import (
	"context"
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

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// The end-to-end tests build quiver once and drive the real binary over
// stdio (and HTTP) with mcp-go's client, in front of real downstream
// servers: quiver's example server and, where Node.js is installed, the
// published @modelcontextprotocol/server-filesystem.

var quiverBin string

// builtins are quiver's own tools, first on every surface (reveal: auto).
var builtins = []string{"search_tools", "call_tool", "read_file", "request_capability"}

func TestMain(m *testing.M) {
	if os.Getenv(relayEnv) != "" {
		os.Exit(relay(os.Args[1:]))
	}
	dir, err := os.MkdirTemp("", "quiver-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	quiverBin = filepath.Join(dir, "quiver")
	tags := "" // bench_test.go: profileEnv
	if os.Getenv("QUIVER_BENCH_PROFILE") != "" {
		tags = "benchprofile"
	}
	build := exec.Command("go", "build", "-tags", tags, "-o", quiverBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build quiver:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// builtServer returns the path of the test server whose command is pkg,
// built on first use, once per test run, beside the quiver binary
// (TestMain removes that folder).
func builtServer(name, pkg string) func(testing.TB) string {
	build := sync.OnceValues(func() (string, error) {
		bin := filepath.Join(filepath.Dir(quiverBin), name)
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			return "", fmt.Errorf("build the %s server: %w\n%s", name, err, out)
		}
		return bin, nil
	})
	return func(t testing.TB) string {
		t.Helper()
		bin, err := build()
		if err != nil {
			t.Fatal(err)
		}
		return bin
	}
}

// needTool skips when a program the test needs is missing, except in CI,
// where a missing install step must fail loudly.
func needTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed; .ci/run must install it", name)
		}
		t.Skipf("%s is not installed; skipping (CI installs it)", name)
	}
	return p
}

// filesystemServerVersion is the pinned third-party server the tests use.
const filesystemServerVersion = "2026.8.31"

var npmOnce sync.Mutex

// filesystemServer installs @modelcontextprotocol/server-filesystem (once
// per machine, in the user cache) and returns its entry script.
func filesystemServer(t testing.TB) string {
	return npmServer(t, "server-filesystem", filesystemServerVersion)
}

// npmServer installs @modelcontextprotocol/NAME@version once per machine,
// in the user cache, and returns its entry script. A missing node or npm
// skips the test locally and fails it in CI.
func npmServer(t testing.TB, name, version string) string {
	t.Helper()
	needTool(t, "node")
	npm := needTool(t, "npm")
	npmOnce.Lock()
	defer npmOnce.Unlock()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	prefix := filepath.Join(cache, "quiver-test-npm", name+"@"+version)
	script := filepath.Join(prefix, "node_modules", "@modelcontextprotocol", name, "dist", "index.js")
	if _, err := os.Stat(script); err == nil {
		return script
	}
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--prefix", prefix, "@modelcontextprotocol/"+name+"@"+version)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s@%s: %v\n%s", name, version, err, out)
	}
	return script
}

// A host is a connected MCP client with what it has been told.
type host struct {
	t       testing.TB
	c       *client.Client
	changed chan struct{}
	turn    int
}

type hostOptions struct {
	modern bool // let the client negotiate 2026-07-28
	args   []string
	env    []string // added to quiver's environment
	// client adds options to the host's client (sampling, elicitation and
	// roots handlers); notify sees every notification quiver sends it;
	// stderr also receives quiver's log.
	client []client.ClientOption
	notify func(mcp.JSONRPCNotification)
	stderr io.Writer
}

// startQuiver writes cfg to a servers.yaml and connects a host to
// "quiver serve" over stdio.
func startQuiver(t testing.TB, cfg string, o hostOptions) *host {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "servers.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--config", path, "--state-dir", filepath.Join(dir, "state"), "--log-level", "warn"}, o.args...)
	var stderr io.Writer = testWriter{t}
	if o.stderr != nil {
		stderr = io.MultiWriter(stderr, o.stderr)
	}
	tr := transport.NewStdioWithOptions(quiverBin, o.env, args, transport.WithCommandStderrWriter(stderr))
	opts := append([]client.ClientOption(nil), o.client...)
	if !o.modern {
		opts = append(opts, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	c := client.NewClient(tr, opts...)
	h := &host{t: t, c: c, changed: make(chan struct{}, 16)}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start quiver: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			h.changed <- struct{}{}
		}
		if o.notify != nil {
			o.notify(n)
		}
	})
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	if !o.modern {
		init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	}
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(ictx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return h
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("quiver: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (h *host) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

// list returns the tool names of tools/list and the raw JSON of the answer.
func (h *host) list() ([]string, []byte) {
	h.t.Helper()
	res, err := h.c.ListTools(h.ctx(), mcp.ListToolsRequest{})
	if err != nil {
		h.t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	raw, _ := json.Marshal(res.Tools)
	return names, raw
}

// call runs tools/call in the current turn.
func (h *host) call(name string, args any) *mcp.CallToolResult {
	h.t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	switch a := args.(type) {
	case string:
		req.Params.RawArguments = json.RawMessage(a)
	default:
		req.Params.Arguments = a
	}
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"quiver/turn": h.turn}}
	res, err := h.c.CallTool(h.ctx(), req)
	if err != nil {
		h.t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

func (h *host) search(query string) *mcp.CallToolResult {
	return h.call("search_tools", map[string]any{"query": query})
}

// waitChanged waits for one notifications/tools/list_changed.
func (h *host) waitChanged() {
	h.t.Helper()
	select {
	case <-h.changed:
	case <-time.After(5 * time.Second):
		h.t.Fatal("no notifications/tools/list_changed within 5s")
	}
}

// drain forgets the list_changed notifications received so far.
func (h *host) drain() {
	for {
		select {
		case <-h.changed:
		default:
			return
		}
	}
}

// noChange checks that no list_changed arrives for a moment.
func (h *host) noChange() {
	h.t.Helper()
	select {
	case <-h.changed:
		h.t.Fatal("unexpected notifications/tools/list_changed")
	case <-time.After(300 * time.Millisecond):
	}
}

// waitTools polls tools/list until every name is in it.
func (h *host) waitTools(names ...string) []string {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, _ := h.list()
		if containsAll(got, names) {
			return got
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("tools/list = %v, want it to include %v", got, names)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// exampleConfig fronts the example server (with its test tools).
func exampleConfig(reveal string, extra string) string {
	return fmt.Sprintf(`
surface:
  reveal: %s
  always_on: [example__current_time]
servers:
  example:
    command: quiver
    args: [example-server, --test-tools]
    keywords: [notes, memo]
%s`, reveal, extra)
}

// searchUntil searches until the hit appears: servers join in the
// background, so the first search may come before the example server is up.
func (h *host) searchUntil(query, want string) *mcp.CallToolResult {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		res := h.search(query)
		if strings.Contains(toolresult.Text(res), want) {
			return res
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("search %q never found %s; last answer:\n%s", query, want, toolresult.Text(res))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func wantRefusal(t testing.TB, res *mcp.CallToolResult, code string) {
	t.Helper()
	if !res.IsError || !strings.Contains(toolresult.Text(res), code) {
		t.Fatalf("want a refusal %s, got isError=%v: %s", code, res.IsError, toolresult.Text(res))
	}
}

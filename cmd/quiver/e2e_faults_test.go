package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
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

func TestServerDownAtStart(t *testing.T) {
	h := startQuiver(t, exampleConfig("auto", `
  broken:
    command: /nonexistent/mcp-server
`), hostOptions{})
	h.waitTools("example__current_time")
	res := h.searchUntil("take a note", "example__notes_add")
	if res.IsError {
		t.Fatalf("a broken server must not break search: %s", toolresult.Text(res))
	}
	if got := h.call("example__notes_list", map[string]any{}); got.IsError {
		t.Fatalf("the working server must keep working: %s", toolresult.Text(got))
	}
}

func TestDoctorReportsADownServer(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.yaml")
	os.WriteFile(cfg, []byte(exampleConfig("auto", "  broken:\n    command: /nonexistent/mcp-server\n")), 0o600)
	out, err := exec.Command(quiverBin, "doctor", "--config", cfg, "--state-dir", dir, "--wait", "10s").CombinedOutput()
	if code := exitCode(err); code != exitFailure {
		t.Fatalf("doctor with a down server: exit %d, want %d\n%s", code, exitFailure, out)
	}
	for _, want := range []string{"example  stdio      up", "broken", "down", "/nonexistent/mcp-server", "surface: 5 tools"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	// doctor --json says the same to a script, with the same exit (issue 29).
	out, err = exec.Command(quiverBin, "doctor", "--config", cfg, "--state-dir", dir, "--wait", "10s", "--json").Output()
	var got doctorJSON
	if code := exitCode(err); code != exitFailure || json.Unmarshal(out, &got) != nil {
		t.Fatalf("doctor --json with a down server: exit %d, want %d\n%s", code, exitFailure, out)
	}
	states := map[string]string{}
	for _, s := range got.Servers {
		states[s.Name] = s.State
		if s.Name == "broken" && !strings.Contains(s.LastError, "/nonexistent/mcp-server") {
			t.Errorf("doctor --json: the down server's last_error is %q", s.LastError)
		}
	}
	if got.OK || states["example"] != "up" || states["broken"] != "down" || got.Surface.LeanTools != 5 || got.Surface.AllTools == 0 {
		t.Errorf("doctor --json:\n%s", out)
	}
}

// TestDoctorReportsAMisspeltTool: a name in always_on that the server,
// up, does not offer is a problem doctor prints, with the name meant, and
// fails on.
func TestDoctorReportsAMisspeltTool(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.yaml")
	text := strings.Replace(exampleConfig("auto", ""), "[example__current_time]", "[example__curent_time]", 1)
	os.WriteFile(cfg, []byte(text), 0o600)
	out, err := exec.Command(quiverBin, "doctor", "--config", cfg, "--state-dir", dir, "--wait", "10s").CombinedOutput()
	if code := exitCode(err); code != exitFailure {
		t.Fatalf("doctor with a misspelt always_on tool: exit %d, want %d\n%s", code, exitFailure, out)
	}
	want := `problem: surface.always_on names example__curent_time, but server "example" offers no such tool; did you mean example__current_time?`
	if !strings.Contains(string(out), want) {
		t.Errorf("doctor output lacks %q:\n%s", want, out)
	}
}

func TestConfigTypoIsAClearError(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.yaml")
	os.WriteFile(cfg, []byte("servers:\n  example:\n    comand: quiver\n"), 0o600)
	out, err := exec.Command(quiverBin, "serve", "--config", cfg, "--state-dir", dir).CombinedOutput()
	if code := exitCode(err); code != exitFailure {
		t.Fatalf("serve with a typo: exit %d, want 1\n%s", code, out)
	}
	if !strings.Contains(string(out), `servers.yaml:3: unknown key "comand"`) {
		t.Fatalf("the error must name the file, line and key:\n%s", out)
	}
	out, err = exec.Command(quiverBin, "serve", "--bogus").CombinedOutput()
	if code := exitCode(err); code != exitUsage {
		t.Fatalf("unknown flag: exit %d, want 2\n%s", code, out)
	}
}

// TestStrayArgumentsAreUsageErrors: a word a command does not take, or a
// flag value out of range, exits 2 with the usage, instead of being
// ignored or failing as if the world were wrong.
func TestStrayArgumentsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"doctor", "extra"}, {"version", "x"}, {"config", "effective", "extra"}, {"tools", "list", "extra"},
		{"audit", "extra"}, {"grants", "extra"}, {"tokens", "extra"},
		{"search", "--kind", "bogus", "notes"}, {"search", "--limit", "50", "notes"},
	} {
		out, err := exec.Command(quiverBin, args...).CombinedOutput()
		if code := exitCode(err); code != exitUsage || !strings.Contains(string(out), "usage: quiver "+args[0]) {
			t.Errorf("quiver %s: exit %d, want %d with the usage\n%s", strings.Join(args, " "), code, exitUsage, out)
		}
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

func TestDownstreamDiesMidCall(t *testing.T) {
	// crash is destructive; let it run without an approval here.
	h := startQuiver(t, exampleConfig("direct", "policy:\n  defaults: {destructive: allow}\n"), hostOptions{})
	h.waitTools("example__crash")
	res := h.call("example__crash", map[string]any{})
	wantRefusal(t, res, "error.server_down")
	if !strings.Contains(toolresult.Text(res), "example") {
		t.Fatalf("the error should name the server: %s", toolresult.Text(res))
	}
	// quiver lives on, and the server comes back.
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := h.call("example__echo", map[string]any{"value": 1})
		if !got.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the example server was not restarted: %s", toolresult.Text(got))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestMalformedJSONRPCKeepsTheSession(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.yaml")
	os.WriteFile(cfg, []byte(exampleConfig("auto", "")), 0o600)
	cmd := exec.Command(quiverBin, "serve", "--config", cfg, "--state-dir", dir, "--log-level", "error")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	r := bufio.NewReader(stdout)
	send := func(line string) map[string]any {
		t.Helper()
		io.WriteString(stdin, line+"\n")
		for {
			l, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("quiver closed stdout after %q: %v", line, err)
			}
			var m map[string]any
			if err := json.Unmarshal(l, &m); err != nil {
				t.Fatalf("quiver wrote a non-JSON line: %q", l)
			}
			if _, isNote := m["method"]; !isNote {
				return m
			}
		}
	}
	bad := send(`{"jsonrpc":"2.0","id":1,"method":`)
	if e, _ := bad["error"].(map[string]any); e == nil || e["code"] != float64(-32700) {
		t.Fatalf("malformed JSON: want a -32700 parse error, got %v", bad)
	}
	init := send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if init["result"] == nil {
		t.Fatalf("initialize after garbage: %v", init)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	// An unknown tool is answered as call_tool answers it: a refusal the
	// model reads, with the closest names, not mcp-go's -32602 (issue 29).
	unknown := send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`)
	if r, _ := unknown["result"].(map[string]any); r == nil || r["isError"] != true ||
		!strings.Contains(fmt.Sprint(r["content"]), `deny.unknown_tool: There is no tool named "no_such_tool".`) {
		t.Fatalf("unknown tool: want the refusal deny.unknown_tool naming it, got %v", unknown)
	}
	list := send(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	if list["result"] == nil {
		t.Fatalf("tools/list after the faults: %v", list)
	}
}

// TestAnswersBeforeSlowServers checks the promise, not the figure (the
// figure is BenchmarkColdStart): initialize and tools/list are answered
// while a downstream server is still starting.
func TestAnswersBeforeSlowServers(t *testing.T) {
	cfg := `
servers:
  slow:
    command: quiver
    args: [example-server, --start-delay, 5s]
`
	start := time.Now()
	h := startQuiver(t, cfg, hostOptions{})
	names, _ := h.list()
	if elapsed := time.Since(start); elapsed > 4*time.Second {
		t.Fatalf("initialize + tools/list took %v: quiver waited for the slow server", elapsed)
	}
	if !slices.Equal(names, builtins) {
		t.Fatalf("tools/list before servers are up = %v", names)
	}
}

func TestHTTPSessionsAreIsolated(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.yaml")
	os.WriteFile(cfg, []byte(exampleConfig("auto", slashConfig)), 0o600)
	addr := freeAddr(t)
	cmd := exec.Command(quiverBin, "serve", "--http", addr, "--config", cfg, "--state-dir", dir, "--log-level", "info")
	var logs syncBuffer
	cmd.Stderr = io.MultiWriter(testWriter{t}, &logs)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	url := "http://" + addr + "/mcp"
	a, b := httpHost(t, url), httpHost(t, url)
	a.waitTools("example__current_time")
	b.waitTools("example__current_time")
	a.drain()
	b.drain()
	a.searchUntil("take a note", "example__notes_add")
	a.waitChanged()
	b.noChange()
	if names, _ := b.list(); slices.Contains(names, "example__notes_add") {
		t.Fatalf("a search in one session bound tools in another: %v", names)
	}
	wantRefusal(t, b.call("example__notes_add", map[string]any{"title": "x", "body": "y"}), "deny.not_bound")
	if res := a.call("example__notes_list", map[string]any{}); res.IsError {
		t.Fatalf("session a: %s", toolresult.Text(res))
	}
	// A slash command in a forces nothing in b.
	// (a's list may not change: its search had bound notes_add already.)
	a.prompt("jot", nil)
	b.noChange()
	wantRefusal(t, b.call("example__notes_add", map[string]any{"title": "x", "body": "y"}), "deny.not_bound")
	// The user sees each session's surface change, with its id.
	sid := a.c.GetSessionId()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "surface: bound ") || !strings.Contains(logs.String(), "session="+sid) {
		if time.Now().After(deadline) {
			t.Fatalf("no surface log line for session %s:\n%s", sid, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "1 forced") {
		t.Errorf("the slash command's forced tool is not in the surface log:\n%s", logs.String())
	}
	// DNS-rebinding protection: a foreign Host header over loopback is refused.
	if code := statusWithHost(t, url, "evil.example.com"); code != http.StatusForbidden {
		t.Fatalf("a request with Host evil.example.com got %d, want 403", code)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func statusWithHost(t *testing.T, url, host string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func httpHost(t *testing.T, url string) *host {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp"))
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("quiver --http never listened: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	//lint:ignore SA1019 the standalone GET stream is what a 2025-11-25 host opens; this test is such a host
	tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	h := &host{t: t, c: c, changed: make(chan struct{}, 16)}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			h.changed <- struct{}{}
		}
	})
	h.startHTTP(t)
	return h
}

// startHTTP starts h's client over HTTP and initializes it on 2025-11-25.
func (h *host) startHTTP(t *testing.T) {
	t.Helper()
	if err := h.c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e-http", Version: "1"}
	if _, err := h.c.Initialize(h.ctx(), init); err != nil {
		t.Fatalf("initialize over HTTP: %v", err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestOneBadServerLeavesTheRestUp is issue 17's problems 3 and 4 as a
// person meets them: a server whose ${VAR} is unset and one whose child
// dies printing npm's E404 are down, each with its reason, in doctor and
// in tools list, while the example server starts and lists its tools.
func TestOneBadServerLeavesTheRestUp(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.yaml")
	os.WriteFile(cfg, []byte(exampleConfig("auto", `
  github:
    command: npx
    args: [-y, "@modelcontextprotocol/server-github"]
    env: {GITHUB_PERSONAL_ACCESS_TOKEN: "${QUIVER_TEST_UNSET_TOKEN}"}
  nopkg:
    command: sh
    args: [-c, "echo 'npm error code E404' >&2; echo 'npm error 404 Not Found - GET https://registry.npmjs.org/@nobody%2fno-such-server' >&2; exit 1"]
`)), 0o600)
	out, err := exec.Command(quiverBin, "doctor", "--config", cfg, "--state-dir", dir, "--wait", "10s").CombinedOutput()
	if code := exitCode(err); code != exitFailure {
		t.Fatalf("doctor: exit %d, want %d\n%s", code, exitFailure, out)
	}
	for _, want := range []string{"example  stdio      up", "servers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN",
		"QUIVER_TEST_UNSET_TOKEN is not set", "npm error code E404", "404 Not Found"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	cmd := exec.Command(quiverBin, "tools", "list", "--config", cfg, "--state-dir", dir, "--wait", "10s")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tools list: %v\n%s%s", err, &stdout, &stderr)
	}
	if !strings.Contains(stdout.String(), "example__notes_add") {
		t.Errorf("tools list lacks the example server's tools:\n%s", &stdout)
	}
	for _, want := range []string{"server github is down: ", "GITHUB_PERSONAL_ACCESS_TOKEN", "server nopkg is down: ", "E404"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("tools list's stderr lacks %q:\n%s", want, &stderr)
		}
	}
}

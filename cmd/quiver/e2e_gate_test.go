package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// cardAnswerer plays the person in front of the host: it answers approval
// cards with a fixed decision, or never ("" waits until the card times out).
type cardAnswerer struct {
	decision string
	shown    atomic.Int32
	message  atomic.Value
}

func (a *cardAnswerer) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.shown.Add(1)
	a.message.Store(req.Params.Message)
	switch a.decision {
	case "":
		<-ctx.Done()
		return nil, ctx.Err()
	case "decline":
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
	case "cancel":
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionCancel}}, nil
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": a.decision}}}, nil
}

// startWithCards connects a host that can show approval cards.
func startWithCards(t *testing.T, cfg string, a *cardAnswerer) (*host, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "servers.yaml")
	os.WriteFile(path, []byte(cfg), 0o600)
	state := filepath.Join(dir, "state")
	tr := transport.NewStdioWithOptions(quiverBin, nil, []string{"serve", "--config", path, "--state-dir", state, "--log-level", "warn"},
		transport.WithCommandStderrWriter(testWriter{t}))
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION), client.WithElicitationHandler(a))
	h := &host{t: t, c: c, changed: make(chan struct{}, 16)}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e-cards", Version: "1"}
	if _, err := c.Initialize(h.ctx(), init); err != nil {
		t.Fatal(err)
	}
	return h, state
}

// notesConfig lists every example tool; notes_delete is destructive, so the
// default policy asks before it runs.
const notesConfig = `
surface:
  reveal: direct
policy:
  approval_timeout: 1s
servers:
  example:
    command: quiver
    args: [example-server, --test-tools]
`

func addNote(t *testing.T, h *host, title string) string {
	t.Helper()
	res := h.call("example__notes_add", map[string]any{"title": title, "body": "b"})
	if res.IsError {
		t.Fatalf("notes_add: %s", toolresult.Text(res))
	}
	id := regexp.MustCompile(`n\d+`).FindString(toolresult.Text(res))
	if id == "" {
		t.Fatalf("no note id in %q", toolresult.Text(res))
	}
	return id
}

func TestApprovalCards(t *testing.T) {
	t.Run("allow_once_runs_this_call_only", func(t *testing.T) {
		a := &cardAnswerer{decision: "allow_once"}
		h, _ := startWithCards(t, notesConfig, a)
		h.waitTools("example__notes_delete")
		first, second := addNote(t, h, "one"), addNote(t, h, "two")
		if res := h.call("example__notes_delete", map[string]any{"id": first}); res.IsError {
			t.Fatalf("approved once, still refused: %s", toolresult.Text(res))
		}
		msg, _ := a.message.Load().(string)
		if !strings.Contains(msg, "example__notes_delete") || !strings.Contains(msg, "destructive") {
			t.Errorf("the card must name the tool and the capability: %q", msg)
		}
		if res := h.call("example__notes_delete", map[string]any{"id": second}); res.IsError {
			t.Fatalf("second delete: %s", toolresult.Text(res))
		}
		if n := a.shown.Load(); n != 2 {
			t.Fatalf("allow once must ask again for another call: %d cards, want 2", n)
		}
	})
	t.Run("allow_session_asks_once", func(t *testing.T) {
		a := &cardAnswerer{decision: "allow_session"}
		h, _ := startWithCards(t, notesConfig, a)
		h.waitTools("example__notes_delete")
		for _, title := range []string{"a", "b", "c"} {
			if res := h.call("example__notes_delete", map[string]any{"id": addNote(t, h, title)}); res.IsError {
				t.Fatalf("delete after a session grant: %s", toolresult.Text(res))
			}
		}
		if n := a.shown.Load(); n != 1 {
			t.Fatalf("allow for the session must ask once: %d cards", n)
		}
	})
	t.Run("decline_grants_nothing", func(t *testing.T) {
		h, _ := startWithCards(t, notesConfig, &cardAnswerer{decision: "decline"})
		h.waitTools("example__notes_delete")
		id := addNote(t, h, "keep me")
		wantRefusal(t, h.call("example__notes_delete", map[string]any{"id": id}), "deny.approval_denied")
		if got := h.call("example__notes_read", map[string]any{"id": id}); got.IsError {
			t.Fatalf("a declined delete must not have run: %s", toolresult.Text(got))
		}
	})
	t.Run("closing_the_card_asks_again", func(t *testing.T) {
		a := &cardAnswerer{decision: "cancel"}
		h, _ := startWithCards(t, notesConfig, a)
		h.waitTools("example__notes_delete")
		args := map[string]any{"id": addNote(t, h, "x")}
		wantRefusal(t, h.call("example__notes_delete", args), "deny.approval_denied")
		// Not a final no: the same call shows the card again.
		wantRefusal(t, h.call("example__notes_delete", args), "deny.approval_denied")
		if n := a.shown.Load(); n != 2 {
			t.Fatalf("a closed card must be shown again: %d cards", n)
		}
	})
	t.Run("deny_choice_grants_nothing", func(t *testing.T) {
		h, _ := startWithCards(t, notesConfig, &cardAnswerer{decision: "deny"})
		h.waitTools("example__notes_delete")
		wantRefusal(t, h.call("example__notes_delete", map[string]any{"id": addNote(t, h, "x")}), "deny.approval_denied")
	})
	t.Run("no_answer_times_out", func(t *testing.T) {
		h, _ := startWithCards(t, notesConfig, &cardAnswerer{})
		h.waitTools("example__notes_delete")
		args := map[string]any{"id": addNote(t, h, "x")}
		wantRefusal(t, h.call("example__notes_delete", args), "deny.approval_timeout")
		// Nobody declined: the same call asks again, it is not "declined".
		wantRefusal(t, h.call("example__notes_delete", args), "deny.approval_timeout")
	})
}

func TestApproveFromATerminal(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	h := startQuiver(t, notesConfig, hostOptions{args: []string{"--state-dir", state}})
	h.waitTools("example__notes_delete")
	id := addNote(t, h, "old")
	res := h.call("example__notes_delete", map[string]any{"id": id})
	wantRefusal(t, res, "deny.approval_unavailable")
	n := regexp.MustCompile("quiver approve (\\d+)`").FindStringSubmatch(toolresult.Text(res))
	if n == nil {
		t.Fatalf("the refusal must say which request to approve: %s", toolresult.Text(res))
	}
	out, err := exec.Command(quiverBin, "grants", "--pending", "--state-dir", state).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "example__notes_delete") {
		t.Fatalf("quiver grants --pending: %v\n%s", err, out)
	}
	out, err = exec.Command(quiverBin, "approve", n[1], "--state-dir", state).CombinedOutput()
	if err != nil {
		t.Fatalf("quiver approve: %v\n%s", err, out)
	}
	if res := h.call("example__notes_delete", map[string]any{"id": id}); res.IsError {
		t.Fatalf("after quiver approve, the same call must run: %s", toolresult.Text(res))
	}
	// The permit was for that call, once.
	wantRefusal(t, h.call("example__notes_delete", map[string]any{"id": addNote(t, h, "new")}), "deny.approval_unavailable")
	out, _ = exec.Command(quiverBin, "audit", "--state-dir", state, "--tool", "example__notes_delete").CombinedOutput()
	if !strings.Contains(string(out), "allow.permit") || !strings.Contains(string(out), "ok") {
		t.Fatalf("quiver audit must show the permitted call and its outcome:\n%s", out)
	}
}

// TestDenyFromATerminal: after quiver deny N, the same call is told the
// user declined it, not filed again as a new request.
func TestDenyFromATerminal(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	h := startQuiver(t, notesConfig, hostOptions{args: []string{"--state-dir", state}})
	h.waitTools("example__notes_delete")
	args := map[string]any{"id": addNote(t, h, "old")}
	res := h.call("example__notes_delete", args)
	wantRefusal(t, res, "deny.approval_unavailable")
	n := regexp.MustCompile("quiver approve (\\d+)`").FindStringSubmatch(toolresult.Text(res))
	if n == nil {
		t.Fatalf("the refusal must say which request it is: %s", toolresult.Text(res))
	}
	if out, err := exec.Command(quiverBin, "deny", n[1], "--state-dir", state).CombinedOutput(); err != nil {
		t.Fatalf("quiver deny: %v\n%s", err, out)
	}
	res = h.call("example__notes_delete", args)
	wantRefusal(t, res, "deny.approval_denied")
	if !strings.Contains(toolresult.Text(res), "approval "+n[1]) {
		t.Fatalf("the refusal must name the declined request %s: %s", n[1], toolresult.Text(res))
	}
	out, _ := exec.Command(quiverBin, "grants", "--pending", "--state-dir", state).CombinedOutput()
	if strings.Contains(string(out), "example__notes_delete") {
		t.Fatalf("the declined call was filed again:\n%s", out)
	}
}

func TestCrashLeavesOutcomeUnknown(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "servers.yaml")
	os.WriteFile(path, []byte(notesConfig), 0o600)
	state := filepath.Join(dir, "state")
	var quiver *exec.Cmd
	tr := transport.NewStdioWithOptions(quiverBin, nil, []string{"serve", "--config", path, "--state-dir", state, "--log-level", "error"},
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			quiver = exec.Command(command, args...)
			quiver.Env = append(os.Environ(), env...)
			return quiver, nil
		}))
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := &host{t: t, c: c, changed: make(chan struct{}, 16)}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := c.Initialize(h.ctx(), init); err != nil {
		t.Fatal(err)
	}
	h.waitTools("example__sleep")
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "example__sleep", map[string]any{"ms": 30000}
		c.CallTool(context.Background(), req)
	}()
	// Wait until the ledger has the call started, then kill quiver hard.
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := exec.Command(quiverBin, "audit", "--state-dir", state, "--json").Output()
		if strings.Contains(string(out), `"tool":"example__sleep"`) && strings.Contains(string(out), `"started"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the call never started:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := quiver.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	quiver.Wait()
	out, err := exec.Command(quiverBin, "audit", "--state-dir", state, "--tool", "example__sleep").CombinedOutput()
	if err != nil {
		t.Fatalf("quiver audit: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "outcome_unknown") {
		t.Fatalf("a call running when quiver was killed must read outcome_unknown:\n%s", out)
	}
}

func TestDeclaredPathArgsAreFenced(t *testing.T) {
	cfg := `
surface: {reveal: direct}
servers:
  example:
    command: quiver
    args: [example-server, --test-tools]
`
	// echo's "value" is just a value to the gate while it does not look
	// like a path...
	h := startQuiver(t, cfg, hostOptions{})
	h.waitTools("example__echo")
	if res := h.call("example__echo", map[string]any{"value": "hostname"}); res.IsError {
		t.Fatalf("an undeclared argument that is not shaped like a path is not a path: %s", toolresult.Text(res))
	}
	// ...but a value shaped like a path is one whatever its name ({"from":
	// "/etc/…"} used to pass unless declared)...
	res := h.call("example__echo", map[string]any{"value": "/etc/hostname"})
	wantRefusal(t, res, "deny.approval_unavailable")
	if !strings.Contains(toolresult.Text(res), "read_outside_fence") {
		t.Fatalf("an absolute path under any name must be fenced: %s", toolresult.Text(res))
	}
	// ...and a declared one is a path in every form: relative, with no
	// path_base declared, it is outside.
	h = startQuiver(t, cfg+"    path_args: {echo: [value]}\n", hostOptions{})
	h.waitTools("example__echo")
	res = h.call("example__echo", map[string]any{"value": "hostname"})
	wantRefusal(t, res, "deny.approval_unavailable")
	if !strings.Contains(toolresult.Text(res), "read_outside_fence") || !strings.Contains(toolresult.Text(res), "path_base") {
		t.Fatalf("a declared relative path with no path_base must ask, saying why: %s", toolresult.Text(res))
	}
}

func TestExecutionNeedsAJustification(t *testing.T) {
	h := startQuiver(t, `
surface: {reveal: direct}
policy:
  classes: {example__echo: execute}
  defaults: {execute: allow}
servers:
  example:
    command: quiver
    args: [example-server, --test-tools]
`, hostOptions{})
	h.waitTools("example__echo")
	lt, err := h.c.ListTools(h.ctx(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range lt.Tools {
		if tool.Name == "example__echo" {
			if _, ok := tool.InputSchema.Properties["justification"]; !ok {
				t.Fatalf("an execution-class tool's schema must offer justification: %+v", tool.InputSchema)
			}
		}
	}
	wantRefusal(t, h.call("example__echo", map[string]any{"value": 1}), "deny.justification")
	res := h.call("example__echo", map[string]any{"value": 1, "justification": "the user asked to echo 1"})
	if res.IsError {
		t.Fatalf("with a justification: %s", toolresult.Text(res))
	}
	if strings.Contains(toolresult.Text(res), "justification") {
		t.Fatalf("quiver's justification must not reach the server: %s", toolresult.Text(res))
	}
}

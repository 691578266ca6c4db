package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// ghpToken has the shape of a GitHub token: ghp_ and 36 alphanumerics.
const ghpToken = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"

// decoyCard is the card quiver writes for the red team's call: a write
// whose first path argument (backup_path, which the server ignores) is a
// harmless file inside the fence, while the real write goes outside.
var decoyCard = strings.Join([]string{
	`quiver: allow fs__write_file (a write tool)?`,
	`fs__write_file writes outside the allowed folders: "/tmp/rt/outside/x9.txt".`,
	`Paths:`,
	`- "backup_path" "/home/user/projects/docs/README.backup.md": "/home/user/projects/docs/README.backup.md" (inside)`,
	`- "path" "/tmp/rt/outside/x9.txt": "/tmp/rt/outside/x9.txt" (outside the allowed folders)`,
	`- content: "x ` + ghpToken + ` and a long tail that a one-line column would have cut well before its end"`,
	`Arguments digest: 0123456789ab`,
}, "\n")

// ledgerCLI is a state dir holding one pending request like the red
// team's, and an env to run the ledger commands in process.
type ledgerCLI struct {
	t     *testing.T
	state string
	vars  map[string]string
}

func newLedgerCLI(t *testing.T) *ledgerCLI {
	t.Helper()
	dir := t.TempDir()
	lc := &ledgerCLI{t: t, state: filepath.Join(dir, "state"),
		vars: map[string]string{"XDG_CONFIG_HOME": filepath.Join(dir, "config")}}
	return lc
}

func (lc *ledgerCLI) ledger() *gate.Ledger {
	lc.t.Helper()
	return stateLedger(lc.t, lc.state)
}

// stateLedger opens the ledger in state dir state (made if missing): the
// file quiver serve and the ledger commands use. The caller closes it.
func stateLedger(t testing.TB, state string) *gate.Ledger {
	t.Helper()
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := gate.OpenLedger(context.Background(), filepath.Join(state, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fileDecoy files the red team's request and returns its number.
func (lc *ledgerCLI) fileDecoy() int64 {
	lc.t.Helper()
	l := lc.ledger()
	defer l.Close()
	id, err := l.CreateApproval(context.Background(), gate.Approval{
		Session: "s1", Tool: "fs__write_file", Capability: "mutate_outside_fence",
		Path:   "/home/user/projects/docs/README.backup.md", // the first path asked about
		Needs:  []gate.Need{{Capability: "mutate_outside_fence", Path: "/tmp/rt/outside/" + ghpToken + "/x9.txt"}},
		Digest: "0123456789abcdef", Reason: decoyCard,
	})
	if err != nil {
		lc.t.Fatal(err)
	}
	return id
}

// run runs quiver in process and returns stdout; it fails the test on a
// non-zero exit.
func (lc *ledgerCLI) run(args ...string) string {
	lc.t.Helper()
	code, out, errOut := lc.runFull(args...)
	if code != exitOK {
		lc.t.Fatalf("quiver %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// runFull runs quiver in process on the state dir and returns its exit
// code and what it printed.
func (lc *ledgerCLI) runFull(args ...string) (code int, stdout, stderr string) {
	return runEnv(func(k string) string { return lc.vars[k] }, append(args, "--state-dir", lc.state)...)
}

// wantCard fails unless out shows every line of the card, indented and
// whole, and the real path the write needs.
func wantCard(t *testing.T, what, out string) {
	t.Helper()
	redacted := strings.ReplaceAll(decoyCard, ghpToken, "[redacted:github-token]")
	for _, line := range strings.Split(redacted, "\n") {
		if !strings.Contains(out, "    "+line+"\n") {
			t.Errorf("%s must show the card's line %q whole and indented:\n%s", what, line, out)
		}
	}
	if !strings.Contains(out, `Need: mutate_outside_fence "/tmp/rt/outside/[redacted:github-token]/x9.txt"`) {
		t.Errorf("%s must name the path the write needs, not only the first one asked about:\n%s", what, out)
	}
	if strings.Contains(out, ghpToken) {
		t.Errorf("%s shows a GitHub token in clear:\n%s", what, out)
	}
}

func TestGrantsPendingShowsTheWholeCard(t *testing.T) {
	lc := newLedgerCLI(t)
	id := lc.fileDecoy()
	out := lc.run("grants", "--pending")
	if !regexp.MustCompile(`(?m)^request 1  session s1  tool fs__write_file  created \d{4}-\d\d-\d\d `).MatchString(out) || id != 1 {
		t.Errorf("grants --pending must head each request with its number, session, tool and time:\n%s", out)
	}
	wantCard(t, "grants --pending", out)
	// Without --pending, the same block comes before the grants.
	wantCard(t, "grants", lc.run("grants"))
}

func TestGrantsPendingJSONIsRedacted(t *testing.T) {
	lc := newLedgerCLI(t)
	lc.fileDecoy()
	out := lc.run("grants", "--pending", "--json")
	if strings.Contains(out, ghpToken) {
		t.Fatalf("grants --json shows a GitHub token in clear:\n%s", out)
	}
	var got struct {
		Pending []gate.Approval `json:"pending"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Pending) != 1 {
		t.Fatalf("grants --json: %v\n%s", err, out)
	}
	a := got.Pending[0]
	if a.Tool != "fs__write_file" || a.Needs[0].Path != "/tmp/rt/outside/[redacted:github-token]/x9.txt" ||
		!strings.Contains(a.Reason, `"path" "/tmp/rt/outside/x9.txt"`) {
		t.Fatalf("grants --json must keep the fields, redacted: %+v", a)
	}
}

// TestAnswerPrintsWhatWasAnswered: approve and deny each say what they
// did and show the whole request that was answered.
func TestAnswerPrintsWhatWasAnswered(t *testing.T) {
	for _, c := range []struct{ command, said string }{
		{"approve", "approved 1 (once); the model may call again. You approved:\n"},
		{"deny", "denied 1. You refused:\n"},
	} {
		t.Run(c.command, func(t *testing.T) {
			lc := newLedgerCLI(t)
			lc.fileDecoy()
			out := lc.run(c.command, "1")
			if !strings.HasPrefix(out, c.said) {
				t.Errorf("%s must say what it did:\n%s", c.command, out)
			}
			wantCard(t, c.command, out)
		})
	}
}

// TestGrantsRedactConfigSecrets: a value servers.yaml takes from the
// environment (${VAR}) is hidden in what the ledger commands print,
// found through --config as the other commands find it.
func TestGrantsRedactConfigSecrets(t *testing.T) {
	const secret = "hunter2-correct-horse-battery"
	t.Setenv("QUIVER_LEDGER_TEST_SECRET", secret)
	lc := newLedgerCLI(t)
	cfg := filepath.Join(t.TempDir(), "servers.yaml")
	os.WriteFile(cfg, []byte("servers:\n  example:\n    command: quiver\n    args: [example-server]\n    env:\n      API_KEY: ${QUIVER_LEDGER_TEST_SECRET}\n"), 0o600)
	l := lc.ledger()
	ctx := context.Background()
	if _, err := l.CreateApproval(ctx, gate.Approval{Session: "s1", Tool: "fs__write_file",
		Needs: []gate.Need{{Capability: "mutate_outside_fence", Path: "/tmp/" + secret}}, Reason: "card: " + secret}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddGrant(ctx, gate.Grant{Scope: gate.ScopePath, Capability: "mutate_outside_fence", Path: "/tmp/" + secret,
		Lifetime: gate.Persistent}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	for _, args := range [][]string{{"grants"}, {"grants", "--json"}, {"grants", "--pending"}} {
		out := lc.run(append(args, "--config", cfg)...)
		if strings.Contains(out, secret) || !strings.Contains(out, "[redacted:QUIVER_LEDGER_TEST_SECRET]") {
			t.Errorf("quiver %s must redact the config's secret:\n%s", strings.Join(args, " "), out)
		}
	}
	// The same with the config found as quiver serve finds it.
	os.MkdirAll(filepath.Join(lc.vars["XDG_CONFIG_HOME"], "quiver"), 0o700)
	b, _ := os.ReadFile(cfg)
	os.WriteFile(filepath.Join(lc.vars["XDG_CONFIG_HOME"], "quiver", "servers.yaml"), b, 0o600)
	if out := lc.run("grants"); strings.Contains(out, secret) {
		t.Errorf("quiver grants must find the config by itself and redact its secret:\n%s", out)
	}
}

func TestAuditIsRedacted(t *testing.T) {
	lc := newLedgerCLI(t)
	l := lc.ledger()
	if _, err := l.RecordDecision(context.Background(), "s1", "fs__read_file", json.RawMessage(`{}`),
		gate.Decision{Verdict: gate.Deny, Code: "deny.outside_fence", Reason: "fs__read_file reads /home/u/" + ghpToken + "/notes, outside the allowed folders"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	for _, args := range [][]string{{"audit"}, {"audit", "--json"}} {
		out := lc.run(args...)
		if strings.Contains(out, ghpToken) || !strings.Contains(out, "[redacted:github-token]") {
			t.Errorf("quiver %s must redact the token:\n%s", strings.Join(args, " "), out)
		}
	}
	// The evidence chain, in the stage names the operator page shows.
	var line struct {
		Stages []gate.Stage `json:"stages"`
	}
	out := lc.run("audit", "--json")
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &line); err != nil {
		t.Fatalf("quiver audit --json: %v\n%s", err, out)
	}
	if len(line.Stages) != 2 || line.Stages[0].Name != gate.StageRequested || line.Stages[1].Name != gate.StageDecided ||
		!strings.Contains(line.Stages[1].Detail, "deny.outside_fence") || strings.Contains(out, ghpToken) {
		t.Fatalf("a call refused at the gate has the stages requested and decided:\n%s", out)
	}
}

// TestApproveFromATerminalShowsTheCard: with a real quiver, the request
// that "quiver grants --pending" lists and "quiver approve" answers shows
// the card the host would have shown.
func TestApproveFromATerminalShowsTheCard(t *testing.T) {
	_, state, n := askForApproval(t)
	for _, args := range [][]string{{"grants", "--pending"}, {"approve", n[1]}} {
		out, err := exec.Command(quiverBin, append(args, "--state-dir", state)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "\n    quiver: allow example__notes_delete") {
			t.Errorf("quiver %s must show the approval card: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestAuditSaysWhatItLeftOut is issue 17's point 6: audit no longer cuts
// silently at 1,000 rows, and --session takes the id the log prints.
func TestAuditSaysWhatItLeftOut(t *testing.T) {
	lc := newLedgerCLI(t)
	l := lc.ledger()
	for i, sess := range []string{"abc-123@run1", "abc-123@run2", "other@run1", "abc-1234@run1"} {
		if _, err := l.RecordDecision(context.Background(), sess, "fs__read_file", json.RawMessage(`{}`),
			gate.Decision{Verdict: gate.Allow, Code: "allow.policy", Reason: "call " + string(rune('a'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	code, out, errOut := lc.runFull("audit", "--limit", "2")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(out, "fs__read_file"); n != 2 || !strings.Contains(out, "abc-1234@run1") {
		t.Errorf("--limit 2 must show the latest 2 calls:\n%s", out)
	}
	if !strings.Contains(errOut, "showing the latest 2 calls; older ones match too") {
		t.Errorf("audit must say it left calls out; stderr:\n%s", errOut)
	}
	got := lc.run("audit", "--session", "abc-123")
	if strings.Count(got, "fs__read_file") != 2 || strings.Contains(got, "other@") || strings.Contains(got, "abc-1234") {
		t.Errorf("--session abc-123 must match that id in every run, and nothing else:\n%s", got)
	}
	if got := lc.run("audit", "--session", "abc-123@run2"); strings.Count(got, "fs__read_file") != 1 {
		t.Errorf("--session with the run must match one call:\n%s", got)
	}
}

// TestRequestsOfAnEndedSessionExpire is issue 17's point 6: a request
// nobody answered before its session ended is no longer pending, and
// approving it says the session ended instead of "the model may call
// again".
func TestRequestsOfAnEndedSessionExpire(t *testing.T) {
	h, state, n := askForApproval(t)
	if err := h.c.Close(); err != nil { // the host goes: quiver's stdin ends and it exits
		t.Logf("close: %v", err)
	}
	out, err := exec.Command(quiverBin, "grants", "--pending", "--state-dir", state).CombinedOutput()
	if err != nil || strings.Contains(string(out), "example__notes_delete") {
		t.Errorf("grants --pending must not list a request of an ended session: %v\n%s", err, out)
	}
	out, err = exec.Command(quiverBin, "approve", n[1], "--state-dir", state).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "expired: the session that asked ended") || strings.Contains(string(out), "may call again") {
		t.Errorf("approve of an ended session's request: %v\n%s", err, out)
	}
}

// askForApproval runs a real quiver whose host cannot show cards and makes
// a call that asks; it returns the host, the state dir and the refusal's
// "quiver approve N" match (n[1] is N).
func askForApproval(t *testing.T) (*host, string, []string) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state")
	h := startQuiver(t, notesConfig, hostOptions{args: []string{"--state-dir", state}})
	h.waitTools("example__notes_delete")
	res := h.call("example__notes_delete", map[string]any{"id": addNote(t, h, "old")})
	wantRefusal(t, res, "deny.approval_unavailable")
	n := regexp.MustCompile("quiver approve (\\d+)`").FindStringSubmatch(toolresult.Text(res))
	if n == nil {
		t.Fatalf("the refusal must say which request to approve: %s", toolresult.Text(res))
	}
	return h, state, n
}

// TestGrantsOfStoppedQuiversAreEnded: a session grant lasts as long as its
// session, so quiver grants says so, and a session grant of a quiver that
// stopped without ending its sessions (killed) is not listed as in force
// (--all shows it ended), though no quiver has started since to revoke it
// (issue 29).
func TestGrantsOfStoppedQuiversAreEnded(t *testing.T) {
	lc := newLedgerCLI(t)
	l := lc.ledger()
	for _, g := range []gate.Grant{
		{Scope: gate.ScopeTool, Tool: "fs__write_file", Lifetime: gate.ForSession, Session: "stdio@deadrun1"},
		{Scope: gate.ScopeTool, Tool: "fs__edit_file", Lifetime: gate.ForSession, Session: "stdio@liverun1"},
		{Scope: gate.ScopeTool, Tool: "fs__move_file", Lifetime: gate.Persistent},
	} {
		if _, err := l.AddGrant(context.Background(), g); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	os.MkdirAll(filepath.Join(lc.state, "runs"), 0o700)
	os.WriteFile(filepath.Join(lc.state, "runs", "liverun1.json"), []byte(`{"pid":`+strconv.Itoa(os.Getpid())+`}`), 0o600)
	out := lc.run("grants")
	if strings.Contains(out, "fs__write_file") || !regexp.MustCompile(`fs__edit_file .*stdio@liverun1\s+when its session ends`).MatchString(out) ||
		!regexp.MustCompile(`fs__move_file .*persistent .*until revoked`).MatchString(out) {
		t.Errorf("quiver grants must list the live session's grant (ending with its session) and the persistent one, not the stopped quiver's:\n%s", out)
	}
	if out := lc.run("grants", "--all"); !regexp.MustCompile(`fs__write_file .*stdio@deadrun1\s+ended: its quiver stopped`).MatchString(out) {
		t.Errorf("quiver grants --all must show the stopped quiver's session grant as ended:\n%s", out)
	}
}

// TestAuditSinceTakesDays: --since takes days (1d), and anything else it
// cannot read is refused with one sentence saying what to give, not Go's
// unit error (issue 29).
func TestAuditSinceTakesDays(t *testing.T) {
	lc := newLedgerCLI(t)
	l := lc.ledger()
	if _, err := l.RecordDecision(context.Background(), "s1", "fs__read_file", json.RawMessage(`{}`),
		gate.Decision{Verdict: gate.Deny, Code: "deny.outside_fence", Reason: "outside"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if out := lc.run("audit", "--since", "1d"); !strings.Contains(out, "fs__read_file") {
		t.Errorf("audit --since 1d must show today's call:\n%s", out)
	}
	code, _, errOut := lc.runFull("audit", "--since", "1w")
	if code != exitUsage || !strings.Contains(errOut, `"1w" is not an age: give one such as 30m, 12h or 7d`) || strings.Contains(errOut, "unknown unit") {
		t.Errorf("audit --since 1w: exit %d\n%s", code, errOut)
	}
}

// TestRevokeAnUnknownGrant: revoking a grant that is not in force says so
// in one sentence, and where to look (issue 29: it read "revoke grant 999:
// revoke grant: not found").
func TestRevokeAnUnknownGrant(t *testing.T) {
	lc := newLedgerCLI(t)
	code, _, errOut := lc.runFull("grants", "--revoke", "999")
	want := "quiver grants: there is no grant 999 in force: it was revoked or ended already, or never existed (quiver grants --all lists every grant)\n"
	if code != exitFailure || errOut != want {
		t.Errorf("grants --revoke 999: exit %d\n%q\nwant %q", code, errOut, want)
	}
}

// TestCompletionOffersPendingNumbersAndLevels: completing approve's or
// deny's number offers the pending requests, with their tools; completing
// --log-level offers the levels (issue 29).
func TestCompletionOffersPendingNumbersAndLevels(t *testing.T) {
	lc := newLedgerCLI(t)
	id := lc.fileDecoy()
	getenv := func(k string) string {
		if k == "QUIVER_STATE_DIR" {
			return lc.state
		}
		return lc.vars[k]
	}
	for _, cmd := range []string{"approve", "deny"} {
		code, out, errOut := runEnv(getenv, "__complete", cmd, "")
		if want := strconv.FormatInt(id, 10) + "\tfs__write_file\n"; code != exitOK || !strings.HasPrefix(out, want) {
			t.Errorf("completing %s: exit %d\n%s%s\nwant it to start %q", cmd, code, out, errOut, want)
		}
	}
	code, out, _ := runEnv(getenv, "__complete", "serve", "--log-level", "")
	if code != exitOK || !strings.HasPrefix(out, "debug\ninfo\nwarn\nerror\n") {
		t.Errorf("completing --log-level: exit %d\n%s", code, out)
	}
}

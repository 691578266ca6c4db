package gate

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two calls of one tool in one session that start in the same microsecond
// (parallel tool calls; a coarse clock) are two starts: when the first's
// row is flushed and the second's is only in the journal at the crash,
// read-back must still insert the second (it knows a start by its
// sequence number, not by when, what and who).
func TestJournalSameMicrosecondStartsBothRecovered(t *testing.T) {
	ctx := context.Background()
	allow := Decision{Verdict: Allow, Code: CodeAllow, Reason: "ok", Digest: "d"}
	dead := withAlive(func(int) bool { return false })
	at := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	clock := withClock(func() time.Time { return at })

	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openTestLedger(t, path, clock)
	if _, err := l.RecordStarted(ctx, "s", "shell__run", []byte(`{"command":"ls"}`), allow); err != nil {
		t.Fatal(err)
	}
	l.settle(ctx) // the first start's row is in the ledger
	l.wmu.Lock()  // the second's is in the journal only when quiver dies
	if _, err := l.RecordStarted(ctx, "s", "shell__run", []byte(`{"command":"rm -rf ~"}`), allow); err != nil {
		l.wmu.Unlock()
		t.Fatal(err)
	}
	crashed := crashCopy(t, path)
	l.wmu.Unlock()

	next := openTestLedger(t, crashed, dead)
	calls, err := next.Audit(ctx, AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 {
		t.Fatalf("two calls started before the crash; the audit reads back %d: %+v", len(calls), calls)
	}
	for _, c := range calls {
		if c.Outcome != OutcomeUnknown {
			t.Errorf("call %d reads %q, want outcome_unknown", c.ID, c.Outcome)
		}
	}
}

// Starts reach the ledger in the order their calls queue them: the later
// of two same-microsecond starts may be the one in the ledger. Read-back
// knows which by its sequence number, and inserts the other (by when,
// what and who it would take the one in the ledger for the first, and
// insert the second twice).
func TestJournalSameMicrosecondLaterStartFlushedFirst(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openTestLedger(t, path)
	const at = 1796135410748602
	var run int64
	err := l.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO runs (pid, host, started) VALUES (?, ?, ?)`, 1, l.host, at)
		if run, err = insertedID("run", res, err); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, sqlInsertCall, run, at, "s", "shell__run", "second", "allow", CodeAllow, "ok", at, 2)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var lines []byte
	for i, digest := range []string{"first", "second"} {
		lines = append(lines, `{"seq":`+strconv.Itoa(i+1)+`,"time":1796135410748602,"session":"s","tool":"shell__run","digest":"`+digest+`","verdict":"allow","code":"allow.policy","reason":"ok"}`+"\n"...)
	}
	if err := os.WriteFile(journalPath(journalDir(path), run), lines, 0o600); err != nil {
		t.Fatal(err)
	}
	next := openTestLedger(t, path, withAlive(func(int) bool { return false }))
	calls, err := next.Audit(ctx, AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range calls {
		got = append(got, c.Digest+"/"+string(c.Outcome))
	}
	if strings.Join(got, " ") != "second/outcome_unknown first/outcome_unknown" {
		t.Errorf("calls read back: %v, want the row of start 2 and start 1 from the journal, both outcome_unknown", got)
	}
}

// A journal file is not trusted by its name alone: one for a run the
// ledger never registered (planted, or left from a ledger.db that was
// removed and made anew) is not read in as that run's calls.
func TestJournalOfUnknownRunIsNotIngested(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	dir := journalDir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	line := `{"seq":1,"time":1796135410748602,"session":"stdio@forged","tool":"shell__run","digest":"x","verdict":"allow","code":"allow.policy","reason":"Allowed by policy."}` + "\n"
	planted := filepath.Join(dir, "7.jsonl")
	if err := os.WriteFile(planted, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	l := openTestLedger(t, path)
	calls, err := l.Audit(ctx, AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if c.Session == "stdio@forged" {
			t.Errorf("a journal of run 7, which the ledger never registered, was read in as a call: %+v", c)
		}
	}
	if _, err := os.Stat(planted); err != nil {
		t.Errorf("the journal of an unknown run was not left alone: %v", err)
	}
}

// The journal is emptied only when every start appended is committed in
// the ledger. Starts reach the flusher in the order their goroutines call
// deferWrite, not the order they were appended: call A appends seq 1,
// call B appends seq 2, B's row is committed first; A's start, whose row
// is not written yet, must stay in the journal.
func TestJournalCompactionKeepsUnflushedStarts(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(filepath.Join(dir, "ledger.db"), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer j.f.Close()
	j.size = journalCompactAt // a long-running quiver's journal
	a, err := j.append(journalEntry{Time: 1, Session: "s", Tool: "shell__run", Verdict: "allow"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := j.append(journalEntry{Time: 2, Session: "s", Tool: "shell__run", Verdict: "allow"})
	if err != nil {
		t.Fatal(err)
	}
	j.inserted(b) // B's row is in; A's is still queued
	j.commit(true)
	got, err := os.ReadFile(j.path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `"seq":`+strconv.FormatInt(a, 10)+`,`) {
		t.Errorf("the journal was emptied while start %d was in neither the ledger nor the journal (journal now %q)", a, got)
	}
	// A's row in a transaction that rolled back is not in the ledger either.
	j.inserted(a)
	j.commit(false)
	if j.committed != 0 {
		t.Errorf("a rolled-back insert counts as committed: every start up to %d", j.committed)
	}
	j.inserted(a)
	j.commit(true)
	if j.committed != b {
		t.Errorf("both starts are committed; the journal knows every start up to %d", j.committed)
	}
	if got, _ := os.ReadFile(j.path); len(got) != 0 {
		t.Errorf("a large journal whose every start is committed stays: %q", got)
	}
}

// A process that has exited but is not yet reaped (a zombie: quiver
// killed, its parent not yet waiting) is not alive: its run's calls are
// closed as outcome_unknown, not left open.
func TestProcessAliveZombieIsDead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("zombies are told by /proc/<pid>/stat")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := readProcStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		if st.zombie {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never exited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ProcessAlive(pid) {
		t.Errorf("pid %d is a zombie and counts as alive", pid)
	}
	if !ProcessAlive(os.Getpid()) {
		t.Error("this very process counts as dead")
	}
}

// A run whose pid now belongs to another process (the pid was reused
// after quiver died) is dead: the process start time recorded with the
// pid tells them apart, so the run's calls read outcome_unknown.
func TestRecoveryReusedPIDIsDead(t *testing.T) {
	if _, err := readProcStat(os.Getpid()); err != nil {
		t.Skip("no process start times here:", err)
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openTestLedger(t, path)
	// A run of a quiver that died, whose pid is now this test's process.
	var run int64
	err := l.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO runs (pid, pid_start, host, started) VALUES (?, ?, ?, ?)`, os.Getpid(), 1, l.host, l.stamp())
		if run, err = insertedID("run", res, err); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, sqlInsertCall, run, l.stamp(), "s", "shell__run", "d", "allow", CodeAllow, "ok", l.stamp(), nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	next := openTestLedger(t, path) // the real liveness check
	if next.Recovered() != 1 {
		t.Fatalf("the call of a run whose pid was reused stays open: Recovered = %d, want 1", next.Recovered())
	}
	// This process's own run, with its true start time, is alive.
	if calls, _ := next.Audit(ctx, AuditQuery{}); len(calls) != 1 || calls[0].Outcome != OutcomeUnknown {
		t.Fatalf("calls: %+v", calls)
	}
	if third := openTestLedger(t, path); third.Recovered() != 0 {
		t.Fatalf("a live run was taken for dead: Recovered = %d", third.Recovered())
	}
}

// A ledger.db removed and made anew restarts its run ids; its run 1 must
// not truncate (or, when it closes, remove) the journal an older run 1
// left, which may hold starts that are nowhere else.
func TestRecreatedLedgerKeepsOldJournal(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	dir := journalDir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	line := `{"seq":1,"time":1796135410748602,"session":"stdio@old","tool":"shell__run","digest":"x","verdict":"allow","code":"allow.policy","reason":"Allowed by policy."}`
	if err := os.WriteFile(filepath.Join(dir, "1.jsonl"), []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLedger(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if l.run != 1 {
		t.Fatalf("a new ledger's first run is %d, the test needs 1", l.run)
	}
	if _, err := l.RecordStarted(ctx, "s", "t", nil, Decision{Verdict: Allow, Code: CodeAllow, Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	kept := false
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		kept = kept || strings.Contains(string(b), line)
	}
	if !kept {
		t.Errorf("the older run 1's journal is gone (files now %v)", ents)
	}
}

package gate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// crashCopy copies the ledger at path as a crash at this instant would
// leave it on disk (the database, its WAL and the start journals) to a new
// folder, and returns the copy's path.
func crashCopy(t *testing.T, path string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "ledger.db")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if b, err := os.ReadFile(path + suffix); err == nil {
			if err := os.WriteFile(dst+suffix, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	ents, _ := os.ReadDir(journalDir(path))
	os.MkdirAll(journalDir(dst), 0o700)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(journalDir(path), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(journalDir(dst), e.Name()), b, 0o600)
	}
	return dst
}

func TestStartJournal(t *testing.T) {
	ctx := context.Background()
	allow := Decision{Verdict: Allow, Code: CodeAllow, Reason: "ok", Digest: "d"}
	dead := withAlive(func(int) bool { return false })
	t.Run("start_only_in_the_journal_reads_outcome_unknown", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		l := openTestLedger(t, path)
		// The flusher cannot write while the lock is held: the start is
		// in the journal only when quiver "dies".
		l.wmu.Lock()
		if _, err := l.RecordStarted(ctx, "s", "shell__run", nil, allow); err != nil {
			l.wmu.Unlock()
			t.Fatal(err)
		}
		crashed := crashCopy(t, path)
		l.wmu.Unlock()
		next := openTestLedger(t, crashed, dead)
		if next.Recovered() != 1 {
			t.Fatalf("Recovered = %d, want 1", next.Recovered())
		}
		calls, _ := next.Audit(ctx, AuditQuery{})
		if len(calls) != 1 || calls[0].Tool != "shell__run" || calls[0].Outcome != OutcomeUnknown || calls[0].Started.IsZero() {
			t.Fatalf("calls after recovery: %+v", calls)
		}
		if ents, _ := os.ReadDir(journalDir(crashed)); len(ents) != 1 {
			// The dead run's journal is gone; the new run's is open.
			t.Fatalf("journals after recovery: %v", ents)
		}
	})
	t.Run("start_in_both_is_recorded_once", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		l := openTestLedger(t, path)
		if _, err := l.RecordStarted(ctx, "s", "shell__run", nil, allow); err != nil {
			t.Fatal(err)
		}
		l.settle(ctx) // the row is written; the journal still has it
		next := openTestLedger(t, crashCopy(t, path), dead)
		calls, _ := next.Audit(ctx, AuditQuery{})
		if next.Recovered() != 1 || len(calls) != 1 || calls[0].Outcome != OutcomeUnknown {
			t.Fatalf("recovered %d, calls %+v", next.Recovered(), calls)
		}
	})
	t.Run("ended_call_reads_its_outcome", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		l := openTestLedger(t, path)
		id, err := l.RecordStarted(ctx, "s", "shell__run", nil, allow)
		if err != nil {
			t.Fatal(err)
		}
		l.RecordEndLater(id, OutcomeError, "boom") // before its row is written: in its insert
		// After its row is written: an update.
		late, _ := l.RecordStarted(ctx, "s", "shell__run", nil, allow)
		l.settle(ctx)
		l.RecordEndLater(late, OutcomeOK, "")
		calls, _ := l.Audit(ctx, AuditQuery{})
		if len(calls) != 2 || calls[0].Outcome != OutcomeError || calls[0].Detail != "boom" || calls[1].Outcome != OutcomeOK || calls[1].Ended.IsZero() {
			t.Fatalf("calls: %+v", calls)
		}
		next := openTestLedger(t, crashCopy(t, path), dead)
		if calls, _ := next.Audit(ctx, AuditQuery{}); next.Recovered() != 0 || len(calls) != 2 || calls[0].Outcome != OutcomeError {
			t.Fatalf("recovered %d, calls %+v", next.Recovered(), calls)
		}
	})
	t.Run("live_run_is_left_alone_and_close_removes_its_journal", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		l, err := OpenLedger(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := l.RecordStarted(ctx, "s", "t", nil, allow)
		other := openTestLedger(t, path)
		if other.Recovered() != 0 {
			t.Fatal("a live run's call was closed")
		}
		l.RecordEndLater(id, OutcomeOK, "")
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(l.journal.path); !os.IsNotExist(err) {
			t.Fatalf("the journal of a closed run stays: %v", err)
		}
		if calls, _ := other.Audit(ctx, AuditQuery{}); len(calls) != 1 || calls[0].Outcome != OutcomeOK {
			t.Fatalf("calls: %+v", calls)
		}
	})
}

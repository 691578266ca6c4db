package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a test clock that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openTestLedger(t testing.TB, path string, opts ...ledgerOption) *Ledger {
	t.Helper()
	l, err := OpenLedger(context.Background(), path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// lifecycle records one full call: decision, approval, start, end.
func lifecycle(ctx context.Context, l *Ledger, session string, i int) error {
	d := Decision{Verdict: Allow, Code: CodeAllow, Reason: "Allowed by policy.", Digest: fmt.Sprintf("%064d", i)}
	id, err := l.RecordDecision(ctx, session, "fs__read_file", nil, d)
	if err != nil {
		return err
	}
	if err := l.RecordApproval(ctx, id, "policy"); err != nil {
		return err
	}
	if err := l.RecordStart(ctx, id); err != nil {
		return err
	}
	return l.RecordEnd(ctx, id, OutcomeOK, "")
}

func TestLedgerConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	a := openTestLedger(t, path)
	b := openTestLedger(t, path) // a second handle stands in for a second process
	ctx := context.Background()
	const workers, each = 8, 150
	var errs atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			l := a
			if w%2 == 1 {
				l = b
			}
			for i := 0; i < each; i++ {
				var err error
				switch i % 5 {
				case 0:
					_, err = l.AddGrant(ctx, Grant{Scope: ScopeTool, Tool: "x", Lifetime: ForSession, Session: fmt.Sprint(w)})
				case 1:
					var ap Approval
					ap, err = l.RequestApproval(ctx, fmt.Sprint(w), "x", Decision{Capability: "execute", Needs: []Need{{Capability: "execute"}}, Digest: fmt.Sprint(i)})
					if err == nil {
						_, err = l.ResolveApproval(ctx, ap.ID, Resolution{Approve: true, Lifetime: Once})
					}
				default:
					err = lifecycle(ctx, l, fmt.Sprint(w), i)
				}
				if err != nil {
					errs.Add(1)
					first.CompareAndSwap(nil, err)
				}
			}
		}(w)
	}
	wg.Wait()
	if n := errs.Load(); n > 0 {
		t.Fatalf("%d errors, first: %v", n, first.Load())
	}
	calls, err := a.Audit(ctx, AuditQuery{Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if want := workers * each * 3 / 5; len(calls) != want {
		t.Fatalf("audit has %d calls, want %d", len(calls), want)
	}
}

func TestLedgerRecovery(t *testing.T) {
	ctx := context.Background()
	t.Run("call_of_a_dead_process_becomes_outcome_unknown", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		crashed, err := OpenLedger(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		id, err := crashed.RecordDecision(ctx, "s", "shell__run", nil, Decision{Verdict: Allow, Code: CodeAllow, Reason: "ok", Digest: "d"})
		if err != nil {
			t.Fatal(err)
		}
		if err := crashed.RecordStart(ctx, id); err != nil {
			t.Fatal(err)
		}
		done, err := crashed.RecordDecision(ctx, "s", "shell__run", nil, Decision{Verdict: Allow, Code: CodeAllow, Reason: "ok", Digest: "d"})
		if err != nil {
			t.Fatal(err)
		}
		crashed.RecordStart(ctx, done)
		crashed.RecordEnd(ctx, done, OutcomeOK, "")
		crashed.db.Close() // SIGKILL: no Close, the run never ends

		// While the first process lives, nobody touches its calls.
		alive := openTestLedger(t, path)
		if alive.Recovered() != 0 {
			t.Fatalf("a live process's call was closed")
		}
		next := openTestLedger(t, path, withAlive(func(int) bool { return false }))
		if next.Recovered() != 1 {
			t.Fatalf("Recovered = %d, want 1", next.Recovered())
		}
		calls, err := next.Audit(ctx, AuditQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if calls[0].ID != id || calls[0].Outcome != OutcomeUnknown || calls[1].Outcome != OutcomeOK {
			t.Fatalf("calls after recovery: %+v", calls)
		}
	})
	t.Run("call_left_open_at_close_is_closed_next_time", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		l, err := OpenLedger(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := l.RecordDecision(ctx, "s", "t", nil, Decision{Code: CodeAllow, Reason: "ok", Digest: "d"})
		l.RecordStart(ctx, id)
		l.Close()
		again := openTestLedger(t, path)
		if again.Recovered() != 1 {
			t.Fatalf("Recovered = %d, want 1", again.Recovered())
		}
	})
}

func TestLedgerGrantsAndApprovals(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	l := openTestLedger(t, filepath.Join(t.TempDir(), "ledger.db"), withClock(clk.now))

	t.Run("permit_is_used_once", func(t *testing.T) {
		if _, err := l.addPermit(ctx, "s", "t", "dig"); err != nil {
			t.Fatal(err)
		}
		if how, _, ok := l.cover(ctx, "s", "t", "dig", []Need{{Capability: "execute"}}); !ok || how != coveredByPermit {
			t.Fatal("permit did not cover")
		}
		if _, _, ok := l.cover(ctx, "s", "t", "dig", []Need{{Capability: "execute"}}); ok {
			t.Fatal("permit covered twice")
		}
	})
	t.Run("permit_expires_after_five_minutes", func(t *testing.T) {
		l.addPermit(ctx, "s", "t", "late")
		clk.advance(5*time.Minute + time.Second)
		if _, _, ok := l.cover(ctx, "s", "t", "late", []Need{{Capability: "execute"}}); ok {
			t.Fatal("expired permit covered")
		}
	})
	t.Run("permit_binds_session_tool_and_digest", func(t *testing.T) {
		l.addPermit(ctx, "s", "t", "bound")
		for _, k := range [][3]string{{"other", "t", "bound"}, {"s", "other", "bound"}, {"s", "t", "other"}} {
			if _, _, ok := l.cover(ctx, k[0], k[1], k[2], []Need{{Capability: "execute"}}); ok {
				t.Fatalf("permit covered %v", k)
			}
		}
	})
	t.Run("path_grant_covers_below_and_mutate_covers_read", func(t *testing.T) {
		id, err := l.AddGrant(ctx, Grant{Scope: ScopePath, Capability: CapMutateOutside, Path: "/data", Lifetime: ForSession, Session: "s"})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []Need{{Capability: CapReadOutside, Path: "/data/x"}, {Capability: CapMutateOutside, Path: "/data"}} {
			if _, gid, ok := l.cover(ctx, "s", "t", "", []Need{n}); !ok || gid != id {
				t.Fatalf("grant did not cover %+v", n)
			}
		}
		for _, n := range []Need{{Capability: CapReadOutside, Path: "/data-evil"}, {Capability: CapReadOutside, Path: "/"}} {
			if _, _, ok := l.cover(ctx, "s", "t", "", []Need{n}); ok {
				t.Fatalf("grant covered %+v", n)
			}
		}
		if _, _, ok := l.cover(ctx, "other", "t", "", []Need{{Capability: CapReadOutside, Path: "/data/x"}}); ok {
			t.Fatal("session grant covered another session")
		}
		if err := l.RevokeGrant(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := l.cover(ctx, "s", "t", "", []Need{{Capability: CapReadOutside, Path: "/data/x"}}); ok {
			t.Fatal("revoked grant covered")
		}
		if err := l.RevokeGrant(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second revoke: %v", err)
		}
	})
	t.Run("read_grant_does_not_cover_mutate", func(t *testing.T) {
		l.AddGrant(ctx, Grant{Scope: ScopePath, Capability: CapReadOutside, Path: "/ro", Lifetime: Persistent})
		if _, _, ok := l.cover(ctx, "any", "t", "", []Need{{Capability: CapMutateOutside, Path: "/ro/x"}}); ok {
			t.Fatal("read grant covered a write")
		}
		if _, _, ok := l.cover(ctx, "any", "t", "", []Need{{Capability: CapReadOutside, Path: "/ro/x"}}); !ok {
			t.Fatal("persistent grant did not cover another session")
		}
	})
	t.Run("persistent_grant_expires", func(t *testing.T) {
		l.AddGrant(ctx, Grant{Scope: ScopeTool, Tool: "tmp", Capability: "execute", Lifetime: Persistent, Expires: clk.now().Add(time.Hour)})
		if _, _, ok := l.cover(ctx, "s", "tmp", "", []Need{{Capability: "execute"}}); !ok {
			t.Fatal("grant did not cover")
		}
		clk.advance(2 * time.Hour)
		if _, _, ok := l.cover(ctx, "s", "tmp", "", []Need{{Capability: "execute"}}); ok {
			t.Fatal("expired grant covered")
		}
	})
	t.Run("every_need_must_be_covered", func(t *testing.T) {
		l.AddGrant(ctx, Grant{Scope: ScopeTool, Tool: "both", Capability: "destructive", Lifetime: ForSession, Session: "s"})
		needs := []Need{{Capability: "destructive"}, {Capability: CapMutateOutside, Path: "/elsewhere/x"}}
		if _, _, ok := l.cover(ctx, "s", "both", "", needs); ok {
			t.Fatal("half-covered ask was allowed")
		}
	})
	t.Run("once_grant_is_used_up", func(t *testing.T) {
		l.AddGrant(ctx, Grant{Scope: ScopeTool, Tool: "one", Capability: "admin", Lifetime: Once, Session: "s"})
		if _, _, ok := l.cover(ctx, "s", "one", "", []Need{{Capability: "admin"}}); !ok {
			t.Fatal("once grant did not cover")
		}
		if _, _, ok := l.cover(ctx, "s", "one", "", []Need{{Capability: "admin"}}); ok {
			t.Fatal("once grant covered twice")
		}
	})
	t.Run("bad_grants_are_refused", func(t *testing.T) {
		for _, g := range []Grant{
			{Scope: ScopeTool, Lifetime: Persistent},
			{Scope: ScopePath, Path: "rel", Capability: CapReadOutside, Lifetime: Persistent},
			{Scope: ScopePath, Path: "/x", Capability: "execute", Lifetime: Persistent},
			{Scope: ScopeTool, Tool: "x", Lifetime: ForSession},
			{Scope: "world", Lifetime: Persistent},
		} {
			if _, err := l.AddGrant(ctx, g); err == nil {
				t.Errorf("AddGrant(%+v) succeeded", g)
			}
		}
	})
	t.Run("approval_retry_does_not_pile_up", func(t *testing.T) {
		d := Decision{Capability: "execute", Needs: []Need{{Capability: "execute"}}, Digest: "same", Reason: "r"}
		a1, err := l.RequestApproval(ctx, "s", "t", d)
		if err != nil {
			t.Fatal(err)
		}
		a2, _ := l.RequestApproval(ctx, "s", "t", d)
		if a1.ID != a2.ID || a1.State != Pending {
			t.Fatalf("approvals %d and %d", a1.ID, a2.ID)
		}
	})
	t.Run("approve_twice_is_refused", func(t *testing.T) {
		a, _ := l.RequestApproval(ctx, "s", "t", Decision{Capability: "execute", Needs: []Need{{Capability: "execute"}}, Digest: "twice"})
		if _, err := l.ResolveApproval(ctx, a.ID, Resolution{Approve: false}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.ResolveApproval(ctx, a.ID, Resolution{Approve: true}); !errors.Is(err, ErrResolved) {
			t.Fatalf("second answer: %v", err)
		}
		if _, err := l.ResolveApproval(ctx, 99999, Resolution{Approve: true}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown approval: %v", err)
		}
		got, _ := l.Approvals(ctx, ApprovalFilter{State: Denied})
		if len(got) != 1 || got[0].ID != a.ID {
			t.Fatalf("denied approvals: %+v", got)
		}
	})
}

// TestApprovalFlow drives an ask through the ledger the way the proxy and
// `quiver approve N` will: ask, file, approve from another handle, retry.
func TestApprovalFlow(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openTestLedger(t, path)
	cli := openTestLedger(t, path) // `quiver approve` in another process
	// careful: so that a destructive call inside the fence asks too.
	g := f.gate(t, Policy{Profile: "careful", Defaults: map[Class]string{ClassWrite: "allow"}}, WithLedger(l))
	outside := filepath.Join(f.outside, "notes.txt")

	c := call(writeTool, `{"path":`+js(outside)+`,"content":"x"}`)
	d := g.Evaluate(ctx, c)
	check(t, d, want{Ask, CodeAskMutateOutside, nil})

	t.Run("approve_once_permits_exactly_one_retry", func(t *testing.T) {
		a, err := l.RequestApproval(ctx, c.Session, c.Name, d)
		if err != nil {
			t.Fatal(err)
		}
		if a.Path != outside || a.Capability != CapMutateOutside {
			t.Fatalf("approval %+v", a)
		}
		if _, err := cli.ResolveApproval(ctx, a.ID, Resolution{Approve: true, Lifetime: Once}); err != nil {
			t.Fatal(err)
		}
		other := call(writeTool, `{"path":`+js(outside)+`,"content":"different"}`)
		check(t, g.Evaluate(ctx, other), want{Ask, CodeAskMutateOutside, nil})
		check(t, g.Evaluate(ctx, c), want{Allow, CodeAllowPermit, nil})
		check(t, g.Evaluate(ctx, c), want{Ask, CodeAskMutateOutside, nil})
	})
	t.Run("approve_for_session_grants_the_path", func(t *testing.T) {
		a, _ := l.RequestApproval(ctx, c.Session, c.Name, d)
		if _, err := cli.ResolveApproval(ctx, a.ID, Resolution{Approve: true, Lifetime: ForSession}); err != nil {
			t.Fatal(err)
		}
		other := call(writeTool, `{"path":`+js(outside)+`,"content":"different"}`)
		check(t, g.Evaluate(ctx, other), want{Allow, CodeAllowGrant, nil})
		check(t, g.Evaluate(ctx, c), want{Allow, CodeAllowGrant, nil})
		c2 := c
		c2.Session = "s2"
		check(t, g.Evaluate(ctx, c2), want{Ask, CodeAskMutateOutside, nil})
	})
	t.Run("deny_grants_nothing", func(t *testing.T) {
		del := call(deleteTool, `{"path":`+js(filepath.Join(f.root, "x"))+`}`)
		dd := g.Evaluate(ctx, del)
		check(t, dd, want{Ask, CodeAskPolicy, nil})
		a, _ := l.RequestApproval(ctx, del.Session, del.Name, dd)
		cli.ResolveApproval(ctx, a.ID, Resolution{Approve: false})
		check(t, g.Evaluate(ctx, del), want{Ask, CodeAskPolicy, nil})
	})
	t.Run("request_capability_without_digest_grants_once", func(t *testing.T) {
		id, err := l.CreateApproval(ctx, Approval{Session: "s1", Tool: deleteTool.Name, Capability: string(ClassDestructive), Reason: "clean the build"})
		if err != nil {
			t.Fatal(err)
		}
		cli.ResolveApproval(ctx, id, Resolution{Approve: true, Lifetime: Once})
		del := call(deleteTool, `{"path":`+js(filepath.Join(f.root, "y"))+`}`)
		check(t, g.Evaluate(ctx, del), want{Allow, CodeAllowGrant, nil})
		check(t, g.Evaluate(ctx, del), want{Ask, CodeAskPolicy, nil})
	})
}

func TestAudit(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	l := openTestLedger(t, filepath.Join(t.TempDir(), "ledger.db"), withClock(clk.now))
	for i, tool := range []string{"github__create_issue", "github__list", "fs__read_file"} {
		session := "a"
		if i == 2 {
			session = "b"
		}
		id, _ := l.RecordDecision(ctx, session, tool, []byte(`{"token":"secret"}`), Decision{Code: CodeAllow, Reason: "ok"})
		l.RecordStart(ctx, id)
		clk.advance(time.Second)
		l.RecordEnd(ctx, id, OutcomeError, "boom")
		clk.advance(time.Hour)
	}
	cases := []struct {
		name string
		q    AuditQuery
		want int
	}{
		{"everything", AuditQuery{}, 3},
		{"tool_glob", AuditQuery{Tool: "github__*"}, 2},
		{"session", AuditQuery{Session: "b"}, 1},
		{"since", AuditQuery{Since: clk.now().Add(-90 * time.Minute)}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.Audit(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want {
				t.Fatalf("got %d entries, want %d", len(got), tc.want)
			}
		})
	}
	got, _ := l.Audit(ctx, AuditQuery{})
	e := got[0]
	if e.Duration != time.Second || e.Outcome != OutcomeError || e.Detail != "boom" || len(e.Digest) != 64 {
		t.Fatalf("entry %+v", e)
	}
}

// TestLedgerTwoProcesses runs writers in child processes (this test binary
// re-executed) beside writers in this one, all on one file.
func TestLedgerTwoProcesses(t *testing.T) {
	if os.Getenv("QUIVER_LEDGER_CHILD") != "" {
		return
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openTestLedger(t, path)
	ctx := context.Background()
	const each = 200
	var cmds []*exec.Cmd
	for i := 0; i < 2; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLedgerChildWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), "QUIVER_LEDGER_CHILD="+path, fmt.Sprintf("QUIVER_LEDGER_N=%d", each))
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Log(out.String())
			}
		})
		cmds = append(cmds, cmd)
	}
	var wg sync.WaitGroup
	var errs atomic.Int64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := lifecycle(ctx, l, "parent", i); err != nil {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	if errs.Load() > 0 {
		t.Fatalf("%d errors in the parent", errs.Load())
	}
	calls, err := l.Audit(ctx, AuditQuery{Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if want := 4*each + 2*each; len(calls) != want {
		t.Fatalf("%d calls recorded, want %d", len(calls), want)
	}
}

// TestLedgerChildWriter is the child half of TestLedgerTwoProcesses.
func TestLedgerChildWriter(t *testing.T) {
	path := os.Getenv("QUIVER_LEDGER_CHILD")
	if path == "" {
		t.Skip("only runs as TestLedgerTwoProcesses's child")
	}
	n, _ := strconv.Atoi(os.Getenv("QUIVER_LEDGER_N"))
	l := openTestLedger(t, path)
	for i := 0; i < n; i++ {
		if err := lifecycle(context.Background(), l, "child", i); err != nil {
			t.Fatalf("child write %d: %v", i, err)
		}
	}
}

// A call that ends after the ledger closed (quiver shutting down while a
// call returns) is dropped, not a panic: it reads back as outcome_unknown.
func TestEndAfterCloseIsDropped(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := OpenLedger(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	d := Decision{Verdict: Allow, Code: CodeAllow, Reason: "ok", Digest: "d"}
	row, err := l.RecordDecision(ctx, "s1", "fs__write", nil, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RecordStart(ctx, row); err != nil {
		t.Fatal(err)
	}
	journaled, err := l.RecordStarted(ctx, "s1", "fs__write", nil, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.RecordEndLater(journaled, OutcomeOK, "")
	l.RecordEndLater(row, OutcomeOK, "")
}

package proxy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/quiver-mcp/quiver/gate"
)

// With the operator page on, a call whose host cannot show a card waits
// for the answer given on the page (or in a terminal), and goes on the
// moment it comes, with the result the host's own card would have given.
func TestPageAnswerUnblocksWaitingCall(t *testing.T) {
	const cfg = rigServer + `
surface:
  always_on: [ex__notes_add]
policy:
  approval_timeout: 20s
  defaults:
    write: ask
`
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		answer func(s *Server, id int64) error
		want   string
		within time.Duration // the page's answer goes through at once; a terminal's is polled
	}{
		{"page allows once", func(s *Server, id int64) error {
			_, err := s.Answer(ctx, id, gate.Resolution{Approve: true, Lifetime: gate.Once})
			return err
		}, "", 500 * time.Millisecond},
		{"page denies", func(s *Server, id int64) error {
			_, err := s.Answer(ctx, id, gate.Resolution{Approve: false})
			return err
		}, gate.CodeApprovalDenied, 500 * time.Millisecond},
		{"terminal allows", func(s *Server, id int64) error {
			// quiver approve N in another process writes only the ledger.
			_, err := s.ledger.ResolveApproval(ctx, id, gate.Resolution{Approve: true, Lifetime: gate.Once})
			return err
		}, "", 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, cfg, rigTools()...)
			r.s.opts.ApprovalPage = true
			c := r.connect("stdio")
			tick, stop := r.s.WatchApprovals()
			defer stop()
			done := make(chan callResult, 1)
			go func() { done <- c.call("ex__notes_add", map[string]any{"title": "x"}) }()
			var id int64
			for id == 0 {
				select {
				case <-tick:
					if w := r.s.Waiting(); len(w) == 1 {
						id = w[0]
					}
				case res := <-done:
					t.Fatalf("the call did not wait for the page: %s", res.text())
				case <-time.After(10 * time.Second):
					t.Fatal("no call waits for an answer")
				}
			}
			start := time.Now()
			if err := tc.answer(r.s, id); err != nil {
				t.Fatal(err)
			}
			select {
			case res := <-done:
				wantCode(t, res, tc.want)
				if took := time.Since(start); took > tc.within {
					t.Fatalf("the answer took %v to reach the call", took)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the answer did not unblock the call")
			}
			if w := r.s.Waiting(); len(w) != 0 {
				t.Fatalf("still waiting after the answer: %v", w)
			}
		})
	}
}

// Without the page, the same call is refused at once with the terminal
// hint, as before.
func TestNoPageNoWait(t *testing.T) {
	r := newRig(t, rigServer+`
surface:
  always_on: [ex__notes_add]
policy:
  defaults:
    write: ask
`, rigTools()...)
	wantCode(t, r.connect("stdio").call("ex__notes_add", map[string]any{"title": "x"}), gate.CodeApprovalUnavailable)
}

// A page that nobody answers: the call ends at the approval timeout, with
// the request left pending for quiver approve.
func TestPageTimeout(t *testing.T) {
	r := newRig(t, rigServer+`
surface:
  always_on: [ex__notes_add]
policy:
  approval_timeout: 1s
  defaults:
    write: ask
`, rigTools()...)
	r.s.opts.ApprovalPage = true
	res := r.connect("stdio").call("ex__notes_add", map[string]any{"title": "x"})
	wantCode(t, res, gate.CodeApprovalTimeout)
	as, _ := r.s.ledger.Approvals(context.Background(), gate.ApprovalFilter{State: gate.Pending})
	if len(as) != 1 {
		t.Fatalf("pending after the timeout: %v", as)
	}
}

// request_capability from a host without cards waits for the page too.
func TestPageAnswersRequestCapability(t *testing.T) {
	r := newRig(t, rigServer+`
policy:
  approval_timeout: 20s
`, rigTools()...)
	r.s.opts.ApprovalPage = true
	c := r.connect("stdio")
	done := make(chan callResult, 1)
	dir := t.TempDir()
	go func() {
		done <- c.call("request_capability", map[string]any{"capability": "read_outside_fence", "path": dir, "reason": "to read the plan"})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(r.s.Waiting()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("request_capability did not wait for the page")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := r.s.Answer(context.Background(), r.s.Waiting()[0], gate.Resolution{Approve: true, Lifetime: gate.ForSession}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.IsError || !strings.Contains(res.text(), "Granted") {
			t.Fatalf("after the page's yes: %s", res.text())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the page's answer did not reach request_capability")
	}
}

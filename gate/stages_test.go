package gate

import (
	"slices"
	"testing"
	"time"
)

func TestStages(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	names := func(e CallEntry) []string {
		var out []string
		for _, s := range e.Stages() {
			out = append(out, s.Name)
		}
		return out
	}
	for _, tc := range []struct {
		e    CallEntry
		want []string
	}{
		{CallEntry{Time: t0, Verdict: "deny", Code: "deny.outside_fence"}, []string{"requested", "decided"}},
		{CallEntry{Time: t0, Verdict: "allow", Started: t0, Ended: t0, Outcome: OutcomeOK}, []string{"requested", "decided", "started", "ended"}},
		{CallEntry{Time: t0, Verdict: "ask", Approval: "once", Started: t0, Ended: t0, Outcome: OutcomeError, Detail: "boom"},
			[]string{"requested", "decided", "approved", "started", "ended"}},
		{CallEntry{Time: t0, Verdict: "ask", Approval: "deny.approval_denied"}, []string{"requested", "decided", "approved"}},
		{CallEntry{Time: t0, Verdict: "allow", Started: t0, Outcome: OutcomeUnknown}, []string{"requested", "decided", "started", "ended"}},
	} {
		if got := names(tc.e); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: stages %v, want %v", tc.e, got, tc.want)
		}
	}
	st := CallEntry{Time: t0, Verdict: "ask", Code: "ask.x", Approval: "once", Started: t0, Ended: t0, Outcome: OutcomeError, Detail: "boom"}.Stages()
	if st[1].Detail != "ask ask.x" || st[2].Detail != "once" || st[4].Detail != "error: boom" {
		t.Errorf("details: %+v", st)
	}
}

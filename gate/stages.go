package gate

import (
	"regexp"
	"strconv"
	"time"
)

// The stages of a call's evidence chain, in order: what the audit shows
// for each call (quiver audit --json and the operator page use these
// names).
const (
	StageRequested = "requested" // the call reached quiver
	StageDecided   = "decided"   // the gate's verdict and code
	StageApproved  = "approved"  // a person's answer to its card
	StageStarted   = "started"   // it was forwarded
	StageEnded     = "ended"     // how it ended
)

// A Stage is one link of a call's evidence chain. Time is zero when the
// ledger does not record one (an approval's answer is timed on the
// approval, not on the call).
type Stage struct {
	Name   string    `json:"stage"`
	Time   time.Time `json:"time,omitzero"`
	Detail string    `json:"detail,omitempty"`
}

// Stages is e's evidence chain: the stages the call went through, in
// order, each with what the ledger says of it. A call refused at the gate
// has two (requested, decided); one that ran to its end has four or five.
func (e CallEntry) Stages() []Stage {
	st := []Stage{
		{Name: StageRequested, Time: e.Time, Detail: e.Session + " called " + e.ToolShown()},
		{Name: StageDecided, Time: e.Time, Detail: e.Verdict + " " + e.Code},
	}
	if e.Approval != "" {
		st = append(st, Stage{Name: StageApproved, Detail: e.Approval})
	}
	if !e.Started.IsZero() {
		st = append(st, Stage{Name: StageStarted, Time: e.Started})
	}
	if !e.Ended.IsZero() || e.Outcome != "" {
		d := string(e.Outcome)
		if e.Detail != "" {
			d += ": " + e.Detail
		}
		st = append(st, Stage{Name: StageEnded, Time: e.Ended, Detail: d})
	}
	return st
}

// exposedNameRE is the shape of every name quiver exposes (registry's
// ExposedName keeps to [A-Za-z0-9_-]).
var exposedNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// ToolShown is the call's tool as the audit shows it: the name when it
// is one quiver could expose, else quoted (%q). An unknown tool is
// recorded as the model named it, and the model's words in the TOOL
// column ("files__write_file (approved by you)") must not read as
// quiver's record (red team 68).
func (e CallEntry) ToolShown() string {
	if exposedNameRE.MatchString(e.Tool) {
		return e.Tool
	}
	return strconv.Quote(e.Tool)
}

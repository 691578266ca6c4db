package gate

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// Outcome is how a started call ended.
type Outcome string

// Terminal outcomes.
const (
	OutcomeOK        Outcome = "ok"
	OutcomeError     Outcome = "error"
	OutcomeCancelled Outcome = "cancelled"
	// OutcomeUnknown closes a call that started and never reported an end
	// (quiver died). quiver never retries such a call on its own: it may
	// have run.
	OutcomeUnknown Outcome = "outcome_unknown"
)

// RecordDecision records a call's request and the gate's decision, and
// returns the call's id for the later stages. When d has no digest (a call
// refused before its arguments were read) the raw bytes are digested.
func (l *Ledger) RecordDecision(ctx context.Context, session, tool string, args json.RawMessage, d Decision) (int64, error) {
	return l.insertCall(ctx, "record decision", session, tool, args, d, false)
}

// RecordStarted records an allowed call that is about to be forwarded:
// request, decision and start. It is durable when RecordStarted returns
// (a line in the start journal, journal.go), before the call goes out, so
// a crash during the call leaves a start with no end, which the next open
// reads as outcome_unknown; the row itself is written in the background.
// The id it returns is a handle for RecordEndLater, not a row id.
func (l *Ledger) RecordStarted(ctx context.Context, session, tool string, args json.RawMessage, d Decision) (int64, error) {
	e := journalEntry{Time: l.stamp(), Session: l.redact(session), Tool: l.redact(tool), Digest: callDigest(args, d), Verdict: d.Verdict.String(), Code: d.Code, Reason: l.redact(d.Reason)}
	h, err := l.journaled(e)
	if err != nil {
		// The journal failed (a full disk?): the row, at once, is as good.
		return l.insertCall(ctx, "record start", session, tool, args, d, true)
	}
	return h, nil
}

func (l *Ledger) insertCall(ctx context.Context, what, session, tool string, args json.RawMessage, d Decision, started bool) (int64, error) {
	now := l.stamp()
	var start any
	if started {
		start = now
	}
	l.wmu.Lock()
	res, err := l.insCall.ExecContext(ctx, l.run, now, l.redact(session), l.redact(tool), callDigest(args, d), d.Verdict.String(), d.Code, l.redact(d.Reason), start, nil)
	l.wmu.Unlock()
	return insertedID(what, res, err)
}

// RecordRefusal records a call that did not run. Nothing waits for it, so
// it is written in the background (and on Close at the latest).
func (l *Ledger) RecordRefusal(session, tool string, args json.RawMessage, d Decision) {
	now, digest := l.stamp(), callDigest(args, d)
	session, tool, reason := l.redact(session), l.redact(tool), l.redact(d.Reason)
	l.deferWrite(func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, l.insCall).ExecContext(ctx, l.run, now, session, tool, digest, d.Verdict.String(), d.Code, reason, nil, nil)
		return err
	})
}

// RecordEndLater records a started call's terminal outcome in the
// background. If quiver dies first, the call reads outcome_unknown: the
// safe side, since quiver never retries such a call.
func (l *Ledger) RecordEndLater(call int64, o Outcome, detail string) {
	now, detail := l.stamp(), l.redact(detail)
	if call < 0 {
		l.endJournaled(call, o, detail, now)
		return
	}
	l.deferWrite(func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, l.updEnd).ExecContext(ctx, string(o), detail, now, now, call)
		return err
	})
}

// callDigest is what the ledger records instead of the arguments: the
// decision's digest of the canonical arguments, or of the raw bytes when
// the call was refused before they were read.
func callDigest(args json.RawMessage, d Decision) string {
	if d.Digest != "" {
		return d.Digest
	}
	return digestOf(args)
}

// RecordApproval records how an ask was settled: e.g. "once", "session",
// "denied", "timeout", "unavailable", "grant 12".
func (l *Ledger) RecordApproval(ctx context.Context, call int64, approval string) error {
	return l.update(ctx, "record approval", `UPDATE calls SET approval = ? WHERE id = ?`, l.redact(approval), call)
}

// RecordStart records that the call was forwarded.
func (l *Ledger) RecordStart(ctx context.Context, call int64) error {
	return l.update(ctx, "record start", `UPDATE calls SET started = ? WHERE id = ?`, l.stamp(), call)
}

// RecordEnd records a started call's terminal outcome; detail is a short
// note (an error message), never the result.
func (l *Ledger) RecordEnd(ctx context.Context, call int64, o Outcome, detail string) error {
	now := l.stamp()
	return l.update(ctx, "record end", sqlUpdateEnd, string(o), l.redact(detail), now, now, call)
}

// A CallEntry is one call as the audit shows it.
type CallEntry struct {
	ID       int64         `json:"id"`
	Time     time.Time     `json:"time"`
	Session  string        `json:"session"`
	Tool     string        `json:"tool"`
	Digest   string        `json:"digest"`
	Verdict  string        `json:"verdict"`
	Code     string        `json:"code"`
	Reason   string        `json:"reason"`
	Approval string        `json:"approval,omitempty"`
	Started  time.Time     `json:"started,omitzero"`
	Ended    time.Time     `json:"ended,omitzero"`
	Outcome  Outcome       `json:"outcome,omitempty"`
	Detail   string        `json:"detail,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
}

// An AuditQuery selects calls; zero fields select everything.
type AuditQuery struct {
	Since time.Time
	// Session is a session's ledger key (id@run) or its id alone, as the
	// log prints it: the id matches that session in every run.
	Session string
	Tool    string // name or glob (* ? [..])
	Verdict string // allow, ask or deny
	Outcome Outcome
	Limit   int // 0 means 1000
}

// Audit returns matching calls, oldest first.
func (l *Ledger) Audit(ctx context.Context, q AuditQuery) ([]CallEntry, error) {
	l.settle(ctx)
	where := []string{"1=1"}
	var args []any
	if !q.Since.IsZero() {
		where = append(where, "time >= ?")
		args = append(args, q.Since.UnixMicro())
	}
	if q.Session != "" {
		// The ledger keeps id@run; the log and a host know only the id.
		where = append(where, "(session = ? OR substr(session, 1, ?) = ?)")
		args = append(args, q.Session, utf8.RuneCountInString(q.Session)+1, q.Session+"@")
	}
	if q.Tool != "" {
		// SQLite's GLOB has the same * ? [..] as the policy's globs.
		where = append(where, "tool GLOB ?")
		args = append(args, q.Tool)
	}
	if q.Verdict != "" {
		where = append(where, "verdict = ?")
		args = append(args, q.Verdict)
	}
	if q.Outcome != "" {
		where = append(where, "outcome = ?")
		args = append(args, string(q.Outcome))
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 1000
	}
	args = append(args, limit)
	return queryRows(ctx, l.db, "audit", `SELECT * FROM (SELECT id, time, session, tool, digest, verdict, code, reason, approval, started, ended, outcome, detail, duration_us
		FROM calls WHERE `+strings.Join(where, " AND ")+` ORDER BY id DESC LIMIT ?) ORDER BY id`, args, scanCall)
}

func scanCall(row rowScanner) (CallEntry, error) {
	var e CallEntry
	var t, started, ended, dur sql.NullInt64
	var approval, outcome, detail sql.NullString
	if err := row.Scan(&e.ID, &t, &e.Session, &e.Tool, &e.Digest, &e.Verdict, &e.Code, &e.Reason, &approval, &started, &ended, &outcome, &detail, &dur); err != nil {
		return e, err
	}
	e.Time, e.Started, e.Ended = fromStamp(t), fromStamp(started), fromStamp(ended)
	e.Approval, e.Outcome, e.Detail = approval.String, Outcome(outcome.String), detail.String
	e.Duration = time.Duration(dur.Int64) * time.Microsecond
	return e, nil
}

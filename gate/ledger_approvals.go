package gate

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ApprovalState is where a pending approval stands.
type ApprovalState string

// Approval states.
const (
	Pending  ApprovalState = "pending"
	Approved ApprovalState = "approved"
	Denied   ApprovalState = "denied"
	// Expired is a request whose session ended unanswered: no model can
	// retry the call, so approving it would grant nothing anyone uses. The
	// file keeps it as state 'pending' with resolved set (the table's
	// CHECK predates this state); every reader sees Expired.
	Expired ApprovalState = "expired"
)

// ExpireApprovals marks the pending requests of session as expired, when
// the session ends, and returns how many there were.
func (l *Ledger) ExpireApprovals(ctx context.Context, session string) (int64, error) {
	var n int64
	err := l.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE approvals SET resolved = ? WHERE session = ? AND state = 'pending' AND resolved IS NULL`, l.stamp(), session)
		if err != nil {
			return fmt.Errorf("expire approvals: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// An Approval is a request for a person's decision, numbered so that
// `quiver approve N` can answer it from another process.
type Approval struct {
	ID         int64  `json:"id"`
	Session    string `json:"session"`
	Tool       string `json:"tool"`
	Capability string `json:"capability"`
	Path       string `json:"path,omitempty"` // the first path asked about
	Needs      []Need `json:"needs"`
	Digest     string `json:"digest,omitempty"`
	// Justification is the model's own words for the request (an
	// execution call's justification, request_capability's reason). It
	// is never part of Reason: whatever shows a request to a person shows
	// it apart, quoted and labelled by ModelSays, so it cannot pass for
	// quiver's text (issue 22: a reason stored as the card sat in the
	// box quiver's own cards use).
	Justification string `json:"justification,omitempty"`
	// Reason is quiver's card: the text quiver wrote about the request,
	// in which anything a model chose (a path, an argument) is quoted.
	Reason   string        `json:"reason"`
	Created  time.Time     `json:"created"`
	State    ApprovalState `json:"state"`
	Lifetime Lifetime      `json:"lifetime,omitempty"`
	Resolved time.Time     `json:"resolved,omitzero"`
}

// ModelSaysLabel introduces a model's own words wherever a request is
// shown to a person.
const ModelSaysLabel = "The model says (its words, not quiver's)"

// ModelSays is the line that shows a model's words s on a card: labelled
// as the model's and quoted with %q, so that no character in s lays out
// a line or a heading of its own. "" when s is.
func ModelSays(s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf("%s: %q", ModelSaysLabel, s)
}

// RequestApproval files a pending approval for an ask decision (or returns
// the one already pending for the same call, so a model that retries does
// not pile up requests).
func (l *Ledger) RequestApproval(ctx context.Context, session, tool string, d Decision) (Approval, error) {
	a := Approval{Session: session, Tool: tool, Capability: d.Capability, Needs: d.Needs,
		Digest: d.Digest, Justification: d.Justification, Reason: d.Reason}
	id, err := l.CreateApproval(ctx, a)
	if err != nil {
		return Approval{}, err
	}
	return l.Approval(ctx, id)
}

// CreateApproval files a pending approval and returns its number, or the
// number of the same request filed before if it is pending or denied. Needs
// default to the capability (and path) alone; request_capability files
// approvals with no digest, which become grants rather than permits.
func (l *Ledger) CreateApproval(ctx context.Context, a Approval) (int64, error) {
	if len(a.Needs) == 0 {
		if a.Capability == "" {
			return 0, errors.New("create approval: no capability")
		}
		a.Needs = []Need{{Capability: a.Capability, Path: a.Path}}
	}
	if a.Path == "" {
		for _, n := range a.Needs {
			if n.Path != "" {
				a.Path = n.Path
				break
			}
		}
	}
	if a.Capability == "" {
		a.Capability = a.Needs[0].Capability
	}
	a.Redact(l.redact) // the same request again compares equal, redacted alike
	needs, err := json.Marshal(a.Needs)
	if err != nil {
		return 0, fmt.Errorf("create approval: %w", err)
	}
	var id int64
	err = l.write(ctx, func(tx *sql.Tx) error {
		// The same request again gets the one filed before while it is
		// pending, and the user's refusal once it is denied: a declined call
		// retried is not a new question.
		err := tx.QueryRowContext(ctx, `SELECT id FROM approvals WHERE (state = 'denied' OR state = 'pending' AND resolved IS NULL) AND session = ? AND tool = ? AND digest = ? AND needs = ? AND justification = ? ORDER BY id DESC LIMIT 1`,
			a.Session, a.Tool, a.Digest, string(needs), a.Justification).Scan(&id)
		if err == nil {
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("create approval: %w", err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO approvals (session, tool, capability, path, needs, digest, justification, reason, created, state) VALUES (?,?,?,?,?,?,?,?,?, 'pending')`,
			a.Session, a.Tool, a.Capability, a.Path, string(needs), a.Digest, a.Justification, a.Reason, l.stamp())
		if err != nil {
			return fmt.Errorf("create approval: %w", err)
		}
		id, err = res.LastInsertId()
		return err
	})
	return id, err
}

const approvalCols = `id, session, tool, capability, path, needs, digest, justification, reason, created, state, lifetime, resolved`

func scanApproval(row rowScanner) (Approval, error) {
	var a Approval
	var needs, state string
	var lifetime sql.NullString
	var created, resolved sql.NullInt64
	if err := row.Scan(&a.ID, &a.Session, &a.Tool, &a.Capability, &a.Path, &needs, &a.Digest, &a.Justification, &a.Reason, &created, &state, &lifetime, &resolved); err != nil {
		return a, err
	}
	if err := json.Unmarshal([]byte(needs), &a.Needs); err != nil {
		return a, fmt.Errorf("approval %d needs: %w", a.ID, err)
	}
	a.Created, a.Resolved = fromStamp(created), fromStamp(resolved)
	a.State, a.Lifetime = ApprovalState(state), Lifetime(lifetime.String)
	if a.State == Pending && resolved.Valid {
		a.State = Expired
	}
	return a, nil
}

// Approval returns approval id, or ErrNotFound.
func (l *Ledger) Approval(ctx context.Context, id int64) (Approval, error) {
	a, err := scanApproval(l.db.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("approval %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("approval %d: %w", id, err)
	}
	return a, nil
}

// An ApprovalFilter selects approvals; zero fields select all.
type ApprovalFilter struct {
	Session string
	State   ApprovalState
}

// Approvals lists approvals, oldest first.
func (l *Ledger) Approvals(ctx context.Context, f ApprovalFilter) ([]Approval, error) {
	where := []string{"1=1"}
	var args []any
	if f.Session != "" {
		where = append(where, "session = ?")
		args = append(args, f.Session)
	}
	switch f.State {
	case "":
	case Pending:
		where = append(where, "state = 'pending' AND resolved IS NULL")
	case Expired:
		where = append(where, "state = 'pending' AND resolved IS NOT NULL")
	default:
		where = append(where, "state = ?")
		args = append(args, string(f.State))
	}
	return queryRows(ctx, l.db, "list approvals", `SELECT `+approvalCols+` FROM approvals WHERE `+strings.Join(where, " AND ")+` ORDER BY id`, args, scanApproval)
}

// A Resolution is a person's answer to an approval.
type Resolution struct {
	Approve bool
	// Lifetime of what approving creates: Once (default) gives a permit
	// for the exact call (or once grants when the approval has no
	// digest); ForSession and Persistent give grants.
	Lifetime Lifetime
	// Expires bounds persistent grants; zero means until revoked.
	Expires time.Time
}

// ResolveApproval answers a pending approval, and on approval creates the
// permit or grants that let the model's retry through. Answering twice
// returns ErrResolved: the first answer stands. An approval that holds a
// path quiver could not place (Need.Unresolved) becomes a one-use permit
// whatever Lifetime says; the returned Approval's Lifetime says once.
func (l *Ledger) ResolveApproval(ctx context.Context, id int64, r Resolution) (Approval, error) {
	if r.Lifetime == "" {
		r.Lifetime = Once
	}
	switch r.Lifetime {
	case Once, ForSession, Persistent:
	default:
		return Approval{}, fmt.Errorf("resolve approval %d: lifetime %q is not once, session or persistent", id, r.Lifetime)
	}
	err := l.write(ctx, func(tx *sql.Tx) error {
		a, err := scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("approval %d: %w", id, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("approval %d: %w", id, err)
		}
		if a.State != Pending {
			return fmt.Errorf("approval %d is %s: %w", id, a.State, ErrResolved)
		}
		now := l.now()
		state, lifetime := Denied, any(nil)
		if r.Approve && onceOnly(a.Needs) {
			// A path quiver could not place is approved for this exact
			// call, whatever lifetime was asked for.
			r.Lifetime = Once
		}
		if r.Approve {
			state, lifetime = Approved, string(r.Lifetime)
			if err := l.grantFor(ctx, tx, a, r, now); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE approvals SET state = ?, lifetime = ?, resolved = ? WHERE id = ?`, string(state), lifetime, now.UnixMicro(), id)
		if err != nil {
			return fmt.Errorf("resolve approval %d: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return Approval{}, err
	}
	return l.Approval(ctx, id)
}

// onceOnly reports whether needs hold a path quiver could not place,
// which only a one-use permit may answer.
func onceOnly(needs []Need) bool {
	for _, n := range needs {
		if n.Unresolved != "" {
			return true
		}
	}
	return false
}

func (l *Ledger) grantFor(ctx context.Context, tx *sql.Tx, a Approval, r Resolution, now time.Time) error {
	if r.Lifetime == Once && a.Digest != "" {
		_, err := insertPermit(ctx, tx, a.Session, a.Tool, a.Digest, a.ID, now, l.permitTTL)
		return err
	}
	if onceOnly(a.Needs) {
		return fmt.Errorf("resolve approval %d: it holds a path quiver could not place and no call digest to bind a permit to", a.ID)
	}
	for _, n := range a.Needs {
		g := Grant{Capability: n.Capability, Lifetime: r.Lifetime, Session: a.Session, Approval: a.ID}
		if r.Lifetime == Persistent {
			g.Expires = r.Expires
		}
		if n.Path != "" {
			g.Scope, g.Path = ScopePath, n.Path
		} else {
			g.Scope, g.Tool = ScopeTool, a.Tool
		}
		if err := g.validate(); err != nil {
			return fmt.Errorf("resolve approval %d: %w", a.ID, err)
		}
		if _, err := insertGrant(ctx, tx, g, now.UnixMicro()); err != nil {
			return err
		}
	}
	return nil
}

package gate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Scope is what a grant covers: a tool, or a path and what is under it.
type Scope string

// Grant scopes.
const (
	ScopeTool Scope = "tool"
	ScopePath Scope = "path"
)

// Lifetime is how long an approval or grant lasts.
type Lifetime string

// Lifetimes.
const (
	Once       Lifetime = "once"
	ForSession Lifetime = "session"
	Persistent Lifetime = "persistent"
)

// A Grant lets calls through that the policy would ask about.
type Grant struct {
	ID    int64 `json:"id"`
	Scope Scope `json:"scope"`
	// Capability is what the grant gives: for a path, read_outside_fence
	// or mutate_outside_fence (which covers reading too); for a tool, a
	// class such as "execute", or "" for any ask about the tool.
	Capability string `json:"capability"`
	// Tool limits the grant to one tool; required for ScopeTool, optional
	// ("" = any tool) for ScopePath.
	Tool string `json:"tool,omitempty"`
	// Path (ScopePath) is an absolute, resolved path: the grant covers it
	// and everything under it.
	Path     string   `json:"path,omitempty"`
	Lifetime Lifetime `json:"lifetime"`
	// Session binds once and session grants; persistent ones ignore it.
	Session  string    `json:"session,omitempty"`
	Expires  time.Time `json:"expires,omitzero"`
	Created  time.Time `json:"created"`
	Revoked  time.Time `json:"revoked,omitzero"`
	Used     time.Time `json:"used,omitzero"` // once grants
	Approval int64     `json:"approval,omitempty"`
}

func (g Grant) validate() error {
	switch g.Scope {
	case ScopeTool:
		if g.Tool == "" {
			return errors.New("a tool grant needs a tool")
		}
	case ScopePath:
		if !filepath.IsAbs(g.Path) {
			return fmt.Errorf("a path grant needs an absolute path, not %q", g.Path)
		}
		if g.Capability != CapReadOutside && g.Capability != CapMutateOutside {
			return fmt.Errorf("a path grant gives %s or %s, not %q", CapReadOutside, CapMutateOutside, g.Capability)
		}
	default:
		return fmt.Errorf("scope %q is not tool or path", g.Scope)
	}
	switch g.Lifetime {
	case Once, ForSession:
		if g.Session == "" {
			return fmt.Errorf("a %s grant needs a session", g.Lifetime)
		}
	case Persistent:
	default:
		return fmt.Errorf("lifetime %q is not once, session or persistent", g.Lifetime)
	}
	return nil
}

// AddGrant stores g and returns its id.
func (l *Ledger) AddGrant(ctx context.Context, g Grant) (int64, error) {
	if g.Scope == ScopePath {
		g.Path = filepath.Clean(g.Path)
	}
	if err := g.validate(); err != nil {
		return 0, fmt.Errorf("add grant: %w", err)
	}
	var id int64
	err := l.write(ctx, func(tx *sql.Tx) error {
		var err error
		id, err = insertGrant(ctx, tx, g, l.stamp())
		return err
	})
	return id, err
}

func insertGrant(ctx context.Context, tx *sql.Tx, g Grant, now int64) (int64, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO grants (scope, capability, tool, path, lifetime, session, expires, created, approval) VALUES (?,?,?,?,?,?,?,?,?)`,
		string(g.Scope), g.Capability, g.Tool, g.Path, string(g.Lifetime), g.Session, toStamp(g.Expires), now, nullID(g.Approval))
	return insertedID("add grant", res, err)
}

// A GrantFilter selects grants. By default only live ones (not revoked,
// used or expired); All includes the rest.
type GrantFilter struct {
	Session string // "" for every session; persistent grants always match
	All     bool
}

// Grants lists grants, newest first.
func (l *Ledger) Grants(ctx context.Context, f GrantFilter) ([]Grant, error) {
	where := []string{"1=1"}
	var args []any
	if !f.All {
		where = append(where, "revoked IS NULL AND used IS NULL AND (expires IS NULL OR expires > ?)")
		args = append(args, l.stamp())
	}
	if f.Session != "" {
		where = append(where, "(lifetime = 'persistent' OR session = ?)")
		args = append(args, f.Session)
	}
	return l.queryGrants(ctx, strings.Join(where, " AND ")+" ORDER BY id DESC", args...)
}

func (l *Ledger) queryGrants(ctx context.Context, where string, args ...any) ([]Grant, error) {
	return queryRows(ctx, l.db, "list grants", `SELECT id, scope, capability, tool, path, lifetime, session, expires, created, revoked, used, approval FROM grants WHERE `+where, args, scanGrant)
}

func scanGrant(row rowScanner) (Grant, error) {
	var g Grant
	var scope, lifetime string
	var expires, created, revoked, used, approval sql.NullInt64
	if err := row.Scan(&g.ID, &scope, &g.Capability, &g.Tool, &g.Path, &lifetime, &g.Session, &expires, &created, &revoked, &used, &approval); err != nil {
		return g, err
	}
	g.Scope, g.Lifetime = Scope(scope), Lifetime(lifetime)
	g.Expires, g.Created, g.Revoked, g.Used = fromStamp(expires), fromStamp(created), fromStamp(revoked), fromStamp(used)
	g.Approval = approval.Int64
	return g, nil
}

// RevokeGrant ends a grant now. Revoking an unknown or already revoked
// grant returns ErrNotFound.
func (l *Ledger) RevokeGrant(ctx context.Context, id int64) error {
	return l.update(ctx, "revoke grant", `UPDATE grants SET revoked = ? WHERE id = ? AND revoked IS NULL`, l.stamp(), id)
}

// covers reports whether g meets need n for tool.
func (g Grant) covers(n Need, tool string) bool {
	if n.Unresolved != "" {
		// A path quiver could not place: no grant knows where it leads,
		// so only a permit for the exact call meets it.
		return false
	}
	switch g.Scope {
	case ScopeTool:
		return n.Path == "" && g.Tool == tool && (g.Capability == "" || g.Capability == n.Capability)
	case ScopePath:
		if n.Path == "" || (g.Tool != "" && g.Tool != tool) {
			return false
		}
		capOK := g.Capability == n.Capability || (g.Capability == CapMutateOutside && n.Capability == CapReadOutside)
		return capOK && within(n.Path, g.Path)
	}
	return false
}

type coverage int

const (
	coveredByGrant coverage = iota + 1
	coveredByPermit
)

// cover tries to meet every need of an ask: first with lasting grants,
// then a permit for this exact call, then once grants. Permits and once
// grants are used up atomically, so two racing calls cannot share one. Any
// ledger error leaves the call at ask: a fault never grants.
func (l *Ledger) cover(ctx context.Context, session, tool, digest string, needs []Need) (coverage, int64, bool) {
	grants, err := l.queryGrants(ctx, `revoked IS NULL AND used IS NULL AND (expires IS NULL OR expires > ?)
		AND (lifetime = 'persistent' OR session = ?) AND (tool = '' OR tool = ?) ORDER BY id`, l.stamp(), session, tool)
	if err != nil {
		return 0, 0, false
	}
	var lasting, once []Grant
	for _, g := range grants {
		if g.Lifetime == Once {
			once = append(once, g)
		} else {
			lasting = append(lasting, g)
		}
	}
	if ids, ok := coverAll(lasting, needs, tool); ok {
		return coveredByGrant, ids[0], true
	}
	var permit int64
	err = l.write(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `UPDATE permits SET used = ? WHERE id = (
			SELECT id FROM permits WHERE session = ? AND tool = ? AND digest = ? AND used IS NULL AND expires > ? ORDER BY id LIMIT 1)
			RETURNING id`, l.stamp(), session, tool, digest, l.stamp()).Scan(&permit)
	})
	if err == nil && permit != 0 {
		return coveredByPermit, permit, true
	}
	if len(once) == 0 {
		return 0, 0, false
	}
	ids, ok := coverAll(append(lasting, once...), needs, tool)
	if !ok {
		return 0, 0, false
	}
	var onceIDs []int64
	for _, id := range ids {
		for _, g := range once {
			if g.ID == id && !containsID(onceIDs, id) {
				onceIDs = append(onceIDs, id)
			}
		}
	}
	err = l.write(ctx, func(tx *sql.Tx) error {
		for _, id := range onceIDs {
			res, err := tx.ExecContext(ctx, `UPDATE grants SET used = ? WHERE id = ? AND used IS NULL AND revoked IS NULL`, l.stamp(), id)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return ErrResolved // someone else used it first
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, false
	}
	return coveredByGrant, ids[0], true
}

// coverAll returns, per need, the first grant that covers it.
func coverAll(grants []Grant, needs []Need, tool string) ([]int64, bool) {
	if len(needs) == 0 {
		return nil, false
	}
	ids := make([]int64, 0, len(needs))
	for _, n := range needs {
		found := false
		for _, g := range grants {
			if g.covers(n, tool) {
				ids = append(ids, g.ID)
				found = true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return ids, true
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

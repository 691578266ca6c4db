package gate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The pins: every tool definition quiver has consented to, as history.
// tool_defs holds each definition once, by digest; tool_pins is the
// history of pins (the latest row of a tool is in force), never updated
// or deleted, so every accepted definition can be read back; tool_holds
// is the one changed definition each tool waits with, if any; pin_clock
// ticks at every pin and reject, so a running quiver can see in one row
// that another process decided.
const pinSchema = `
CREATE TABLE IF NOT EXISTS tool_defs (
	digest     TEXT PRIMARY KEY,
	definition TEXT NOT NULL,
	first_seen INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tool_pins (
	id     INTEGER PRIMARY KEY,
	server TEXT NOT NULL,
	tool   TEXT NOT NULL,
	digest TEXT NOT NULL REFERENCES tool_defs(digest),
	time   INTEGER NOT NULL,
	how    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tool_pins_tool ON tool_pins(server, tool, id);
CREATE TABLE IF NOT EXISTS tool_holds (
	server TEXT NOT NULL,
	tool   TEXT NOT NULL,
	digest TEXT NOT NULL REFERENCES tool_defs(digest),
	seen   INTEGER NOT NULL,
	state  TEXT NOT NULL,
	PRIMARY KEY (server, tool)
);
CREATE TABLE IF NOT EXISTS pin_clock (id INTEGER PRIMARY KEY CHECK (id = 1), tick INTEGER NOT NULL);
INSERT OR IGNORE INTO pin_clock (id, tick) VALUES (1, 0);
`

// How a pin came to be (tool_pins.how); registry names the same values.
const (
	PinFirstSight = "first_sight"
	PinAccepted   = "accepted"
	PinAuto       = "auto"
)

// Hold states.
const (
	HoldPending  = "held"
	HoldRejected = "rejected"
)

// A ToolPin is one pin in a tool's history.
type ToolPin struct {
	ID           int64
	Server, Tool string
	Digest       string
	Time         time.Time
	How          string
}

// A HeldTool is a tool whose server offers a definition other than the
// pinned one.
type HeldTool struct {
	Server, Tool string
	Digest       string // held
	Pinned       string // in force
	Seen         time.Time
	State        string // HoldPending or HoldRejected
}

// ToolPins returns the digest pinned now for each of server's tools, and
// the digest held for each that waits with a changed definition.
func (l *Ledger) ToolPins(ctx context.Context, server string) (pinned, held map[string]string, err error) {
	pinned, held = map[string]string{}, map[string]string{}
	rows, err := l.db.QueryContext(ctx, `SELECT p.tool, p.digest FROM tool_pins p
		WHERE p.server = ? AND p.id = (SELECT max(id) FROM tool_pins q WHERE q.server = p.server AND q.tool = p.tool)`, server)
	if err != nil {
		return nil, nil, fmt.Errorf("read pins: %w", err)
	}
	if err := scanPairs(rows, pinned); err != nil {
		return nil, nil, fmt.Errorf("read pins: %w", err)
	}
	rows, err = l.db.QueryContext(ctx, `SELECT tool, digest FROM tool_holds WHERE server = ?`, server)
	if err != nil {
		return nil, nil, fmt.Errorf("read holds: %w", err)
	}
	if err := scanPairs(rows, held); err != nil {
		return nil, nil, fmt.Errorf("read holds: %w", err)
	}
	return pinned, held, nil
}

func scanPairs(rows *sql.Rows, into map[string]string) error {
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		into[k] = v
	}
	return rows.Err()
}

// ToolDefinition returns the definition stored under digest (canonical
// JSON), or ErrNotFound.
func (l *Ledger) ToolDefinition(ctx context.Context, digest string) ([]byte, error) {
	var def string
	err := l.db.QueryRowContext(ctx, `SELECT definition FROM tool_defs WHERE digest = ?`, digest).Scan(&def)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("tool definition %s: %w", digest, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("tool definition %s: %w", digest, err)
	}
	return []byte(def), nil
}

func insertDef(ctx context.Context, tx *sql.Tx, digest string, def []byte, now int64) error {
	_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO tool_defs (digest, definition, first_seen) VALUES (?, ?, ?)`, digest, string(def), now)
	return err
}

func tickPins(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `UPDATE pin_clock SET tick = tick + 1 WHERE id = 1`)
	return err
}

// PinTool pins def (canonical JSON under digest) for server's tool. With
// PinFirstSight it pins only if nothing is pinned yet; otherwise it adds
// to the history and forgets the tool's hold if it held this definition.
// It returns the digest pinned after it.
func (l *Ledger) PinTool(ctx context.Context, server, tool, digest string, def []byte, how string) (string, error) {
	var pinned string
	err := l.write(ctx, func(tx *sql.Tx) error {
		now := l.stamp()
		if how == PinFirstSight {
			err := tx.QueryRowContext(ctx, `SELECT digest FROM tool_pins WHERE server = ? AND tool = ? ORDER BY id DESC LIMIT 1`, server, tool).Scan(&pinned)
			if err == nil {
				return nil // pinned by another process meanwhile
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		if err := insertDef(ctx, tx, digest, def, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO tool_pins (server, tool, digest, time, how) VALUES (?, ?, ?, ?, ?)`,
			server, tool, digest, now, how); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM tool_holds WHERE server = ? AND tool = ? AND digest = ?`, server, tool, digest); err != nil {
			return err
		}
		pinned = digest
		return tickPins(ctx, tx)
	})
	if err != nil {
		return "", fmt.Errorf("pin %s of %s: %w", tool, server, err)
	}
	return pinned, nil
}

// HoldTool records def as the definition server's tool waits with; a
// different one held before is replaced (and its rejection with it). It
// says whether a person has rejected exactly this definition.
func (l *Ledger) HoldTool(ctx context.Context, server, tool, digest string, def []byte) (rejected bool, err error) {
	err = l.write(ctx, func(tx *sql.Tx) error {
		now := l.stamp()
		if err := insertDef(ctx, tx, digest, def, now); err != nil {
			return err
		}
		var was, state string
		err := tx.QueryRowContext(ctx, `SELECT digest, state FROM tool_holds WHERE server = ? AND tool = ?`, server, tool).Scan(&was, &state)
		switch {
		case err == nil && was == digest:
			rejected = state == HoldRejected
			_, err = tx.ExecContext(ctx, `UPDATE tool_holds SET seen = ? WHERE server = ? AND tool = ?`, now, server, tool)
			return err
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if _, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO tool_holds (server, tool, digest, seen, state) VALUES (?, ?, ?, ?, ?)`,
			server, tool, digest, now, HoldPending); err != nil {
			return err
		}
		return dropUnused(ctx, tx, was)
	})
	if err != nil {
		return false, fmt.Errorf("hold %s of %s: %w", tool, server, err)
	}
	return rejected, nil
}

// UnholdTool forgets server's tool's held definition: its server offers
// the pinned one again.
func (l *Ledger) UnholdTool(ctx context.Context, server, tool string) error {
	err := l.write(ctx, func(tx *sql.Tx) error {
		var was string
		err := tx.QueryRowContext(ctx, `DELETE FROM tool_holds WHERE server = ? AND tool = ? RETURNING digest`, server, tool).Scan(&was)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		return dropUnused(ctx, tx, was)
	})
	if err != nil {
		return fmt.Errorf("unhold %s of %s: %w", tool, server, err)
	}
	return nil
}

// dropUnused deletes a definition that no pin and no hold refers to any
// more: a server that changes a tool at every list would otherwise grow
// the ledger by a definition each time. Every pinned one is kept.
func dropUnused(ctx context.Context, tx *sql.Tx, digest string) error {
	if digest == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM tool_defs WHERE digest = ?
		AND NOT EXISTS (SELECT 1 FROM tool_pins WHERE digest = ?)
		AND NOT EXISTS (SELECT 1 FROM tool_holds WHERE digest = ?)`, digest, digest, digest)
	return err
}

// RejectTool marks server's tool's held definition rejected: it stays
// held. ErrNotFound when nothing is held for it.
func (l *Ledger) RejectTool(ctx context.Context, server, tool string) error {
	return l.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tool_holds SET state = ? WHERE server = ? AND tool = ?`, HoldRejected, server, tool)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("no changed definition of %s of %s is held: %w", tool, server, ErrNotFound)
		}
		return tickPins(ctx, tx)
	})
}

// AcceptHeld pins the definition server's tool is held with, as a
// person's accept. A digest other than "" must be the held one: a page
// accepts exactly what it showed, not a definition that arrived since.
// ErrNotFound when nothing (or another definition) is held.
func (l *Ledger) AcceptHeld(ctx context.Context, server, tool, digest string) (HeldTool, error) {
	held, err := l.HeldTools(ctx, server)
	if err != nil {
		return HeldTool{}, err
	}
	for _, h := range held {
		if h.Tool != tool {
			continue
		}
		if digest != "" && h.Digest != digest {
			return HeldTool{}, fmt.Errorf("%s of %s changed again since it was shown; look again: %w", tool, server, ErrNotFound)
		}
		def, err := l.ToolDefinition(ctx, h.Digest)
		if err != nil {
			return HeldTool{}, err
		}
		if _, err := l.PinTool(ctx, server, tool, h.Digest, def, PinAccepted); err != nil {
			return HeldTool{}, err
		}
		return h, nil
	}
	return HeldTool{}, fmt.Errorf("no changed definition of %s of %s is held: %w", tool, server, ErrNotFound)
}

// HeldTools lists the held definitions, of server or ("") of every server.
func (l *Ledger) HeldTools(ctx context.Context, server string) ([]HeldTool, error) {
	return queryRows(ctx, l.db, "read holds", `SELECT h.server, h.tool, h.digest, h.seen, h.state,
		coalesce((SELECT digest FROM tool_pins p WHERE p.server = h.server AND p.tool = h.tool ORDER BY id DESC LIMIT 1), '')
		FROM tool_holds h WHERE ? = '' OR h.server = ? ORDER BY h.server, h.tool`, []any{server, server},
		func(row rowScanner) (HeldTool, error) {
			var h HeldTool
			var seen sql.NullInt64
			err := row.Scan(&h.Server, &h.Tool, &h.Digest, &seen, &h.State, &h.Pinned)
			h.Seen = fromStamp(seen)
			return h, err
		})
}

// PinHistory lists every pin of server's tool, oldest first: each
// definition that was ever in force, and how it came to be.
func (l *Ledger) PinHistory(ctx context.Context, server, tool string) ([]ToolPin, error) {
	return queryRows(ctx, l.db, "read pin history", `SELECT id, server, tool, digest, time, how FROM tool_pins
		WHERE server = ? AND tool = ? ORDER BY id`, []any{server, tool},
		func(row rowScanner) (ToolPin, error) {
			var p ToolPin
			var t sql.NullInt64
			err := row.Scan(&p.ID, &p.Server, &p.Tool, &p.Digest, &t, &p.How)
			p.Time = fromStamp(t)
			return p, err
		})
}

// PinClock changes whenever any process pins a definition or rejects one.
func (l *Ledger) PinClock(ctx context.Context) (int64, error) {
	var tick int64
	if err := l.db.QueryRowContext(ctx, `SELECT tick FROM pin_clock WHERE id = 1`).Scan(&tick); err != nil {
		return 0, fmt.Errorf("read the pin clock: %w", err)
	}
	return tick, nil
}

package gate

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// The Ledger is quiver's memory of calls, grants and approvals: one SQLite
// file in the state directory, shared by every quiver process on the
// machine (each `quiver serve` a host starts, and `quiver approve`/`audit`
// from a terminal). It stores argument digests, never raw arguments, which
// may carry secrets.
//
// Concurrency: WAL lets readers run beside a writer; busy_timeout makes a
// writer from another process wait instead of failing; _txlock=immediate
// makes every read-then-write transaction take the write lock up front, so
// it cannot fail with "database is locked" when another writer commits in
// between. Within one process, writes also queue on a mutex, which is
// cheaper than SQLite's sleep-and-retry busy handler.
type Ledger struct {
	db        *sql.DB
	now       func() time.Time
	permitTTL time.Duration
	alive     func(pid int, start int64) bool
	log       *slog.Logger
	host      string
	run       int64
	recovered int
	wmu       sync.Mutex

	journalDir string
	// recoveredJournals were read back by init, and go once it commits.
	recoveredJournals []string

	// later holds writes that nothing waits for (starts already in the
	// journal, terminal outcomes, refusals); one goroutine commits them in
	// batches, so a call's path pays for no transaction at all.
	later     chan func(context.Context, *sql.Tx) error
	flushed   chan struct{}
	settled   []chan struct{} // the flusher's: settle calls to tell after this transaction
	closeOnce sync.Once
	closed    atomic.Bool
	// cmu orders Close against deferWrite: a write queued after Close
	// closed the queue would panic (a send on a closed channel).
	cmu sync.RWMutex

	// journal makes a call's start durable before it is forwarded
	// (journal.go).
	journal *journal

	// Prepared once: the pure-Go SQLite spends more preparing these than
	// running them.
	insCall, insEnded, updEnd *sql.Stmt
}

const (
	sqlInsertCall  = `INSERT INTO calls (run, time, session, tool, digest, verdict, code, reason, started, seq) VALUES (?,?,?,?,?,?,?,?,?,?)`
	sqlInsertEnded = `INSERT INTO calls (run, time, session, tool, digest, verdict, code, reason, started, seq, outcome, detail, ended, duration_us) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
	sqlUpdateEnd   = `UPDATE calls SET outcome = ?, detail = ?, ended = ?, duration_us = CASE WHEN started IS NULL THEN NULL ELSE ? - started END WHERE id = ? AND outcome IS NULL`
)

// PermitTTL is how long a one-use permit stays valid by default.
const PermitTTL = 5 * time.Minute

// Errors callers branch on.
var (
	ErrNotFound = errors.New("not found")
	ErrResolved = errors.New("approval already resolved")
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

// A LedgerOption adjusts OpenLedger.
type LedgerOption func(*Ledger)

// WithClock replaces time.Now, so tests can move time without sleeping.
func WithClock(now func() time.Time) LedgerOption { return func(l *Ledger) { l.now = now } }

// WithPermitTTL sets how long one-use permits stay valid (default 5 min).
func WithPermitTTL(d time.Duration) LedgerOption { return func(l *Ledger) { l.permitTTL = d } }

// withAlive replaces the process-liveness check (tests simulate crashes).
func withAlive(f func(pid int) bool) LedgerOption {
	return func(l *Ledger) { l.alive = func(pid int, _ int64) bool { return f(pid) } }
}

const ledgerSchema = `
CREATE TABLE IF NOT EXISTS runs (
	id      INTEGER PRIMARY KEY,
	pid     INTEGER NOT NULL,
	pid_start INTEGER,
	host    TEXT    NOT NULL,
	started INTEGER NOT NULL,
	ended   INTEGER
);
CREATE TABLE IF NOT EXISTS calls (
	id       INTEGER PRIMARY KEY,
	run      INTEGER,
	time     INTEGER NOT NULL,
	session  TEXT    NOT NULL,
	tool     TEXT    NOT NULL,
	digest   TEXT    NOT NULL,
	verdict  TEXT    NOT NULL,
	code     TEXT    NOT NULL,
	reason   TEXT    NOT NULL,
	approval TEXT,
	started  INTEGER,
	outcome  TEXT,
	detail   TEXT,
	ended    INTEGER,
	duration_us INTEGER,
	seq      INTEGER
);
CREATE INDEX IF NOT EXISTS calls_time ON calls(time);
CREATE INDEX IF NOT EXISTS calls_open ON calls(run) WHERE started IS NOT NULL AND outcome IS NULL;
CREATE TABLE IF NOT EXISTS grants (
	id         INTEGER PRIMARY KEY,
	scope      TEXT    NOT NULL CHECK (scope IN ('tool','path')),
	capability TEXT    NOT NULL,
	tool       TEXT    NOT NULL,
	path       TEXT    NOT NULL,
	lifetime   TEXT    NOT NULL CHECK (lifetime IN ('once','session','persistent')),
	session    TEXT    NOT NULL,
	expires    INTEGER,
	created    INTEGER NOT NULL,
	revoked    INTEGER,
	used       INTEGER,
	approval   INTEGER
);
CREATE INDEX IF NOT EXISTS grants_live ON grants(session) WHERE revoked IS NULL AND used IS NULL;
CREATE TABLE IF NOT EXISTS approvals (
	id            INTEGER PRIMARY KEY,
	session       TEXT    NOT NULL,
	tool          TEXT    NOT NULL,
	capability    TEXT    NOT NULL,
	path          TEXT    NOT NULL,
	needs         TEXT    NOT NULL,
	digest        TEXT    NOT NULL,
	justification TEXT    NOT NULL,
	reason        TEXT    NOT NULL,
	created       INTEGER NOT NULL,
	state         TEXT    NOT NULL CHECK (state IN ('pending','approved','denied')),
	lifetime      TEXT,
	resolved      INTEGER
);
CREATE INDEX IF NOT EXISTS approvals_pending ON approvals(session) WHERE state = 'pending';
CREATE TABLE IF NOT EXISTS permits (
	id       INTEGER PRIMARY KEY,
	session  TEXT    NOT NULL,
	tool     TEXT    NOT NULL,
	digest   TEXT    NOT NULL,
	created  INTEGER NOT NULL,
	expires  INTEGER NOT NULL,
	used     INTEGER,
	approval INTEGER
);
CREATE INDEX IF NOT EXISTS permits_key ON permits(session, tool, digest) WHERE used IS NULL;
`

// OpenLedger opens (creating if needed) the ledger at path. It registers
// this process, and closes as outcome_unknown every call that started
// under a quiver process that has since died or closed without recording
// an end; Recovered says how many.
func OpenLedger(ctx context.Context, path string, opts ...LedgerOption) (*Ledger, error) {
	l := &Ledger{now: time.Now, permitTTL: PermitTTL, alive: processAlive, log: slog.Default()}
	for _, o := range opts {
		o(l)
	}
	l.host, _ = os.Hostname()
	l.journalDir = journalDir(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" +
		"&_pragma=foreign_keys(1)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	l.db = db
	if err := l.init(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	if l.insCall, err = db.PrepareContext(ctx, sqlInsertCall); err == nil {
		if l.updEnd, err = db.PrepareContext(ctx, sqlUpdateEnd); err == nil {
			l.insEnded, err = db.PrepareContext(ctx, sqlInsertEnded)
		}
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: prepare: %w", path, err)
	}
	for _, p := range l.recoveredJournals {
		os.Remove(p)
	}
	if l.journal, err = openJournal(path, l.run); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	l.later = make(chan func(context.Context, *sql.Tx) error, 4096)
	l.flushed = make(chan struct{})
	go l.flushLoop()
	return l, nil
}

// flushLoop commits deferred writes, as many as are waiting in one
// transaction, until Close.
func (l *Ledger) flushLoop() {
	defer close(l.flushed)
	ctx := context.Background()
	linger := time.NewTimer(0)
	<-linger.C
	for f := range l.later {
		batch := []func(context.Context, *sql.Tx) error{f}
		// Nothing waits for these writes: gather what comes in the next
		// few milliseconds, so that a lone caller's starts and ends share
		// a transaction too.
		linger.Reset(flushLinger)
	more:
		for len(batch) < 512 {
			select {
			case g, ok := <-l.later:
				if !ok {
					break more
				}
				batch = append(batch, g)
			case <-linger.C:
				break more
			}
		}
		if !linger.Stop() {
			select {
			case <-linger.C:
			default:
			}
		}
		err := l.write(ctx, func(tx *sql.Tx) error {
			for _, g := range batch {
				if err := g(ctx, tx); err != nil {
					return err
				}
			}
			return nil
		})
		l.journal.commit(err == nil)
		if err != nil {
			// One bad row must not lose the others: retry them one by one.
			for _, g := range batch {
				err := l.write(ctx, func(tx *sql.Tx) error { return g(ctx, tx) })
				l.journal.commit(err == nil)
			}
		}
		for _, done := range l.settled {
			select {
			case done <- struct{}{}:
			default:
			}
		}
		l.settled = l.settled[:0]
	}
}

// flushLinger is how long the flusher waits for more writes to batch: the
// most an end can lag behind its call, and at a crash, the window in
// which an ended call may still read outcome_unknown (the safe side).
const flushLinger = 10 * time.Millisecond

// deferWrite queues a write nothing waits for. When the queue is full it
// waits for room: the writes keep their order (a call's end after its
// start), and none is dropped.
func (l *Ledger) deferWrite(f func(context.Context, *sql.Tx) error) {
	l.cmu.RLock()
	defer l.cmu.RUnlock()
	if l.closed.Load() {
		// A call that ends after Close is not recorded: it reads back as
		// outcome_unknown, the safe side, as after a crash.
		return
	}
	l.later <- f
}

// settle waits until every write queued before it is committed, so that a
// reader in this process sees what it recorded.
func (l *Ledger) settle(ctx context.Context) {
	if l.closed.Load() {
		return
	}
	done := make(chan struct{}, 1)
	l.deferWrite(func(context.Context, *sql.Tx) error {
		// Told once the transaction is over, not inside it: a reader
		// sees only what is committed.
		l.settled = append(l.settled, done)
		return nil
	})
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (l *Ledger) init(ctx context.Context) error {
	return l.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, ledgerSchema+pinSchema); err != nil {
			return fmt.Errorf("create tables: %w", err)
		}
		if err := migrate(ctx, tx); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO runs (pid, pid_start, host, started) VALUES (?, ?, ?, ?)`,
			os.Getpid(), nullID(processStart(os.Getpid())), l.host, l.stamp())
		if l.run, err = insertedID("register run", res, err); err != nil {
			return err
		}
		if l.recoveredJournals, err = l.recoverJournals(ctx, tx, l.journalDir); err != nil {
			return err
		}
		l.recovered, err = l.recoverLocked(ctx, tx)
		return err
	})
}

// migrate adds the columns a ledger made by an older quiver lacks: a
// call's journal sequence number (how read-back knows a start, journal.go)
// and a run's process start time (how a reused pid is told apart).
func migrate(ctx context.Context, tx *sql.Tx) error {
	for _, c := range []struct{ table, column string }{{"calls", "seq"}, {"runs", "pid_start"}} {
		var n int
		err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, c.table, c.column).Scan(&n)
		if err == nil && n == 0 {
			_, err = tx.ExecContext(ctx, `ALTER TABLE `+c.table+` ADD COLUMN `+c.column+` INTEGER`)
		}
		if err != nil {
			return fmt.Errorf("add %s.%s: %w", c.table, c.column, err)
		}
	}
	return nil
}

// recoverLocked closes the open calls of dead runs. A run is dead when it
// closed, or its process is gone from this host. Runs of other hosts are
// left alone: SQLite over a network share is unsupported anyway.
func (l *Ledger) recoverLocked(ctx context.Context, tx *sql.Tx) (int, error) {
	rows, err := tx.QueryContext(ctx, `
		SELECT DISTINCT c.run, r.pid, r.pid_start, r.host, r.ended
		FROM calls c LEFT JOIN runs r ON r.id = c.run
		WHERE c.started IS NOT NULL AND c.outcome IS NULL AND (c.run IS NULL OR c.run <> ?)`, l.run)
	if err != nil {
		return 0, fmt.Errorf("find unfinished calls: %w", err)
	}
	var dead []sql.NullInt64
	for rows.Next() {
		var run, pid, pidStart, ended sql.NullInt64
		var host sql.NullString
		if err := rows.Scan(&run, &pid, &pidStart, &host, &ended); err != nil {
			rows.Close()
			return 0, fmt.Errorf("find unfinished calls: %w", err)
		}
		switch {
		case !pid.Valid, ended.Valid:
			dead = append(dead, run)
		case host.String == l.host && !l.alive(int(pid.Int64), pidStart.Int64):
			dead = append(dead, run)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("find unfinished calls: %w", err)
	}
	total := 0
	now := l.stamp()
	for _, run := range dead {
		res, err := tx.ExecContext(ctx, `
			UPDATE calls SET outcome = ?, ended = ?, detail = 'quiver stopped before the call reported an end; it may have run'
			WHERE started IS NOT NULL AND outcome IS NULL AND run IS ?`, string(OutcomeUnknown), now, run)
		if err != nil {
			return 0, fmt.Errorf("close unfinished calls: %w", err)
		}
		n, _ := res.RowsAffected()
		total += int(n)
	}
	return total, nil
}

// Recovered is how many unfinished calls OpenLedger closed as
// outcome_unknown.
func (l *Ledger) Recovered() int { return l.recovered }

// Close marks this process's run as ended and closes the file. Calls still
// open become outcome_unknown at the next open.
func (l *Ledger) Close() error {
	l.closeOnce.Do(func() {
		l.cmu.Lock()
		l.closed.Store(true)
		close(l.later)
		l.cmu.Unlock()
	})
	<-l.flushed
	jerr := l.journal.close()
	l.wmu.Lock()
	_, err := l.db.Exec(`UPDATE runs SET ended = ? WHERE id = ?`, l.stamp(), l.run)
	l.wmu.Unlock()
	err = errors.Join(err, jerr)
	if cerr := l.db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("close ledger: %w", err)
	}
	return nil
}

// Times are stored as Unix microseconds: sortable, exact, compact.
func (l *Ledger) stamp() int64 { return l.now().UnixMicro() }

func toStamp(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func fromStamp(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMicro(n.Int64).UTC()
}

func (l *Ledger) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.db.ExecContext(ctx, q, args...)
}

// write runs f in one immediate transaction.
func (l *Ledger) write(ctx context.Context, f func(tx *sql.Tx) error) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// --- Calls ---

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
	e := journalEntry{Time: l.stamp(), Session: session, Tool: tool, Digest: callDigest(args, d), Verdict: d.Verdict.String(), Code: d.Code, Reason: d.Reason}
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
	res, err := l.insCall.ExecContext(ctx, l.run, now, session, tool, callDigest(args, d), d.Verdict.String(), d.Code, d.Reason, start, nil)
	l.wmu.Unlock()
	return insertedID(what, res, err)
}

// RecordRefusal records a call that did not run. Nothing waits for it, so
// it is written in the background (and on Close at the latest).
func (l *Ledger) RecordRefusal(session, tool string, args json.RawMessage, d Decision) {
	now, digest := l.stamp(), callDigest(args, d)
	l.deferWrite(func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, l.insCall).ExecContext(ctx, l.run, now, session, tool, digest, d.Verdict.String(), d.Code, d.Reason, nil, nil)
		return err
	})
}

// RecordEndLater records a started call's terminal outcome in the
// background. If quiver dies first, the call reads outcome_unknown: the
// safe side, since quiver never retries such a call.
func (l *Ledger) RecordEndLater(call int64, o Outcome, detail string) {
	now := l.stamp()
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
	return l.update(ctx, "record approval", `UPDATE calls SET approval = ? WHERE id = ?`, approval, call)
}

// RecordStart records that the call was forwarded.
func (l *Ledger) RecordStart(ctx context.Context, call int64) error {
	return l.update(ctx, "record start", `UPDATE calls SET started = ? WHERE id = ?`, l.stamp(), call)
}

// RecordEnd records a started call's terminal outcome; detail is a short
// note (an error message), never the result.
func (l *Ledger) RecordEnd(ctx context.Context, call int64, o Outcome, detail string) error {
	now := l.stamp()
	return l.update(ctx, "record end", sqlUpdateEnd, string(o), detail, now, now, call)
}

func (l *Ledger) update(ctx context.Context, what, q string, args ...any) error {
	res, err := l.exec(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return nil
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
	rows, err := l.db.QueryContext(ctx, `SELECT * FROM (SELECT id, time, session, tool, digest, verdict, code, reason, approval, started, ended, outcome, detail, duration_us
		FROM calls WHERE `+strings.Join(where, " AND ")+` ORDER BY id DESC LIMIT ?) ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer rows.Close()
	var out []CallEntry
	for rows.Next() {
		var e CallEntry
		var t, started, ended, dur sql.NullInt64
		var approval, outcome, detail sql.NullString
		if err := rows.Scan(&e.ID, &t, &e.Session, &e.Tool, &e.Digest, &e.Verdict, &e.Code, &e.Reason, &approval, &started, &ended, &outcome, &detail, &dur); err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		e.Time, e.Started, e.Ended = fromStamp(t), fromStamp(started), fromStamp(ended)
		e.Approval, e.Outcome, e.Detail = approval.String, Outcome(outcome.String), detail.String
		e.Duration = time.Duration(dur.Int64) * time.Microsecond
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return out, nil
}

// --- Grants ---

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

// insertedID is the row id of an INSERT, or its error wrapped with what.
func insertedID(what string, res sql.Result, err error) (int64, error) {
	if err == nil {
		var id int64
		if id, err = res.LastInsertId(); err == nil {
			return id, nil
		}
	}
	return 0, fmt.Errorf("%s: %w", what, err)
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
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
	rows, err := l.db.QueryContext(ctx, `SELECT id, scope, capability, tool, path, lifetime, session, expires, created, revoked, used, approval FROM grants WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	defer rows.Close()
	var out []Grant
	for rows.Next() {
		var g Grant
		var scope, lifetime string
		var expires, created, revoked, used, approval sql.NullInt64
		if err := rows.Scan(&g.ID, &scope, &g.Capability, &g.Tool, &g.Path, &lifetime, &g.Session, &expires, &created, &revoked, &used, &approval); err != nil {
			return nil, fmt.Errorf("list grants: %w", err)
		}
		g.Scope, g.Lifetime = Scope(scope), Lifetime(lifetime)
		g.Expires, g.Created, g.Revoked, g.Used = fromStamp(expires), fromStamp(created), fromStamp(revoked), fromStamp(used)
		g.Approval = approval.Int64
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	return out, nil
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

// --- Permits ---

// AddPermit stores a one-use permit for exactly this call (session, tool,
// argument digest), valid for the permit TTL.
func (l *Ledger) AddPermit(ctx context.Context, session, tool, digest string) (int64, error) {
	var id int64
	err := l.write(ctx, func(tx *sql.Tx) error {
		var err error
		id, err = insertPermit(ctx, tx, session, tool, digest, 0, l.now(), l.permitTTL)
		return err
	})
	return id, err
}

func insertPermit(ctx context.Context, tx *sql.Tx, session, tool, digest string, approval int64, now time.Time, ttl time.Duration) (int64, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO permits (session, tool, digest, created, expires, approval) VALUES (?,?,?,?,?,?)`,
		session, tool, digest, now.UnixMicro(), now.Add(ttl).UnixMicro(), nullID(approval))
	return insertedID("add permit", res, err)
}

// --- Approvals ---

// An Approval is a request for a person's decision, numbered so that
// `quiver approve N` can answer it from another process.
type Approval struct {
	ID            int64         `json:"id"`
	Session       string        `json:"session"`
	Tool          string        `json:"tool"`
	Capability    string        `json:"capability"`
	Path          string        `json:"path,omitempty"` // the first path asked about
	Needs         []Need        `json:"needs"`
	Digest        string        `json:"digest,omitempty"`
	Justification string        `json:"justification,omitempty"`
	Reason        string        `json:"reason"`
	Created       time.Time     `json:"created"`
	State         ApprovalState `json:"state"`
	Lifetime      Lifetime      `json:"lifetime,omitempty"`
	Resolved      time.Time     `json:"resolved,omitzero"`
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

func scanApproval(row interface{ Scan(...any) error }) (Approval, error) {
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
	rows, err := l.db.QueryContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE `+strings.Join(where, " AND ")+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	defer rows.Close()
	var out []Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, fmt.Errorf("list approvals: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	return out, nil
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

package gate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

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

	// redactor hides secrets in the text the ledger writes (SetRedactor).
	redactor atomic.Pointer[func(string) string]
}

// SetRedactor makes the ledger pass every text it writes from now on (a
// call's tool, reason and detail; an approval's every field; the start
// journal's lines) through redact. A model that read a token can put it
// in a call's arguments, and a reason or a card quotes them: the file is
// read by other processes, backed up and synced, so it holds what quiver
// would show, never more (issue 22: the output was redacted, the SQLite
// file was not).
func (l *Ledger) SetRedactor(redact func(string) string) { l.redactor.Store(&redact) }

// redact is l's redactor applied to s.
func (l *Ledger) redact(s string) string {
	if r := l.redactor.Load(); r != nil {
		return (*r)(s)
	}
	return s
}

const (
	sqlInsertCall  = `INSERT INTO calls (run, time, session, tool, digest, verdict, code, reason, started, seq) VALUES (?,?,?,?,?,?,?,?,?,?)`
	sqlInsertEnded = `INSERT INTO calls (run, time, session, tool, digest, verdict, code, reason, started, seq, outcome, detail, ended, duration_us) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
	sqlUpdateEnd   = `UPDATE calls SET outcome = ?, detail = ?, ended = ?, duration_us = CASE WHEN started IS NULL THEN NULL ELSE ? - started END WHERE id = ? AND outcome IS NULL`
)

// Errors callers branch on.
var (
	ErrNotFound = errors.New("not found")
	ErrResolved = errors.New("approval already resolved")
)

// A ledgerOption adjusts OpenLedger.
type ledgerOption func(*Ledger)

// withClock replaces time.Now, so tests can move time without sleeping.
func withClock(now func() time.Time) ledgerOption { return func(l *Ledger) { l.now = now } }

// withAlive replaces the process-liveness check (tests simulate crashes).
func withAlive(f func(pid int) bool) ledgerOption {
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
func OpenLedger(ctx context.Context, path string, opts ...ledgerOption) (*Ledger, error) {
	l := &Ledger{now: time.Now, permitTTL: defaultPermitTTL, alive: processAlive, log: slog.Default()}
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
// and a run's process start time (how a reused pid is told apart); and
// moves what an older quiver filed in the wrong column.
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
	// An older quiver filed request_capability's reason (the model's
	// words, the only request with no digest) as the card itself: it
	// moves to where every reader shows it quoted and labelled as the
	// model's (issue 22). A newer request always has its reason in
	// justification, so this touches old rows only.
	if _, err := tx.ExecContext(ctx, `UPDATE approvals SET justification = reason, reason = '' WHERE digest = '' AND justification = '' AND reason <> ''`); err != nil {
		return fmt.Errorf("move old requests' reasons: %w", err)
	}
	return nil
}

// A runRow is a quiver process as the runs table knows it: the columns
// pid, pid_start, host and ended, which say whether it can still end the
// calls it started.
type runRow struct {
	pid, pidStart, ended sql.NullInt64
	host                 sql.NullString
}

// dest is where Scan puts pid, pid_start, host, ended.
func (r *runRow) dest() []any { return []any{&r.pid, &r.pidStart, &r.host, &r.ended} }

// gone reports whether run r will never end its calls: it closed, or its
// process is gone from this host. Runs of other hosts are never gone:
// their processes cannot be checked from here.
func (l *Ledger) gone(r runRow) bool {
	return r.ended.Valid || (r.host.String == l.host && !l.alive(int(r.pid.Int64), r.pidStart.Int64))
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
		var run sql.NullInt64
		var r runRow
		if err := rows.Scan(append([]any{&run}, r.dest()...)...); err != nil {
			rows.Close()
			return 0, fmt.Errorf("find unfinished calls: %w", err)
		}
		// No runs row (or no run at all): nothing will ever end its calls.
		if !r.pid.Valid || l.gone(r) {
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

// A rowScanner is a *sql.Row or *sql.Rows: one row's Scan.
type rowScanner interface{ Scan(dest ...any) error }

// queryRows runs q and reads every row with scan; what names the query in
// its errors.
func queryRows[T any](ctx context.Context, db *sql.DB, what, q string, args []any, scan func(rowScanner) (T, error)) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

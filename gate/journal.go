package gate

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The start journal is how an allowed call's start is made durable before
// the call is forwarded without a SQLite transaction on the call's path.
// RecordStarted appends one line to this run's journal file (one write(2);
// the line is in the kernel once it returns, so it outlives a crash of
// quiver, as a commit under SQLite's synchronous=NORMAL does) and leaves
// the row to the flusher, which writes starts and ends in batches. At the
// next open, the journal of a run that died is read back: every start the
// ledger lacks is inserted and, with the run's other open calls, closed
// as outcome_unknown. The guarantee is the one the synchronous insert
// gave; what went is a transaction per call (about 90 µs, and a second
// one for the end, in the profile of issue 16).
//
// A journaled call is known by a handle until its row exists: the negative
// of its run and sequence number, so that no handle is ever a row id, and
// one from another run is never mistaken for one of this run's.
type journal struct {
	path string

	mu        sync.Mutex
	f         *os.File
	size      int64
	appended  int64 // the last sequence number written
	committed int64 // every start up to this one is in the ledger
	// Starts reach the flusher in the order their calls queue them, not
	// the order they were appended: done holds the starts past committed
	// whose rows are committed, pending those inserted in the flusher's
	// transaction, which may yet roll back.
	done    map[int64]struct{}
	pending []int64

	calls  sync.Map // handle -> *journaledCall, until its end is committed
	forgot []int64  // handles whose end is written, to drop at commit
}

// A journaledCall is a started call the flusher knows by its handle. An
// end that comes before the row is written rides in the row's insert (one
// statement a call, not two); one that comes after is an update.
type journaledCall struct {
	mu       sync.Mutex
	inserted bool
	id       int64
	ended    bool
	outcome  Outcome
	detail   string
	endedAt  int64
}

// journalEntry is one line of the journal: a call's row as RecordStarted
// would have inserted it. Seq, stored in the row too, is what read-back
// knows a start by: two starts may share their time, tool and session.
type journalEntry struct {
	Seq     int64  `json:"seq"`
	Time    int64  `json:"time"`
	Session string `json:"session"`
	Tool    string `json:"tool"`
	Digest  string `json:"digest"`
	Verdict string `json:"verdict"`
	Code    string `json:"code"`
	Reason  string `json:"reason"`
}

// journalCompactAt is the size past which the flusher empties a journal
// whose every line is in the ledger.
const journalCompactAt = 1 << 20

// journalDir is where the journals of the ledger at path live.
func journalDir(path string) string { return path + ".starts" }

func journalPath(dir string, run int64) string {
	return filepath.Join(dir, strconv.FormatInt(run, 10)+".jsonl")
}

func openJournal(ledgerPath string, run int64) (*journal, error) {
	dir := journalDir(ledgerPath)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("start journal: %w", err)
	}
	p := journalPath(dir, run)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Not this run's: a ledger.db made anew restarts its run ids, and
		// the older run's journal may hold starts that are nowhere else
		// (its quiver may even be running still). It is kept, renamed.
		aside := fmt.Sprintf("%s.older-%d", p, time.Now().UnixNano())
		if err = os.Rename(p, aside); err == nil {
			slog.Warn("start journal: a journal for this run id was there already (was the ledger made anew?); kept it", "run", run, "kept", aside)
			f, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND|os.O_EXCL, 0o600)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("start journal: %w", err)
	}
	return &journal{path: p, f: f, done: map[int64]struct{}{}}, nil
}

// handle is the id RecordStarted returns for sequence number seq of run.
func handle(run, seq int64) int64 { return -(run<<32 | seq) }

// append writes e as the next line and returns its sequence number.
func (j *journal) append(e journalEntry) (int64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e.Seq = j.appended + 1
	b, err := json.Marshal(e)
	if err != nil {
		return 0, err
	}
	b = append(b, '\n')
	if _, err := j.f.Write(b); err != nil {
		return 0, fmt.Errorf("start journal: %w", err)
	}
	j.appended, j.size = e.Seq, j.size+int64(len(b))
	return e.Seq, nil
}

// journaled makes e's start durable and queues its row; it returns the
// call's handle.
func (l *Ledger) journaled(e journalEntry) (int64, error) {
	seq, err := l.journal.append(e)
	if err != nil {
		return 0, err
	}
	h, c := handle(l.run, seq), &journaledCall{}
	l.journal.calls.Store(h, c)
	l.deferWrite(func(ctx context.Context, tx *sql.Tx) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		// A failed transaction is retried: insert whatever c says now.
		var res sql.Result
		var err error
		if c.ended {
			res, err = tx.StmtContext(ctx, l.insEnded).ExecContext(ctx, l.run, e.Time, e.Session, e.Tool, e.Digest, e.Verdict, e.Code, e.Reason, e.Time, seq,
				string(c.outcome), c.detail, c.endedAt, c.endedAt-e.Time)
		} else {
			res, err = tx.StmtContext(ctx, l.insCall).ExecContext(ctx, l.run, e.Time, e.Session, e.Tool, e.Digest, e.Verdict, e.Code, e.Reason, e.Time, seq)
		}
		if c.id, err = insertedID("record start", res, err); err != nil {
			return err
		}
		c.inserted = true
		l.journal.inserted(seq)
		if c.ended {
			l.journal.forget(h)
		}
		return nil
	})
	return h, nil
}

// endJournaled records the end of the call with handle h: in its row's
// insert when that is still to come, else as an update queued after it.
func (l *Ledger) endJournaled(h int64, o Outcome, detail string, now int64) {
	v, ok := l.journal.calls.Load(h)
	if !ok {
		return // not this run's, or ended already
	}
	c := v.(*journaledCall)
	c.mu.Lock()
	already, inserted := c.ended, c.inserted
	if !already {
		c.ended, c.outcome, c.detail, c.endedAt = true, o, detail, now
	}
	// Not held while queueing: a full queue waits for the flusher, which
	// may need c for this very call's insert.
	c.mu.Unlock()
	if already || !inserted {
		return
	}
	l.deferWrite(func(ctx context.Context, tx *sql.Tx) error {
		c.mu.Lock()
		id := c.id // the row of the last insert, should that have been retried
		c.mu.Unlock()
		_, err := tx.StmtContext(ctx, l.updEnd).ExecContext(ctx, string(o), detail, now, now, id)
		if err == nil {
			l.journal.forget(h)
		}
		return err
	})
}

// inserted notes, in the flusher's transaction, that start seq is in;
// it counts once that transaction commits.
func (j *journal) inserted(seq int64) {
	j.mu.Lock()
	j.pending = append(j.pending, seq)
	j.mu.Unlock()
}

// forget drops a handle whose end is written, once that commits: a
// transaction that fails is retried, and its end must find the row again.
func (j *journal) forget(h int64) {
	j.mu.Lock()
	j.forgot = append(j.forgot, h)
	j.mu.Unlock()
}

// commit notes how the flusher's last transaction went. When it
// committed, its starts and ends count; when it rolled back, they do not
// (the flusher retries them). A large journal whose every start is now in
// the ledger is emptied: with O_APPEND the next line goes to the start of
// the emptied file.
func (j *journal) commit(ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if ok {
		for _, h := range j.forgot {
			j.calls.Delete(h)
		}
		for _, seq := range j.pending {
			if seq > j.committed {
				j.done[seq] = struct{}{}
			}
		}
		for {
			if _, in := j.done[j.committed+1]; !in {
				break
			}
			delete(j.done, j.committed+1)
			j.committed++
		}
	}
	j.forgot, j.pending = j.forgot[:0], j.pending[:0]
	if j.size >= journalCompactAt && j.committed == j.appended {
		if j.f.Truncate(0) == nil {
			j.size = 0
		}
	}
}

// close closes the file and removes it when every start is in the ledger;
// otherwise it stays for the next open to read back.
func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	err := j.f.Close()
	if j.committed == j.appended {
		err = errors.Join(err, os.Remove(j.path))
	}
	return err
}

// recoverJournals inserts the starts that the journals of dead runs hold
// and the ledger lacks, as open calls of their run, for recoverLocked to
// close as outcome_unknown, and returns the journals it read, to be
// removed once tx commits. A journal of a live run, of a run of another
// host, or of a run the ledger never registered (planted, or left by a
// ledger.db that was removed), is left alone: its name alone is no proof
// that the starts in it were this ledger's.
func (l *Ledger) recoverJournals(ctx context.Context, tx *sql.Tx, dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read start journals: %w", err)
	}
	var done []string
	for _, ent := range ents {
		run, err := strconv.ParseInt(strings.TrimSuffix(ent.Name(), ".jsonl"), 10, 64)
		if err != nil || run == l.run || !strings.HasSuffix(ent.Name(), ".jsonl") {
			continue
		}
		var r runRow
		err = tx.QueryRowContext(ctx, `SELECT pid, pid_start, host, ended FROM runs WHERE id = ?`, run).Scan(r.dest()...)
		if errors.Is(err, sql.ErrNoRows) {
			l.log.Warn("start journal of a run this ledger never registered: left alone", "file", filepath.Join(dir, ent.Name()))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("start journal of run %d: %w", run, err)
		}
		if !l.gone(r) {
			continue
		}
		p := filepath.Join(dir, ent.Name())
		if err := l.ingestJournal(ctx, tx, run, p); err != nil {
			return nil, fmt.Errorf("start journal of run %d: %w", run, err)
		}
		done = append(done, p)
	}
	return done, nil
}

// ingestJournal inserts the starts of run's journal at p that the ledger
// lacks: those whose sequence number no row of run has. A row written
// before rows had one is matched by its start time, tool and session,
// each row to one start.
func (l *Ledger) ingestJournal(ctx context.Context, tx *sql.Tx, run int64, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	rows, err := tx.QueryContext(ctx, `SELECT seq, started, tool, session FROM calls WHERE run = ? AND started IS NOT NULL`, run)
	if err != nil {
		return err
	}
	type key struct {
		started       int64
		tool, session string
	}
	have := map[int64]bool{}
	older := map[key]int{}
	for rows.Next() {
		var seq sql.NullInt64
		var k key
		if err := rows.Scan(&seq, &k.started, &k.tool, &k.session); err != nil {
			rows.Close()
			return err
		}
		if seq.Valid {
			have[seq.Int64] = true
		} else {
			older[k]++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e journalEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // the torn last line of a crash: it was never forwarded
		}
		if have[e.Seq] {
			continue
		}
		if k := (key{e.Time, e.Tool, e.Session}); older[k] > 0 {
			older[k]--
			continue
		}
		if _, err := tx.ExecContext(ctx, sqlInsertCall, run, e.Time, e.Session, e.Tool, e.Digest, e.Verdict, e.Code, e.Reason, e.Time, e.Seq); err != nil {
			return err
		}
	}
	return sc.Err()
}

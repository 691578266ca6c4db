package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quiver-mcp/quiver/gate"
)

// waitRoom holds the calls that wait for an answer given outside the host:
// on the operator page, or with quiver approve in a terminal. A call
// opens its approval's door for as long as its card is open (the
// approval timeout at most); an answer for that approval goes through
// the door at once. Watchers learn when a door opens or closes, which is
// how the page shows a card the moment it is filed.
type waitRoom struct {
	mu       sync.Mutex
	doors    map[int64]chan answer
	watchers map[chan struct{}]struct{}
}

// open makes approval id answerable; done closes it again.
func (w *waitRoom) open(id int64) (<-chan answer, func()) {
	ch := make(chan answer, 1)
	w.mu.Lock()
	if w.doors == nil {
		w.doors = map[int64]chan answer{}
	}
	w.doors[id] = ch
	w.mu.Unlock()
	w.changed()
	return ch, func() {
		w.mu.Lock()
		if w.doors[id] == ch {
			delete(w.doors, id)
		}
		w.mu.Unlock()
		w.changed()
	}
}

// take removes approval id's door and returns it, nil if no call waits.
func (w *waitRoom) take(id int64) chan answer {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := w.doors[id]
	delete(w.doors, id)
	return ch
}

func (w *waitRoom) waiting() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]int64, 0, len(w.doors))
	for id := range w.doors {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// changed tells every watcher, without blocking: a watcher that has not
// read the last tick yet gets one tick for both.
func (w *waitRoom) changed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (w *waitRoom) watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.watchers == nil {
		w.watchers = map[chan struct{}]struct{}{}
	}
	w.watchers[ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.watchers, ch)
		w.mu.Unlock()
	}
}

// ErrNoLedger is returned by what needs the ledger when quiver runs
// without a state dir.
var ErrNoLedger = errors.New("quiver runs without a state dir, so it has no ledger")

// Answer records a person's answer to pending approval id, given outside
// the host (the operator page), exactly as quiver approve or quiver deny
// would; a call waiting on that approval's card then goes on at once, as
// if the card had been answered in the host. An approval of a session
// that ends with its request (a client without a session) is answered
// once, whatever r says: a session grant could never be used.
func (s *Server) Answer(ctx context.Context, id int64, r gate.Resolution) (gate.Approval, error) {
	if s.ledger == nil {
		return gate.Approval{}, ErrNoLedger
	}
	if r.Approve && r.Lifetime != gate.Once {
		if a, err := s.ledger.Approval(ctx, id); err == nil && strings.HasPrefix(a.Session, ephemeralPrefix) {
			r.Lifetime = gate.Once
		}
	}
	a, err := s.ledger.ResolveApproval(ctx, id, r)
	if err != nil {
		return a, err
	}
	if door := s.waits.take(id); door != nil {
		door <- answerFor(a)
		s.waits.changed()
	}
	return a, nil
}

// answerFor is the card answer an approval's resolution amounts to.
func answerFor(a gate.Approval) answer {
	switch {
	case a.State != gate.Approved:
		return answerNone
	case a.Lifetime == gate.Once:
		return answerOnce
	}
	return answerSession
}

// Waiting returns the approvals whose calls wait for an answer now, in
// this process.
func (s *Server) Waiting() []int64 { return s.waits.waiting() }

// WatchApprovals ticks whenever a call starts or stops waiting for an
// answer; stop ends the watch.
func (s *Server) WatchApprovals() (tick <-chan struct{}, stop func()) { return s.waits.watch() }

// Ledger is the ledger this server records in; nil without a state dir.
// The operator page reads and answers through it, as the CLI does.
func (s *Server) Ledger() *gate.Ledger { return s.ledger }

// Redact hides the secrets of the configuration in force in s, as every
// result quiver sends is.
func (s *Server) Redact(text string) string { return s.redactor()(text) }

// settledElsewhere polls the ledger for an answer to approval id given
// from another process (quiver approve N in a terminal), so that a call
// waiting for the page goes on when the answer comes from there.
func (s *Server) settledElsewhere(ctx context.Context, id int64, every time.Duration) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			a, err := s.ledger.Approval(ctx, id)
			if err != nil {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
					s.log.Debug("polling an approval failed", "approval", id, "err", fmt.Sprint(err))
				}
				continue
			}
			if a.State != gate.Pending {
				out <- answerFor(a)
				return
			}
		}
	}()
	return out
}

package proxy

import (
	"context"
	"sync"

	"github.com/quiver-mcp/quiver/gate"
)

// The fence judges a path and quiver forwards it as written: the server
// resolves it again when it opens it. Between the two, a folder on the
// way may have been swapped for one holding a link out of the fence — by
// the model itself, through quiver, with moves that are each inside the
// fence (red team 2: move_file swaps raced reads of server-filesystem and
// leaked a file outside). quiver cannot control another process's open,
// but it can keep the model from racing its own calls: a call whose
// arguments hold paths the fence judged holds pathLock from before the
// gate's decision until the downstream answers, shared for reads and
// exclusive for anything that may change the file system (write,
// destructive, execute, unknown), so no move through quiver runs between
// another call's check and its open. Changes made by other processes are
// not covered.
type pathLock struct{ mu sync.RWMutex }

// pathHold is one call's hold on the lock. It is given back when the
// call's paths turn out not to matter (none judged, refused), before a
// person is asked (an approval card, a relayed elicitation or sampling:
// no call waits on a person for another's lock), and when the downstream
// answers; release may be called more than once, from any goroutine.
type pathHold struct {
	l      *pathLock
	shared bool
	mu     sync.Mutex
	held   bool
}

// hold takes l for a call of class c and returns the hold.
func (l *pathLock) hold(c gate.Class) *pathHold {
	h := &pathHold{l: l, shared: c == gate.ClassRead}
	h.take()
	return h
}

func (h *pathHold) take() {
	if h.shared {
		h.l.mu.RLock()
	} else {
		h.l.mu.Lock()
	}
	h.mu.Lock()
	h.held = true
	h.mu.Unlock()
}

// retake takes the lock again when it was given back: an approved call
// takes it before its paths are judged again, so that nothing moves
// between that judgement and the server's open (red team 3).
func (h *pathHold) retake() {
	if h != nil && !h.holding() {
		h.take()
	}
}

// holding reports whether h holds the lock.
func (h *pathHold) holding() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

func (h *pathHold) release() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held {
		return
	}
	h.held = false
	if h.shared {
		h.l.mu.RUnlock()
	} else {
		h.l.mu.Unlock()
	}
}

type holdKey struct{}

// withHold carries h to the forwarded call, so that a downstream's
// request for a person's input releases it (releaseHold).
func withHold(ctx context.Context, h *pathHold) context.Context {
	if h == nil {
		return ctx
	}
	return context.WithValue(ctx, holdKey{}, h)
}

// releaseHold gives back the path lock of the call in ctx, if it holds
// one: the call is about to wait on a person.
func releaseHold(ctx context.Context) {
	if h, ok := ctx.Value(holdKey{}).(*pathHold); ok {
		h.release()
	}
}

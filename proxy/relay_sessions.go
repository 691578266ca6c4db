package proxy

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// sessionCount is how many upstream sessions are registered.
func (r *relay) sessionCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}

// register and unregister follow mcp-go's session hooks.
func (r *relay) register(cs server.ClientSession) {
	r.mu.Lock()
	r.sessions[cs.SessionID()] = cs
	r.mu.Unlock()
}

// unregister forgets a session: its level, its subscriptions (the last
// subscriber of a resource unsubscribes downstream), its roots, its
// progress routes. Flights it still has end with their handlers.
func (r *relay) unregister(sid string) {
	r.mu.Lock()
	delete(r.sessions, sid)
	delete(r.levels, sid)
	delete(r.roots, sid)
	for tok, p := range r.progress {
		if p.session == sid {
			delete(r.progress, tok)
		}
	}
	var orphaned []string
	for uri, who := range r.subs {
		if who[sid] {
			delete(who, sid)
			if len(who) == 0 {
				delete(r.subs, uri)
				orphaned = append(orphaned, uri)
			}
		}
	}
	r.mu.Unlock()
	for _, uri := range orphaned {
		go func() {
			if err := r.s.pass.forwardSubscribe(context.Background(), uri, false); err != nil {
				r.s.log.Debug("unsubscribe after session end failed", "uri", uri, "err", err)
			}
		}()
	}
}

// subscribe records that the session wants updates for uri; first reports
// whether it is the first subscriber (quiver subscribes downstream once).
func (r *relay) subscribe(sid, uri string, on bool) (changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	who := r.subs[uri]
	if on {
		if who == nil {
			who = map[string]bool{}
			r.subs[uri] = who
		}
		first := len(who) == 0
		who[sid] = true
		return first
	}
	if !who[sid] {
		return false
	}
	delete(who, sid)
	if len(who) == 0 {
		delete(r.subs, uri)
		return true
	}
	return false
}

// subscribed lists the exposed URIs anyone subscribed to.
func (r *relay) subscribed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Keys(r.subs))
}

// A rootsCache holds one session's roots for the gate's fence, fetched on
// the session's first call and again after it says they changed.
type rootsCache struct {
	once  sync.Once
	roots []string
}

// sessionRoots returns the roots of the session in ctx (file:// URIs), or
// nil when its client has no roots. The first call of a session asks the
// client (bounded by rootsTimeout); later calls use the answer until the
// client sends notifications/roots/list_changed.
func (r *relay) sessionRoots(ctx context.Context) []string {
	cs := server.ClientSessionFromContext(ctx)
	if server.IsModernRequest(ctx) {
		// 2026-07-28 has no roots/list to send and no list_changed to
		// say they moved: the fence uses the configured folders.
		return nil
	}
	if cs == nil || cs.SessionID() == "" || clientCaps(cs).Roots == nil {
		// A client without a session has no roots quiver could keep: a
		// cache under "" would lend one client's roots to the next.
		return nil
	}
	r.mu.Lock()
	rc := r.roots[cs.SessionID()]
	if rc == nil {
		rc = &rootsCache{}
		r.roots[cs.SessionID()] = rc
	}
	r.mu.Unlock()
	rc.once.Do(func() {
		rctx, cancel := context.WithTimeout(ctx, rootsTimeout)
		defer cancel()
		res, err := r.s.mcp.RequestRoots(rctx, mcp.ListRootsRequest{})
		if err != nil {
			r.s.log.Warn("roots/list failed; the fence uses the configured roots only", "session", cs.SessionID(), "err", err)
			// Do not keep the failure: the next call asks again, rather
			// than every call until roots/list_changed being fenced
			// without the client's roots.
			r.mu.Lock()
			if r.roots[cs.SessionID()] == rc {
				delete(r.roots, cs.SessionID())
			}
			r.mu.Unlock()
			return
		}
		for _, root := range res.Roots {
			rc.roots = append(rc.roots, root.URI)
		}
	})
	return rc.roots
}

const rootsTimeout = 5 * time.Second

// rootsChanged forgets a session's roots and tells every downstream server
// that roots changed, so each asks again.
func (r *relay) rootsChanged(ctx context.Context) {
	r.mu.Lock()
	delete(r.roots, sessionID(ctx))
	r.mu.Unlock()
	for _, srv := range r.s.cfg().Servers {
		go func() {
			_ = r.s.reg.Do(context.Background(), srv.Name, func(ctx context.Context, c *client.Client) error {
				return c.RootListChanges(ctx)
			})
		}()
	}
}

// gaveRoots remembers roots a server was given. A server process serves
// every session, keeps the last roots any session gave it, and keeps them
// when a later list is empty (server-filesystem does): so for a server
// that resolves against its roots, every root it was ever given is one of
// its bases, whichever session calls (red team: session B read a relative
// name from session A's root).
func (r *relay) gaveRoots(srv string, roots []mcp.Root) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, root := range roots {
		if !slices.Contains(r.given[srv], root.URI) {
			r.given[srv] = append(r.given[srv], root.URI)
		}
	}
}

// givenRoots are the roots server srv was ever given.
func (r *relay) givenRoots(srv string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.given[srv])
}

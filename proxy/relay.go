package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/registry"
)

// The relay carries what is not a tools/call between the upstream sessions
// and the downstream servers: requests a downstream server sends back
// (sampling, elicitation, roots), progress, logging and resource updates.
//
// Its one hard problem is attribution. mcp-go hands a downstream server's
// request to quiver with the transport's ctx, not the ctx of the call that
// caused it, so the relay keeps a table of flights: every request quiver has
// forwarded downstream and not yet seen answered, with the upstream session
// and handler ctx that made it. A server-to-client request from server S is
// routed by this rule:
//
//  1. If it arrived on the HTTP response stream of one of quiver's own
//     requests (streamable HTTP downstreams do this), its ctx carries that
//     flight: it goes to that flight's session, on that call's stream.
//  2. Otherwise, if every flight in the air on S belongs to one session, it
//     goes to that session (on the newest of its calls to S).
//  3. Otherwise, if nothing is in flight on S and exactly one session is
//     connected (every stdio host), it goes to that session.
//  4. Otherwise quiver cannot know whose it is: calls from two sessions are
//     in flight on one stdio (or SSE) server, whose wire format carries no
//     link from a request back to the call it serves. The downstream gets an
//     error that says so. quiver never guesses: showing one user's sampling
//     prompt or elicitation form to another is worse than failing a call.
//
// The request then goes upstream with the chosen call's ctx (so an upstream
// cancellation abandons it) and a deadline of the server's timeout; a
// session that has gone, or whose client lacks the capability, is an error
// the downstream sees at once.
type relay struct {
	s *Server

	mu       sync.Mutex
	next     uint64
	flights  map[uint64]*flight
	progress map[string]progressRoute        // downstream token -> upstream
	sessions map[string]server.ClientSession // registered upstream sessions
	levels   map[string]mcp.LoggingLevel     // sessions that set a logging level
	subs     map[string]map[string]bool      // exposed resource URI -> sessions
	roots    map[string]*rootsCache          // per session, for the gate
	given    map[string][]string             // per server, every root it was given
}

// A flight is one request quiver forwarded downstream and still waits on.
type flight struct {
	id      uint64
	server  string
	session string
	ctx     context.Context // the upstream handler's: its session, its stream
	token   string          // downstream progress token, if any
	// park, for a call of a host on 2026-07-28, holds what the downstream
	// asks until the host's retry answers it (park.go).
	park *parking
}

type progressRoute struct {
	server  string // the server the token was given to
	session string
	token   mcp.ProgressToken // the upstream client's own token
	// ctx is the call's, for a client without a session: no id reaches
	// it, only the stream of the request it made.
	ctx context.Context
}

type flightKey struct{}

// Errors a downstream server sees for a request quiver will not relay.
var (
	errSessionGone  = errors.New("the session that made this call has gone")
	errAmbiguous    = errors.New("quiver cannot tell which session this request is for")
	errNoSession    = errors.New("no session to ask")
	errNoCapability = errors.New("the client does not support this request")
)

func newRelay(s *Server) *relay {
	return &relay{s: s,
		flights:  map[uint64]*flight{},
		progress: map[string]progressRoute{},
		sessions: map[string]server.ClientSession{},
		levels:   map[string]mcp.LoggingLevel{},
		subs:     map[string]map[string]bool{},
		roots:    map[string]*rootsCache{},
		given:    map[string][]string{},
	}
}

// begin records a flight for a request about to be forwarded to server on
// behalf of the session in ctx. It returns the ctx to forward with (it
// carries the flight, for rule 1), the meta to send (the upstream progress
// token swapped for one quiver issues; quiver's own keys removed) and the
// func that ends the flight.
func (r *relay) begin(ctx context.Context, srv string, meta *mcp.Meta) (context.Context, *mcp.Meta, func()) {
	sid := sessionID(ctx)
	r.mu.Lock()
	r.next++
	if sid == "" {
		// A client without a session is a session of its own: two such
		// clients' calls in flight on one server are two sessions, and
		// rule 4 refuses rather than pick one.
		sid = fmt.Sprintf("anon-%d", r.next)
	}
	f := &flight{id: r.next, server: srv, session: sid, ctx: ctx}
	f.park, _ = ctx.Value(parkKey{}).(*parking)
	var out *mcp.Meta
	if meta != nil {
		out = &mcp.Meta{AdditionalFields: map[string]any{}}
		for k, v := range meta.AdditionalFields {
			if !strings.HasPrefix(k, "quiver/") {
				out.AdditionalFields[k] = v
			}
		}
		if meta.ProgressToken != nil {
			// Unguessable, and tied to the server it was given to: a
			// server cannot speak for another's call (red team: one
			// server counted through quiver-1..59 into others' calls).
			f.token = "quiver-" + newRunID()
			route := progressRoute{session: sid, token: meta.ProgressToken, server: srv}
			if sessionID(ctx) == "" {
				route.ctx = ctx
			}
			r.progress[f.token] = route
			out.ProgressToken = f.token
		}
		if len(out.AdditionalFields) == 0 {
			out.AdditionalFields = nil
		}
		if out.ProgressToken == nil && out.AdditionalFields == nil {
			out = nil
		}
	}
	r.flights[f.id] = f
	r.mu.Unlock()
	end := func() {
		r.mu.Lock()
		delete(r.flights, f.id)
		r.mu.Unlock()
		if f.token != "" {
			// mcp-go's client hands a notification to its handler on a
			// goroutine of its own, so progress a server sent just before
			// its answer can arrive after the call ended: the route stays
			// a moment for it.
			time.AfterFunc(progressGrace, func() {
				r.mu.Lock()
				delete(r.progress, f.token)
				r.mu.Unlock()
			})
		}
	}
	return context.WithValue(ctx, flightKey{}, f), out, end
}

func sessionID(ctx context.Context) string {
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return cs.SessionID()
	}
	return ""
}

// route picks the upstream session for a request server srv sent, by the
// rule in the type's comment, and returns the ctx to send it upstream with.
func (r *relay) route(ctx context.Context, srv string) (context.Context, server.ClientSession, context.CancelFunc, error) {
	timeout := registry.DefaultTimeout
	if sc, ok := r.s.cfg().Server(srv); ok && sc.Timeout > 0 {
		timeout = sc.Timeout
	}
	r.mu.Lock()
	var chosen *flight
	if f, ok := ctx.Value(flightKey{}).(*flight); ok && f.server == srv && r.flights[f.id] == f {
		chosen = f
	}
	if chosen == nil {
		var mine []*flight
		for _, f := range r.flights {
			if f.server == srv {
				mine = append(mine, f)
			}
		}
		distinct := map[string]bool{}
		for _, f := range mine {
			distinct[f.session] = true
		}
		switch {
		case len(distinct) == 1:
			chosen = slices.MaxFunc(mine, func(a, b *flight) int { return cmp.Compare(a.id, b.id) })
		case len(distinct) > 1:
			r.mu.Unlock()
			return nil, nil, nil, fmt.Errorf("%w: calls from %d sessions are in flight on %s, and its transport does not say which one this request serves; quiver refuses rather than ask the wrong user",
				errAmbiguous, len(distinct), srv)
		}
	}
	if chosen != nil && chosen.park != nil {
		r.mu.Unlock()
		return nil, nil, nil, errParked{chosen}
	}
	var sess server.ClientSession
	var base context.Context
	if chosen != nil {
		sess = r.sessions[chosen.session]
		base = chosen.ctx
		if sess == nil {
			r.mu.Unlock()
			return nil, nil, nil, fmt.Errorf("%w (session %q)", errSessionGone, chosen.session)
		}
	} else {
		if len(r.sessions) != 1 {
			n := len(r.sessions)
			r.mu.Unlock()
			return nil, nil, nil, fmt.Errorf("%w: nothing is in flight on %s and %d sessions are connected", errNoSession, srv, n)
		}
		for _, cs := range r.sessions {
			sess = cs
		}
		base = r.s.mcp.WithContext(context.WithoutCancel(ctx), sess)
	}
	r.mu.Unlock()
	out, cancel := context.WithTimeout(base, timeout)
	return out, sess, cancel, nil
}

func clientCaps(cs server.ClientSession) mcp.ClientCapabilities {
	if ci, ok := cs.(server.SessionWithClientInfo); ok {
		return ci.GetClientCapabilities()
	}
	return mcp.ClientCapabilities{}
}

// progressGrace is how long a call's progress route outlives the call.
const progressGrace = 2 * time.Second

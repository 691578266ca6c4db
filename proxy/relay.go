package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
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

// peer answers one downstream server's requests by asking upstream.
type peer struct {
	r      *relay
	server string
}

func (r *relay) clientOptions(srv string) []client.ClientOption {
	p := peer{r: r, server: srv}
	return []client.ClientOption{
		client.WithSamplingHandler(p),
		client.WithElicitationHandler(p),
		client.WithRootsHandler(p),
	}
}

func (p peer) fail(method string, err error) error {
	p.r.s.log.Log(context.Background(), notRelayedLevel(method, err), "downstream request not relayed", "server", p.server, "method", method, "err", err)
	return fmt.Errorf("quiver: %s: %w", method, err)
}

// notRelayedLevel is how loudly a request quiver could not relay is
// logged. A server asking for roots before any host call is in flight
// (server-filesystem does at every start), or of a host without roots,
// is normal use and logs at DEBUG: the server keeps the folders it was
// given. A host without sampling or elicitation is INFO; anything else
// (a relay that broke) WARN.
func notRelayedLevel(method string, err error) slog.Level {
	switch {
	case method == "roots/list" && (errors.Is(err, errNoSession) || errors.Is(err, errNoCapability)):
		return slog.LevelDebug
	case errors.Is(err, errNoCapability):
		return slog.LevelInfo // the host said it cannot; nothing is wrong
	}
	return slog.LevelWarn
}

func (p peer) done(method string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("the client did not answer in time: %w", err)
	}
	return p.fail(method, err)
}

// labelled marks a server's elicitation as the server's, everywhere a
// host may show it: the message says who asks before and after the
// server's words (with control and bidi characters escaped and blank runs
// shortened, so nothing pushes the label off the screen or erases it), and
// every title, description and choice label of the form starts with the
// server's name (red team: a form titled "quiver approval card" with
// quiver's own choices).
func labelled(srv string, p mcp.ElicitationParams) mcp.ElicitationParams {
	mark := fmt.Sprintf("[server %s] ", srv)
	msg := strings.Trim(plainText(p.Message), "\n")
	for strings.Contains(msg, "\n\n\n") {
		msg = strings.ReplaceAll(msg, "\n\n\n", "\n\n")
	}
	p.Message = fmt.Sprintf("The server %q asks (this is not a quiver approval card):\n%s\n(asked by the server %q, not by quiver)", srv, msg, srv)
	if p.RequestedSchema != nil {
		b, err := json.Marshal(p.RequestedSchema)
		var v any
		if err == nil && json.Unmarshal(b, &v) == nil {
			p.RequestedSchema = markSchema(v, mark)
		}
	}
	return p
}

// markSchema prefixes every text a form shows a person.
func markSchema(v any, mark string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "title", "description":
				if s, ok := e.(string); ok {
					x[k] = mark + plainText(s)
					continue
				}
			case "enumNames":
				if list, ok := e.([]any); ok {
					for i, n := range list {
						if s, ok := n.(string); ok {
							list[i] = mark + plainText(s)
						}
					}
					continue
				}
			}
			x[k] = markSchema(e, mark)
		}
	case []any:
		for i, e := range x {
			x[i] = markSchema(e, mark)
		}
	}
	return v
}

// plainText escapes what could change how text looks where it is shown:
// control characters but newline and tab, bidi controls, and line and
// paragraph separators.
func plainText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0),
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c,
			r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// errParked is route's answer for a request whose call belongs to a host
// on 2026-07-28: the request is not sent, it waits in the call's parking.
type errParked struct{ f *flight }

func (errParked) Error() string { return "parked" }

// parked files req in the parking of the flight route chose, when it has
// one, and reports whether it did.
func (p peer) parked(ctx context.Context, err error, method string, req mcp.InputRequest) (mcp.InputResponse, bool, error) {
	var ep errParked
	if !errors.As(err, &ep) {
		return mcp.InputResponse{}, false, nil
	}
	req, ok := redactJSON(req, p.r.s.redactor(), func(b json.RawMessage) (mcp.InputRequest, error) {
		var out mcp.InputRequest
		return out, json.Unmarshal(b, &out)
	})
	if !ok {
		return mcp.InputResponse{}, true, p.fail(method, errors.New("the request could not be checked for secrets, so it was not passed on"))
	}
	resp, err := parkedInput(ctx, ep.f, method, req)
	if err == nil {
		err = resp.DecodeFor(mcp.MCPMethod(method))
	}
	return resp, true, p.done(method, err)
}

// CreateMessage relays sampling/createMessage.
func (p peer) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	const method = "sampling/createMessage"
	uctx, sess, cancel, err := p.r.route(ctx, p.server)
	if resp, ok, perr := p.parked(ctx, err, method, mcp.NewSamplingInputRequest(req.CreateMessageParams)); ok {
		return resp.Sampling, perr
	}
	if err != nil {
		return nil, p.fail(method, err)
	}
	defer cancel()
	if clientCaps(sess).Sampling == nil {
		return nil, p.fail(method, fmt.Errorf("%w: session %q's client did not declare sampling", errNoCapability, sess.SessionID()))
	}
	req, ok := redactJSON(req, p.r.s.redactor(), func(b json.RawMessage) (mcp.CreateMessageRequest, error) {
		var out mcp.CreateMessageRequest
		return out, json.Unmarshal(b, &out)
	})
	if !ok {
		return nil, p.fail(method, errors.New("the request could not be checked for secrets, so it was not passed on"))
	}
	//lint:ignore SA1019 quiver relays a downstream's sampling to hosts on versions that still have it
	res, err := p.r.s.mcp.RequestSampling(uctx, req)
	return res, p.done(method, err)
}

// Elicit relays elicitation/create.
func (p peer) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	const method = "elicitation/create"
	// The person must see who asks: a server's form could copy an
	// approval card word for word (red team), and the answer goes to the
	// server, not to quiver's gate.
	req.Params = labelled(p.server, req.Params)
	uctx, sess, cancel, err := p.r.route(ctx, p.server)
	if resp, ok, perr := p.parked(ctx, err, method, mcp.NewElicitationInputRequest(req.Params)); ok {
		return resp.Elicitation, perr
	}
	if err != nil {
		return nil, p.fail(method, err)
	}
	defer cancel()
	if clientCaps(sess).Elicitation == nil {
		return nil, p.fail(method, fmt.Errorf("%w: session %q's client did not declare elicitation", errNoCapability, sess.SessionID()))
	}
	req, ok := redactJSON(req, p.r.s.redactor(), func(b json.RawMessage) (mcp.ElicitationRequest, error) {
		var out mcp.ElicitationRequest
		return out, json.Unmarshal(b, &out)
	})
	if !ok {
		return nil, p.fail(method, errors.New("the request could not be checked for secrets, so it was not passed on"))
	}
	res, err := p.r.s.mcp.RequestElicitation(uctx, req)
	return res, p.done(method, err)
}

// ListRoots relays roots/list: downstream servers see the upstream
// client's roots.
func (p peer) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (res *mcp.ListRootsResult, err error) {
	const method = "roots/list"
	defer func() {
		if err == nil && res != nil {
			p.r.gaveRoots(p.server, res.Roots)
		}
	}()
	uctx, sess, cancel, err := p.r.route(ctx, p.server)
	if resp, ok, perr := p.parked(ctx, err, method, mcp.NewRootsInputRequest()); ok {
		return resp.Roots, perr
	}
	if err != nil {
		return nil, p.fail(method, err)
	}
	defer cancel()
	if clientCaps(sess).Roots == nil {
		return nil, p.fail(method, fmt.Errorf("%w: session %q's client did not declare roots", errNoCapability, sess.SessionID()))
	}
	res, err = p.r.s.mcp.RequestRoots(uctx, req)
	return res, p.done(method, err)
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

// answerInput answers input requests a downstream's tools/call result
// carries (registry.Options.AnswerInput) the way its server-to-client
// requests are answered: asked upstream at once, or parked for a host on
// 2026-07-28. They are asked together, as a host's client would.
func (r *relay) answerInput(ctx context.Context, srv string, reqs mcp.InputRequests) (mcp.InputResponses, error) {
	p := peer{r: r, server: srv}
	out := make(mcp.InputResponses, len(reqs))
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for id, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp mcp.InputResponse
			var err error
			switch {
			case req.Method == mcp.MethodElicitationCreate && req.Elicitation != nil:
				var res *mcp.ElicitationResult
				if res, err = p.Elicit(ctx, mcp.ElicitationRequest{Params: *req.Elicitation}); err == nil {
					resp = mcp.NewElicitationInputResponse(*res)
				}
			case req.Method == mcp.MethodSamplingCreateMessage && req.Sampling != nil:
				var res *mcp.CreateMessageResult
				if res, err = p.CreateMessage(ctx, mcp.CreateMessageRequest{CreateMessageParams: *req.Sampling}); err == nil {
					resp = mcp.NewSamplingInputResponse(*res)
				}
			case req.Method == mcp.MethodListRoots:
				var res *mcp.ListRootsResult
				if res, err = p.ListRoots(ctx, mcp.ListRootsRequest{}); err == nil {
					resp = mcp.NewRootsInputResponse(*res)
				}
			default:
				err = fmt.Errorf("quiver cannot answer an input request of method %q", req.Method)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			out[id] = resp
		}()
	}
	wg.Wait()
	return out, first
}

// notification handles a downstream notification. It runs on that
// server's read loop, so it never waits on the network: anything that needs
// a request (a re-list) goes to a goroutine.
func (r *relay) notification(srv string, n mcp.JSONRPCNotification) {
	switch n.Method {
	case string(mcp.MethodNotificationProgress):
		r.relayProgress(srv, n)
	case string(mcp.MethodNotificationMessage):
		r.relayLog(srv, n)
	case string(mcp.MethodNotificationResourceUpdated):
		r.relayUpdated(srv, n)
	case string(mcp.MethodNotificationPromptsListChanged):
		go r.s.pass.relist(srv, true, false)
	case string(mcp.MethodNotificationResourcesListChanged):
		go r.s.pass.relist(srv, false, true)
	}
}

// relayProgress maps a downstream progress token back to the upstream
// session and token it stands for. A token quiver never issued (or whose
// call has ended) reaches nobody.
func (r *relay) relayProgress(srv string, n mcp.JSONRPCNotification) {
	tok := fmt.Sprint(n.Params.AdditionalFields["progressToken"])
	r.mu.Lock()
	route, ok := r.progress[tok]
	r.mu.Unlock()
	if ok && route.server != srv {
		ok = false // another server's token: it speaks for no call of its own
	}
	if !ok {
		r.s.log.Warn("progress for a token quiver never issued (or whose call ended); dropped", "server", srv, "token", tok)
		return
	}
	redacted, _ := redactValue(map[string]any(maps.Clone(n.Params.AdditionalFields)), r.s.redactor())
	params := redacted.(map[string]any)
	params["progressToken"] = route.token
	send := func() error {
		return r.s.mcp.SendNotificationToSpecificClient(route.session, string(mcp.MethodNotificationProgress), params)
	}
	if route.ctx != nil {
		send = func() error {
			return r.s.mcp.SendNotificationToClient(route.ctx, string(mcp.MethodNotificationProgress), params)
		}
	}
	if err := send(); err != nil {
		r.s.log.Debug("progress not delivered", "session", route.session, "err", err)
	}
}

// relayLog sends a downstream log message to every session that set a
// logging level (mcp-go drops it for a session whose level is higher),
// with the logger prefixed by the server's name. MCP logging belongs to a
// connection, not to a call, so a message cannot be attributed to one
// session; only sessions that asked for logging get any.
func (r *relay) relayLog(srv string, n mcp.JSONRPCNotification) {
	level := mcp.LoggingLevel(fmt.Sprint(n.Params.AdditionalFields["level"]))
	logger, _ := n.Params.AdditionalFields["logger"].(string)
	if p := prefixOf(r.s.cfg(), srv); p != "" {
		if logger == "" {
			logger = srv
		} else {
			logger = srv + "/" + logger
		}
	}
	redact := r.s.redactor()
	data, _ := redactValue(n.Params.AdditionalFields["data"], redact)
	msg := mcp.NewLoggingMessageNotification(level, redact(logger), data)
	r.mu.Lock()
	targets := slices.Collect(maps.Keys(r.levels))
	r.mu.Unlock()
	for _, sid := range targets {
		if err := r.s.mcp.SendLogMessageToSpecificClient(sid, msg); err != nil {
			r.s.log.Debug("log message not delivered", "session", sid, "err", err)
		}
	}
}

// setLevel records a session's level and forwards the most verbose level
// any session wants to every server.
func (r *relay) setLevel(ctx context.Context, level mcp.LoggingLevel) {
	r.mu.Lock()
	r.levels[sessionID(ctx)] = level
	r.mu.Unlock()
	for _, srv := range r.s.cfg().Servers {
		go r.forwardLevel(srv.Name)
	}
}

// wantLevel is the most verbose level any session asked for, "" if none.
func (r *relay) wantLevel() mcp.LoggingLevel {
	order := []mcp.LoggingLevel{mcp.LoggingLevelDebug, mcp.LoggingLevelInfo, mcp.LoggingLevelNotice,
		mcp.LoggingLevelWarning, mcp.LoggingLevelError, mcp.LoggingLevelCritical, mcp.LoggingLevelAlert, mcp.LoggingLevelEmergency}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range order {
		for _, have := range r.levels {
			if have == l {
				return l
			}
		}
	}
	return ""
}

func (r *relay) forwardLevel(srv string) {
	level := r.wantLevel()
	if level == "" {
		return
	}
	err := r.s.reg.Do(context.Background(), srv, func(ctx context.Context, c *client.Client) error {
		if c.GetServerCapabilities().Logging == nil {
			return nil
		}
		req := mcp.SetLevelRequest{}
		req.Params.Level = level
		//lint:ignore SA1019 a host on a version with logging may set a downstream's level through quiver
		return c.SetLevel(ctx, req)
	})
	if err != nil && !errors.Is(err, registry.ErrServerDown) {
		r.s.log.Warn("logging/setLevel not forwarded", "server", srv, "err", err)
	}
}

// relayUpdated sends notifications/resources/updated to the sessions that
// subscribed to the resource, under the URI they know it by.
func (r *relay) relayUpdated(srv string, n mcp.JSONRPCNotification) {
	uri, _ := n.Params.AdditionalFields["uri"].(string)
	exposed := r.s.pass.exposeURI(srv, uri)
	if owner, _, err := r.s.pass.resolve(exposed); err != nil || owner != srv {
		// A server speaks for its own resources only: an update for a URI
		// another server owns is not passed on (red team: one server
		// faked another's updates).
		r.s.log.Warn("resource update for a URI this server does not own; dropped", "server", srv, "uri", r.s.redactor()(uri))
		return
	}
	r.mu.Lock()
	targets := slices.Collect(maps.Keys(r.subs[exposed]))
	r.mu.Unlock()
	if len(targets) == 0 {
		r.s.log.Debug("resource update nobody subscribed to", "server", srv, "uri", uri)
		return
	}
	params := maps.Clone(n.Params.AdditionalFields)
	params["uri"] = exposed
	redacted, _ := redactValue(map[string]any(params), r.s.redactor())
	params = redacted.(map[string]any)
	for _, sid := range targets {
		if err := r.s.mcp.SendNotificationToSpecificClient(sid, string(mcp.MethodNotificationResourceUpdated), params); err != nil {
			r.s.log.Debug("resource update not delivered", "session", sid, "err", err)
		}
	}
}

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

// progressGrace is how long a call's progress route outlives the call.
const progressGrace = 2 * time.Second

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

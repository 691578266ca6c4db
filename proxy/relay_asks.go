package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/registry"
)

// A downstream server asks its client three things: sampling/createMessage,
// elicitation/create and roots/list, either as requests of its own (a
// server on 2025-11-25) or as the input requests of a tools/call result (a
// server on 2026-07-28). Each is relayed the same way, by ask, in mcp-go's
// one form of all three, mcp.InputRequest; a kind holds what differs.

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

// CreateMessage relays sampling/createMessage.
func (p peer) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	resp, err := p.ask(ctx, mcp.NewSamplingInputRequest(req.CreateMessageParams))
	return resp.Sampling, err
}

// Elicit relays elicitation/create.
func (p peer) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	resp, err := p.ask(ctx, mcp.NewElicitationInputRequest(req.Params))
	return resp.Elicitation, err
}

// ListRoots relays roots/list: downstream servers see the upstream
// client's roots.
func (p peer) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	resp, err := p.ask(ctx, mcp.NewRootsInputRequest())
	return resp.Roots, err
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
		wg.Go(func() {
			resp, err := p.ask(ctx, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			out[id] = resp
		})
	}
	wg.Wait()
	return out, first
}

// A kind is what differs between the three requests: the capability a
// host declares to take it, and the mcp-go call that sends it upstream.
type kind struct {
	capability string // as the error names it
	declared   func(mcp.ClientCapabilities) bool
	send       func(context.Context, *server.MCPServer, mcp.InputRequest) (mcp.InputResponse, error)
}

// kindOf is req's kind; false for a method quiver does not relay, or a
// request without the parameters its method needs.
func kindOf(req mcp.InputRequest) (kind, bool) {
	switch {
	case req.Method == mcp.MethodSamplingCreateMessage && req.Sampling != nil:
		return kind{"sampling", func(c mcp.ClientCapabilities) bool { return c.Sampling != nil },
			func(ctx context.Context, s *server.MCPServer, req mcp.InputRequest) (mcp.InputResponse, error) {
				//lint:ignore SA1019 quiver relays a downstream's sampling to hosts on versions that still have it
				res, err := s.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: *req.Sampling})
				return answered(res, err, mcp.NewSamplingInputResponse)
			}}, true
	case req.Method == mcp.MethodElicitationCreate && req.Elicitation != nil:
		return kind{"elicitation", func(c mcp.ClientCapabilities) bool { return c.Elicitation != nil },
			func(ctx context.Context, s *server.MCPServer, req mcp.InputRequest) (mcp.InputResponse, error) {
				res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: *req.Elicitation})
				return answered(res, err, mcp.NewElicitationInputResponse)
			}}, true
	case req.Method == mcp.MethodListRoots:
		return kind{"roots", func(c mcp.ClientCapabilities) bool { return c.Roots != nil },
			func(ctx context.Context, s *server.MCPServer, _ mcp.InputRequest) (mcp.InputResponse, error) {
				res, err := s.RequestRoots(ctx, mcp.ListRootsRequest{})
				return answered(res, err, mcp.NewRootsInputResponse)
			}}, true
	}
	return kind{}, false
}

func answered[T any](res *T, err error, wrap func(T) mcp.InputResponse) (mcp.InputResponse, error) {
	if err != nil || res == nil {
		return mcp.InputResponse{}, err
	}
	return wrap(*res), nil
}

// ask relays one request of server p.server: to the session route picks,
// parked for a host on 2026-07-28, otherwise sent upstream if the host
// declared the capability; with its secrets redacted either way. The
// response is the zero one when the error is not nil.
func (p peer) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	k, ok := kindOf(req)
	if !ok {
		return mcp.InputResponse{}, fmt.Errorf("quiver cannot answer an input request of method %q", req.Method)
	}
	p.mark(&req)
	resp, err := p.deliver(ctx, k, req)
	if err != nil {
		return mcp.InputResponse{}, err
	}
	if resp.Roots != nil {
		p.r.gaveRoots(p.server, resp.Roots.Roots)
	}
	return resp, nil
}

// deliver routes req (relay.route) and sends it upstream, or parks it.
func (p peer) deliver(ctx context.Context, k kind, req mcp.InputRequest) (mcp.InputResponse, error) {
	method := string(req.Method)
	uctx, sess, cancel, err := p.r.route(ctx, p.server)
	if req.Method != mcp.MethodListRoots {
		// A person answers: the call gives back its path lock
		// (pathlock.go) rather than hold others up meanwhile.
		if ep := (errParked{}); errors.As(err, &ep) {
			releaseHold(ep.f.ctx)
		} else if err == nil {
			releaseHold(uctx)
		}
	}
	if ep := (errParked{}); errors.As(err, &ep) {
		return p.parked(ctx, ep.f, k, req)
	}
	if err != nil {
		return mcp.InputResponse{}, p.fail(method, err)
	}
	defer cancel()
	if !k.declared(clientCaps(sess)) {
		return mcp.InputResponse{}, p.fail(method, fmt.Errorf("%w: session %q's client did not declare %s", errNoCapability, sess.SessionID(), k.capability))
	}
	req, ok := p.redact(req)
	if !ok {
		return mcp.InputResponse{}, p.fail(method, errUnchecked)
	}
	if err := p.fits(req); err != nil {
		return mcp.InputResponse{}, p.fail(method, err)
	}
	resp, err := k.send(uctx, p.r.s.mcp, req)
	return resp, p.done(method, err)
}

// errParked is route's answer for a request whose call belongs to a host
// on 2026-07-28: the request is not sent, it waits in the call's parking.
type errParked struct{ f *flight }

func (errParked) Error() string { return "parked" }

// parked files req in the parking of flight f (park.go), if the host
// declared the capability.
func (p peer) parked(ctx context.Context, f *flight, k kind, req mcp.InputRequest) (mcp.InputResponse, error) {
	method := string(req.Method)
	req, ok := p.redact(req)
	if !ok {
		return mcp.InputResponse{}, p.fail(method, errUnchecked)
	}
	if !k.declared(hostCaps(f.ctx)) {
		return mcp.InputResponse{}, p.fail(method, fmt.Errorf("%w: the host did not declare %s", errNoCapability, method))
	}
	if err := p.fits(req); err != nil {
		return mcp.InputResponse{}, p.fail(method, err)
	}
	resp, err := f.park.ask(ctx, req)
	if err == nil {
		err = resp.DecodeFor(req.Method)
	}
	return resp, p.done(method, err)
}

var errUnchecked = errors.New("the request could not be checked for secrets, so it was not passed on")

// errTooLarge is the downstream's answer for a request too large to send
// the host.
var errTooLarge = errors.New("request too large")

// fits refuses a request larger than the bound on every message to the
// host (surface.max_result_bytes): a sampling request's messages or an
// elicitation's form cannot be cut without changing what is asked, so
// the server that asks is told, and nothing is sent (issue 22: a 2.3 MB
// sampling request and a large form went whole).
func (p peer) fits(req mcp.InputRequest) error {
	limit := p.r.s.current().cfg.Surface.MaxResultBytes
	if limit <= 0 {
		return nil
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if len(b) > limit {
		return fmt.Errorf("%w: it is %d bytes, over the %d bytes quiver sends a client in one message (surface.max_result_bytes in quiver's config); ask for less in one request", errTooLarge, len(b), limit)
	}
	return nil
}

func (p peer) redact(req mcp.InputRequest) (mcp.InputRequest, bool) {
	return redactJSON(req, p.r.s.redactor(), func(b json.RawMessage) (mcp.InputRequest, error) {
		var out mcp.InputRequest
		return out, json.Unmarshal(b, &out)
	})
}

func (p peer) fail(method string, err error) error {
	level := notRelayedLevel(method, err)
	p.r.s.log.Log(context.Background(), level, "downstream request not relayed", "server", p.server, "method", method, "err", err)
	if method == string(mcp.MethodListRoots) && level == slog.LevelDebug {
		// Words the server's stderr logger knows (registry.RootsUnavailable):
		// a server that logs this answer is not logged at every start.
		return fmt.Errorf("quiver: %s: %s (%w)", method, registry.RootsUnavailable, err)
	}
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
	case method == string(mcp.MethodListRoots) && (errors.Is(err, errNoSession) || errors.Is(err, errNoCapability)):
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

// mark marks what a server asks as the server's, as ask relays it.
func (p peer) mark(req *mcp.InputRequest) {
	if req.Elicitation != nil {
		// The person must see who asks: a server's form could copy an
		// approval card word for word (red team), and the answer goes to
		// the server, not to quiver's gate.
		params := labelled(p.server, *req.Elicitation)
		req.Elicitation = &params
	}
	if req.Sampling != nil {
		// So must a completion a server asks for: a host shows or runs it
		// as it would quiver's own (red team 66).
		params := sampledFor(p.server, *req.Sampling)
		req.Sampling = &params
	}
}

// sampledFor marks a server's sampling request as the server's: the
// system prompt a host shows with it, and passes to the model, starts by
// saying who asks, and the server's own system prompt follows quoted.
func sampledFor(srv string, p mcp.CreateMessageParams) mcp.CreateMessageParams {
	sys := fmt.Sprintf("The server %q asks for this completion (not quiver; nothing in it comes from quiver or the user).", srv)
	if p.SystemPrompt != "" {
		sys += fmt.Sprintf(" Its own system prompt (the server's words, not quiver's): %q", plainText(p.SystemPrompt))
	}
	p.SystemPrompt = sys
	return p
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

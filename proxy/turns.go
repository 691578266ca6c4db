package proxy

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TurnMeta is the _meta key a host may set on any request to say which
// turn it belongs to: a number or a string; each new value starts a turn.
const TurnMeta = "quiver/turn"

// clock hooks the turn clock into every request: the explicit turn is read
// from any request that carries it, a prompts/get (a slash command: the
// user acted) starts a turn, and every request and response resets the
// idle gap. Pings are keep-alives, not activity, and leave it alone.
func (s *Server) clock(h *server.Hooks) {
	h.AddOnRequestInitialization(func(ctx context.Context, _ any, msg any) error {
		raw, ok := msg.(json.RawMessage)
		if !ok {
			return nil
		}
		var req struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(raw, &req) != nil {
			return nil // mcp-go answers the parse error itself
		}
		switch mcp.MCPMethod(req.Method) {
		case mcp.MethodInitialize, mcp.MethodPing:
			return nil
		}
		ss := s.session(ctx)
		user := mcp.MCPMethod(req.Method) == mcp.MethodPromptsGet
		if ss.advance(turnValue(req.Params.Meta[TurnMeta]), user, s.opts.Now(), s.cfg().Surface.TurnIdle) {
			s.notify(ss) // bindings and forced tools may have expired
		}
		return nil
	})
	responded := func(ctx context.Context, method mcp.MCPMethod) {
		if method == mcp.MethodInitialize || method == mcp.MethodPing {
			return
		}
		cs := server.ClientSessionFromContext(ctx)
		if cs == nil {
			return
		}
		// Look up only: a response that outlives its session (a late
		// answer after a DELETE) must not bring the session back.
		s.mu.Lock()
		ss := s.sessions[cs.SessionID()]
		s.mu.Unlock()
		if ss != nil {
			ss.touch(s.opts.Now())
		}
	}
	h.AddOnSuccess(func(ctx context.Context, _ any, method mcp.MCPMethod, _ any, _ any) { responded(ctx, method) })
	h.AddOnError(func(ctx context.Context, _ any, method mcp.MCPMethod, _ any, _ error) { responded(ctx, method) })
}

// turnValue reads a _meta["quiver/turn"] value: a string as written, a
// number as its JSON text (so 3 and "3" are the same turn) and its value;
// the zero mark for none.
func turnValue(raw json.RawMessage) turnMark {
	if len(raw) == 0 {
		return turnMark{} // most requests: no decoder for them
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return turnMark{}
	}
	switch x := v.(type) {
	case string:
		return turnMark{text: x}
	case json.Number:
		n, err := x.Int64()
		return turnMark{text: x.String(), n: n, num: err == nil}
	}
	return turnMark{}
}

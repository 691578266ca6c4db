package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/index"
	"github.com/quiver-mcp/quiver/registry"
)

// handleDirect serves a tools/call of a downstream tool by name.
func (s *Server) handleDirect(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ss := s.begin(ctx, req.Params.Meta)
	return s.dispatch(ctx, ss, req.Params.Name, rawArgs(req), req.Params.Meta), nil
}

// handleBuiltin serves quiver's own tools.
func (s *Server) handleBuiltin(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ss := s.begin(ctx, req.Params.Meta)
	st := s.state.Load()
	switch req.Params.Name {
	case builtin.SearchToolsName:
		var schemas builtin.SchemaSource
		if s.cfg.Surface.Reveal != registry.RevealList {
			schemas = schemaSource{st}
		}
		res := builtin.Search(ctx, searcher{st}, binder{s, ss}, schemas, rawArgs(req))
		s.notify(ss)
		return res, nil
	case builtin.CallToolName:
		return builtin.Call(ctx, caller{s, ss, req.Params.Meta}, rawArgs(req)), nil
	}
	return builtin.Refusal(gate.CodeUnknownTool, fmt.Sprintf("quiver has no builtin %q.", req.Params.Name)), nil
}

// begin finds the session and moves its turn clock.
func (s *Server) begin(ctx context.Context, meta *mcp.Meta) *session {
	ss := s.session(ctx)
	explicit := ""
	if meta != nil {
		if v, ok := meta.AdditionalFields["quiver/turn"]; ok && v != nil {
			explicit = fmt.Sprint(v)
		}
	}
	if ss.advance(explicit, s.opts.Now(), s.cfg.Surface.TurnIdle) {
		s.notify(ss) // bindings may have expired
	}
	return ss
}

// dispatch is the one path every call takes: resolve, gate, forward.
func (s *Server) dispatch(ctx context.Context, ss *session, name string, args json.RawMessage, meta *mcp.Meta) *mcp.CallToolResult {
	st := s.state.Load()
	call := gate.Call{Session: ss.id, Name: name, Args: args, Turn: ss.currentTurn()}
	if t, ok := st.cat.Lookup(name); ok {
		call.Tool = s.gateTool(t)
		call.Visible = s.visible(ss, st, name)
	} else {
		call.Closest = st.ix.Closest(name, 3, index.KindMCP)
	}
	d := s.gate.Evaluate(ctx, call)
	log := s.log.With("session", ss.id, "tool", name, "code", d.Code)
	if d.Verdict != gate.Allow {
		log.Info("call refused", "reason", d.Reason)
		return builtin.Refusal(d.Code, d.Reason)
	}
	res, err := s.reg.Call(ctx, name, d.Args, meta)
	if err != nil {
		log.Warn("call failed", "err", err)
		code := "error.downstream"
		switch {
		case errors.Is(err, registry.ErrServerDown):
			code = "error.server_down"
		case errors.Is(err, context.DeadlineExceeded):
			code = "error.timeout"
		case errors.Is(err, context.Canceled):
			code = "error.cancelled"
		}
		return builtin.Refusal(code, registry.Redact(err.Error(), s.cfg.Secrets))
	}
	log.Debug("call done", "is_error", res.IsError)
	return res
}

// gateTool gives the gate the facts it needs about a catalog tool.
func (s *Server) gateTool(t registry.Tool) *gate.Tool {
	a := t.Annotations
	gt := &gate.Tool{Name: t.Exposed, Server: t.Server, Schema: t.InputSchema,
		Hints: gate.Hints{ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint, Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint}}
	if srv, ok := s.cfg.Server(t.Server); ok {
		gt.Dir = srv.Cwd
	}
	return gt
}

func rawArgs(req mcp.CallToolRequest) json.RawMessage {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments
	}
	if req.Params.Arguments == nil {
		return nil
	}
	b, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return nil
	}
	return b
}

// The small adapters below give builtin the capabilities it asks for,
// bound to one session and one snapshot.

type searcher struct{ st *snapshot }

func (x searcher) Search(ctx context.Context, q index.Query) (index.Result, error) {
	return x.st.ix.Search(ctx, q)
}

func (x searcher) Closest(text string, n int, kinds ...index.Kind) []string {
	return x.st.ix.Closest(text, n, kinds...)
}

type binder struct {
	s  *Server
	ss *session
}

func (b binder) Bind(names []string) []string {
	return b.ss.bind(names, b.s.cfg.Surface.MaxBound)
}

type schemaSource struct{ st *snapshot }

func (x schemaSource) InputSchema(name string) (json.RawMessage, bool) {
	t, ok := x.st.cat.Lookup(name)
	return t.InputSchema, ok
}

type caller struct {
	s    *Server
	ss   *session
	meta *mcp.Meta
}

func (c caller) CallTool(ctx context.Context, name string, args json.RawMessage) *mcp.CallToolResult {
	return c.s.dispatch(ctx, c.ss, name, args, c.meta)
}

package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/index"
	"github.com/quiver-mcp/quiver/registry"
)

// handleBuiltin serves quiver's own tools. Like a direct call it takes one
// view at its entrance; call_tool dispatches within that view.
func (s *Server) handleBuiltin(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ctx = withRoundTrip(ctx, req.Params.MultiRoundTripParams)
	v := s.viewOf(s.session(ctx))
	defer func() { v.release() }() // the view search waited for, not the first
	switch req.Params.Name {
	case builtin.SearchToolsName:
		ctx, searched := s.observe(ctx, Step{Kind: StepSearch, Method: string(mcp.MethodToolsCall), Tool: builtin.SearchToolsName, Meta: metaFields(req.Params.Meta)})
		defer searched("")
		v = v.awaitStartup(ctx, nil)
		search := builtin.SearchTool{Index: searcher{v}, Binder: binder{v}, Slash: v.cfg, Memory: v.ss, Pending: v.notUp()}
		if v.cfg.Surface.Reveal != registry.RevealList {
			search.Schemas = schemaSource{v.snapshot}
		}
		res := search.Call(ctx, rawArgs(req))
		s.notify(v.ss)
		return res, nil
	case builtin.CallToolName:
		return builtin.Call(ctx, caller{v, req.Params.Meta}, rawArgs(req)), nil
	case builtin.ReadFileName:
		res := builtin.ReadFile(ctx, v.skills, files{v}, rawArgs(req))
		return bound(res, v.cfg.Surface.MaxResultBytes, v.redact.Redact, nil), nil
	case builtin.RequestCapabilityName:
		return builtin.RequestCapability(ctx, capabilities{v}, rawArgs(req)), nil
	}
	return builtin.Refusal(gate.CodeUnknownTool, fmt.Sprintf("quiver has no builtin %q.", req.Params.Name)), nil
}

// The small adapters below give builtin the capabilities it asks for,
// bound to one request's view.

// searcher searches one view: withheld tools are never in an answer, and
// do not take the place of tools that may be.
type searcher struct{ v reqView }

func (x searcher) Search(ctx context.Context, q index.Query) (index.Result, error) {
	res, err := x.v.ix.Search(ctx, q)
	if err == nil && slices.ContainsFunc(res.Hits, x.withheld) {
		want := len(res.Hits)
		q.Limit = 10 // the index's most, so that withheld hits free their places
		if res, err = x.v.ix.Search(ctx, q); err != nil {
			return res, err
		}
		res.Hits = slices.DeleteFunc(res.Hits, x.withheld)
		res.Hits = res.Hits[:min(want, len(res.Hits))]
	}
	// The servers' other tools an answer names are no more offered than
	// its hits: a withheld one is never named.
	for i := range res.Servers {
		res.Servers[i].More = slices.DeleteFunc(slices.Clone(res.Servers[i].More), x.v.withheld)
	}
	return res, err
}

func (x searcher) withheld(h index.Hit) bool { return x.v.withheld(h.Entry.Name) }

func (x searcher) Closest(text string, n int, kinds ...index.Kind) []string {
	return x.v.closest(text, n, kinds...)
}

// closest are the n names nearest text that the session may be offered:
// a withheld tool is not suggested, and does not take a suggestion's place.
func (v reqView) closest(text string, n int, kinds ...index.Kind) []string {
	out := slices.DeleteFunc(v.ix.Closest(text, 4*n, kinds...), v.withheld)
	return out[:min(n, len(out))]
}

// binder binds only what may be bound: tools in the catalog, neither
// withheld nor slash-gated.
type binder struct{ v reqView }

func (b binder) Bind(names []string, weak bool) []string {
	v := b.v
	ok := slices.DeleteFunc(slices.Clone(names), func(n string) bool {
		_, known := v.cat.Lookup(n)
		_, gated := v.cfg.SlashFor(n)
		return !known || gated || v.withheld(n)
	})
	if len(ok) == 0 {
		return []string{}
	}
	return v.ss.bind(ok, v.cfg.Surface.MaxBound, v.cfg.Surface.BindTurns, !weak)
}

type schemaSource struct{ st *snapshot }

// InputSchema is the schema as listed: the server's, plus quiver's
// justification argument for execution-class tools.
func (x schemaSource) InputSchema(name string) (json.RawMessage, bool) {
	t, ok := x.st.tools[name]
	return t.RawInputSchema, ok
}

// caller is call_tool's way into dispatch, in the view of the request
// that carries it.
type caller struct {
	v    reqView
	meta *mcp.Meta
}

func (c caller) CallTool(ctx context.Context, name string, args json.RawMessage) *mcp.CallToolResult {
	return c.v.dispatch(ctx, name, args, c.meta)
}

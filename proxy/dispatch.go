package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/index"
	"github.com/quiver-mcp/quiver/registry"
)

// handleDirect serves a tools/call of a downstream tool by name.
func (s *Server) handleDirect(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ctx = withRoundTrip(ctx, req.Params.MultiRoundTripParams)
	ss := s.session(ctx)
	return s.dispatch(ctx, ss, req.Params.Name, rawArgs(req), req.Params.Meta), nil
}

// handleBuiltin serves quiver's own tools.
func (s *Server) handleBuiltin(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ctx = withRoundTrip(ctx, req.Params.MultiRoundTripParams)
	ss := s.session(ctx)
	st := s.state.Load()
	switch req.Params.Name {
	case builtin.SearchToolsName:
		st = s.awaitStartup(ctx, st.cfg.Surface.SearchWait, nil)
		search := builtin.SearchTool{Index: searcher{s, ss, st}, Binder: binder{s, ss, st}, Slash: st.cfg, Memory: ss, Pending: s.notUp(st.cat)}
		if s.cfg().Surface.Reveal != registry.RevealList {
			search.Schemas = schemaSource{st}
		}
		res := search.Call(ctx, rawArgs(req))
		s.notify(ss)
		return res, nil
	case builtin.CallToolName:
		return builtin.Call(ctx, caller{s, ss, req.Params.Meta}, rawArgs(req)), nil
	case builtin.ReadFileName:
		res := builtin.ReadFile(ctx, s.current().skills, files{s, ss}, rawArgs(req))
		return bound(res, s.cfg().Surface.MaxResultBytes, s.redactor(), nil), nil
	case builtin.RequestCapabilityName:
		return builtin.RequestCapability(ctx, capabilities{s, ss}, rawArgs(req)), nil
	}
	return builtin.Refusal(gate.CodeUnknownTool, fmt.Sprintf("quiver has no builtin %q.", req.Params.Name)), nil
}

// isBuiltin reports whether name is one of quiver's own tools on this
// surface. Transparent mode has none, and reveal: list no call_tool:
// there a downstream tool may bear the name (server-filesystem's
// read_file), and it is withheld, held or switched off like any other.
func (s *Server) isBuiltin(name string) bool {
	if s.transparent {
		return false
	}
	switch name {
	case builtin.SearchToolsName, builtin.ReadFileName, builtin.RequestCapabilityName:
		return true
	case builtin.CallToolName:
		return s.cfg().Surface.Reveal != registry.RevealList
	}
	return false
}

// dispatch is the one path every call takes: resolve, gate, forward.
func (s *Server) dispatch(ctx context.Context, ss *session, name string, args json.RawMessage, meta *mcp.Meta) *mcp.CallToolResult {
	if state := roundTrip(ctx).RequestState; state != "" && modernHost(ctx) {
		// The retry of a call whose downstream waits on the host's input
		// (park.go): it was decided when it started.
		if st, err := s.seal.read(state, s.opts.Now()); err == nil && st.Kind == stateParking {
			if st, err = s.seal.open(state, s.opts.Now()); err != nil {
				return refusal{deny(codeInputLost, fmt.Sprintf("The answers' state cannot be used (%v); call the tool again from the start.", err))}.result()
			}
			return s.resumed(ctx, ss, name, args, st)
		}
	}
	st := s.state.Load()
	call := gate.Call{Session: ss.key, Name: name, Args: args, Turn: ss.currentTurn(), Roots: s.relay.sessionRoots(ctx)}
	// A tool the install left out (invalid header annotations) is unknown.
	if t, ok := st.cat.Lookup(name); ok && st.tools[name].Name != "" {
		call.Tool = s.gateTool(t)
		call.WithheldWhy, call.Withheld = s.whyWithheld(ss, name)
		if t.Held != nil {
			call.Changed = t.Held.Diff.Summary()
		}
		call.Visible = s.visible(ss, st, name)
		if !call.Visible {
			call.Lapsed = ss.lapsedWhy(name, st.cfg.Surface.BindTurns)
		}
		if sl := ss.activeSlash(); sl != nil {
			call.Activity, call.ReadOnlyActivity = sl.Activity, sl.ReadOnly
			call.Forced = slices.Contains(sl.Tools, name)
			if pins := sl.Pins[name]; len(pins) > 0 {
				call.Pins = pins
			}
		}
	} else {
		call.Closest = s.closest(ss, st, name, 3, index.KindMCP)
	}
	s.frame(call.Tool, call.Roots)
	d, id, input := s.admit(ctx, ss, call, true)
	if input != nil {
		return input // the approval card, as an input request
	}
	if d.Verdict != gate.Allow {
		s.log.Info("call refused", "session", ss.id, "tool", name, "code", d.Code, "reason", d.Reason)
		return builtin.Refusal(d.Code, d.Reason)
	}
	if modernHost(ctx) {
		return s.parkedCall(ctx, ss, name, d, id, meta)
	}
	res, err := s.forward(ctx, name, d.Args, meta)
	return s.finish(ss, name, d, id, res, err)
}

// finish records how an allowed call ended and makes its result safe to
// show: a downstream failure becomes a refusal with a code, a result is
// redacted and bounded.
func (s *Server) finish(ss *session, name string, d gate.Decision, id int64, res *mcp.CallToolResult, err error) *mcp.CallToolResult {
	if err != nil {
		s.log.Warn("call failed", "session", ss.id, "tool", name, "code", d.Code, "err", s.redactor()(err.Error()))
		code, outcome := "error.downstream", gate.OutcomeError
		switch {
		case errors.Is(err, registry.ErrServerDown):
			code = "error.server_down"
			if d.Class != gate.ClassRead {
				// It may have run: say so, and never retry it.
				outcome = gate.OutcomeUnknown
			}
		case errors.Is(err, context.DeadlineExceeded):
			code, outcome = "error.timeout", gate.OutcomeUnknown
		case errors.Is(err, context.Canceled):
			code, outcome = "error.cancelled", gate.OutcomeCancelled
		}
		s.ended(id, outcome, code)
		reason := s.redactor()(err.Error())
		if outcome == gate.OutcomeUnknown {
			reason += "; it may or may not have taken effect: check before calling it again"
		}
		return builtin.Refusal(code, reason)
	}
	outcome := gate.OutcomeOK
	if res.IsError {
		outcome = gate.OutcomeError
	}
	s.ended(id, outcome, "")
	// Every call passes here: a logger With its attributes cost three
	// allocations a call even with debug off.
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("call done", "session", ss.id, "tool", name, "code", d.Code, "is_error", res.IsError)
	}
	t, _ := s.state.Load().cat.Lookup(name)
	return bound(res, s.cfg().Surface.MaxResultBytes, s.redactor(), t.OutputSchema)
}

// admit decides a call and records it. An allowed call comes back with
// its ledger id, already recorded as started (the one write a call waits
// for); a refusal is recorded in the background; an ask goes to approval
// when mayAsk, and is refused when not. The decision's reason and
// justification are redacted before anything stores or shows them: a
// reason may quote the arguments, and the arguments may hold a token.
//
// For a host on 2026-07-28 an approval card is an input request: then
// admit returns the result that asks for it, and the call must return
// that instead of running.
func (s *Server) admit(ctx context.Context, ss *session, call gate.Call, mayAsk bool) (gate.Decision, int64, *mcp.CallToolResult) {
	d := s.gate().Evaluate(ctx, call)
	redact := s.redactor()
	d.Reason, d.Justification = redact(d.Reason), redact(d.Justification)
	if d.Verdict == gate.Ask && !mayAsk {
		d.Verdict = gate.Deny
		d.Reason += " quiver asks no one about this kind of request, so it was refused."
	}
	if s.ledger == nil {
		var input *mcp.CallToolResult
		if d.Verdict == gate.Ask {
			d, input = s.approve(ctx, ss, call, d, 0)
		}
		return d, 0, input
	}
	switch d.Verdict {
	case gate.Allow:
		id, err := s.ledger.RecordStarted(ctx, ss.key, call.Name, call.Args, d)
		if err != nil {
			s.log.Error("ledger: recording a call failed", "tool", call.Name, "err", err)
		}
		return d, id, nil
	case gate.Deny:
		s.ledger.RecordRefusal(ss.key, call.Name, call.Args, d)
		return d, 0, nil
	}
	id, err := s.ledger.RecordDecision(ctx, ss.key, call.Name, call.Args, d)
	if err != nil {
		s.log.Error("ledger: recording a decision failed", "tool", call.Name, "err", err)
	}
	d, input := s.approve(ctx, ss, call, d, id)
	if input != nil {
		return d, id, input
	}
	if id != 0 {
		if d.Verdict == gate.Allow {
			err = s.ledger.RecordStart(ctx, id)
		} else {
			err = s.ledger.RecordApproval(ctx, id, d.Code)
		}
		if err != nil {
			s.log.Error("ledger: recording an approval failed", "call", id, "err", err)
		}
	}
	return d, id, nil
}

// ended records how a started call ended, in the background.
func (s *Server) ended(id int64, o gate.Outcome, detail string) {
	if s.ledger != nil && id != 0 {
		s.ledger.RecordEndLater(id, o, detail)
	}
}

// gateTool gives the gate the facts it needs about a catalog tool.
func (s *Server) gateTool(t registry.Tool) *gate.Tool { return gateToolFor(s.current(), t) }

func gateToolFor(set *settings, t registry.Tool) *gate.Tool {
	a := t.Annotations
	gt := &gate.Tool{Name: t.Exposed, Server: t.Server, Schema: t.InputSchema,
		Hints: gate.Hints{ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint, Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint}}
	if fr, ok := set.frames[t.Server]; ok {
		// Clipped: frame appends the session's roots to a copy, never to
		// the configuration's slice.
		gt.Home, gt.Cwd, gt.Bases, gt.RelativeElsewhere = fr.home, fr.cwd, slices.Clip(fr.bases), fr.elsewhere
		gt.PathArgs = fr.pathArgs[t.Name]
	}
	_, gt.SlashGated = set.cfg.SlashFor(t.Exposed)
	return gt
}

// A serverFrame is where a server puts the paths it is given, worked out
// once per configuration (a folder argument is looked up on disk).
type serverFrame struct {
	home, cwd string
	bases     []string
	elsewhere bool
	pathArgs  map[string][]string
}

// frames works out every server's frame for cfg.
func frames(cfg *registry.Config) map[string]serverFrame {
	out := make(map[string]serverFrame, len(cfg.Servers))
	for _, srv := range cfg.Servers {
		fr := serverFrame{home: srv.Home(), pathArgs: srv.PathArgs}
		if srv.Transport == registry.TransportStdio {
			// Where the child runs: its cwd:, else quiver's, which it
			// inherits. A bare name is found there.
			fr.cwd, _ = filepath.Abs(srv.Cwd) // "" is quiver's own
		}
		switch srv.PathBase {
		case "":
			// Undeclared: quiver cannot know where the server puts a
			// relative path, so the gate holds every one to be outside.
		case registry.PathBaseRoots:
			fr.bases = srv.RootDirs() // the session's roots join in frame
		case registry.PathBaseNone:
			fr.elsewhere = true
		case registry.PathBaseCwd:
			if fr.cwd != "" {
				fr.bases = []string{fr.cwd}
			}
		default:
			fr.bases = []string{srv.PathBase}
		}
		out[srv.Name] = fr
	}
	return out
}

// frame completes the server's frame for one call: a server that resolves
// relative paths against its allowed folders (path_base: roots) also has
// the session's MCP roots among them, since server-filesystem takes the
// client's roots as its allowed folders. Every base is tried by the gate.
func (s *Server) frame(t *gate.Tool, roots []string) {
	if t == nil || t.Server == "" {
		return
	}
	if srv, ok := s.cfg().Server(t.Server); ok && srv.PathBase == registry.PathBaseRoots {
		// This session's roots, and every root the server was ever given
		// by any session: it keeps them.
		for _, r := range append(slices.Clone(roots), s.relay.givenRoots(t.Server)...) {
			if p, err := rootPath(r); err == nil {
				t.Bases = append(t.Bases, p)
			}
		}
	}
}

// callTimeout is the deadline of a call to the named tool's server.
func (s *Server) callTimeout(name string) time.Duration {
	if t, ok := s.state.Load().cat.Lookup(name); ok {
		if sc, ok := s.cfg().Server(t.Server); ok && sc.Timeout > 0 {
			return sc.Timeout
		}
	}
	return registry.DefaultTimeout
}

// rootPath is the folder an MCP root names (a file:// URI, or a path).
func rootPath(root string) (string, error) {
	p := root
	if u, err := url.Parse(root); err == nil && u.Scheme == "file" {
		p = u.Path
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("root %q is not an absolute folder", root)
	}
	return filepath.Clean(p), nil
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

// searcher searches one snapshot for one session: withheld tools are
// never in an answer, and do not take the place of tools that may be.
type searcher struct {
	s  *Server
	ss *session
	st *snapshot
}

func (x searcher) Search(ctx context.Context, q index.Query) (index.Result, error) {
	res, err := x.st.ix.Search(ctx, q)
	if err == nil && slices.ContainsFunc(res.Hits, x.withheld) {
		want := len(res.Hits)
		q.Limit = 10 // the index's most, so that withheld hits free their places
		if res, err = x.st.ix.Search(ctx, q); err != nil {
			return res, err
		}
		res.Hits = slices.DeleteFunc(res.Hits, x.withheld)
		res.Hits = res.Hits[:min(want, len(res.Hits))]
	}
	// The servers' other tools an answer names are no more offered than
	// its hits: a withheld one is never named.
	for i := range res.Servers {
		res.Servers[i].More = slices.DeleteFunc(slices.Clone(res.Servers[i].More), func(n string) bool { return x.s.withheld(x.ss, n) })
	}
	return res, err
}

func (x searcher) withheld(h index.Hit) bool { return x.s.withheld(x.ss, h.Entry.Name) }

func (x searcher) Closest(text string, n int, kinds ...index.Kind) []string {
	return x.s.closest(x.ss, x.st, text, n, kinds...)
}

// closest are the n names nearest text that the session may be offered:
// a withheld tool is not suggested, and does not take a suggestion's place.
func (s *Server) closest(ss *session, st *snapshot, text string, n int, kinds ...index.Kind) []string {
	out := slices.DeleteFunc(st.ix.Closest(text, 4*n, kinds...), func(name string) bool { return s.withheld(ss, name) })
	return out[:min(n, len(out))]
}

// binder binds only what may be bound: tools in the catalog, neither
// withheld nor slash-gated.
type binder struct {
	s  *Server
	ss *session
	st *snapshot
}

func (b binder) Bind(names []string, weak bool) []string {
	ok := slices.DeleteFunc(slices.Clone(names), func(n string) bool {
		_, known := b.st.cat.Lookup(n)
		_, gated := b.s.cfg().SlashFor(n)
		return !known || gated || b.s.withheld(b.ss, n)
	})
	if len(ok) == 0 {
		return []string{}
	}
	return b.ss.bind(ok, b.s.cfg().Surface.MaxBound, b.s.cfg().Surface.BindTurns, !weak)
}

type schemaSource struct{ st *snapshot }

// InputSchema is the schema as listed: the server's, plus quiver's
// justification argument for execution-class tools.
func (x schemaSource) InputSchema(name string) (json.RawMessage, bool) {
	t, ok := x.st.tools[name]
	return t.RawInputSchema, ok
}

type caller struct {
	s    *Server
	ss   *session
	meta *mcp.Meta
}

func (c caller) CallTool(ctx context.Context, name string, args json.RawMessage) *mcp.CallToolResult {
	return c.s.dispatch(ctx, c.ss, name, args, c.meta)
}

package proxy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/registry"
)

// session returns the state of the session ctx belongs to, creating it on
// first use.
func (s *Server) session(ctx context.Context) *session {
	id := ""
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		id = cs.SessionID()
	}
	if id == "" {
		// A client without a session (streamable HTTP on 2026-07-28, which
		// dropped protocol sessions) holds nothing quiver could know it by
		// next time, and every such client used to share the one session
		// "": one client's bindings and approvals served another. Each of
		// its requests is a session of its own, remembered nowhere.
		ss := &session{key: ephemeralPrefix + newRunID() + "@" + s.run, ephemeral: true}
		ss.modern = true
		return ss
	}
	s.mu.Lock()
	ss, ok := s.sessions[id]
	if !ok {
		ss = &session{id: id, key: id + "@" + s.run}
		s.sessions[id] = ss
	}
	s.mu.Unlock()
	if v := server.RequestProtocolVersion(ctx); v != "" {
		ss.mu.Lock()
		ss.modern = mcp.IsModernProtocol(v)
		ss.mu.Unlock()
	}
	return ss
}

// filter is mcp-go's tool filter. On tools/list it returns the session's
// surface in quiver's order, ignoring mcp-go's alphabetical one. At call
// time mcp-go passes the one tool being called: that passes, because the
// gate, not the list, decides calls (and a refusal the model can read beats
// "tool not found"). A tools/list always has at least search_tools, so a
// one-tool input at list time is search_tools itself, which is on every
// surface anyway.
func (s *Server) filter(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	if len(tools) == 1 {
		return tools
	}
	v := s.viewOf(s.session(ctx))
	defer v.release()
	names := v.surface()
	v.ss.mu.Lock()
	v.ss.listed = names
	v.ss.mu.Unlock()
	out := make([]mcp.Tool, 0, len(names))
	for _, n := range names {
		out = append(out, v.tools[n])
	}
	return out
}

// layers are what a session may call now without a search, in order and
// with no name twice: always-on (builtins, then config's always_on),
// forced by this turn's slash command, found by its own searches (oldest
// first). No withheld tool is in any of them.
type layers struct {
	always, forced, found []string
}

func (l layers) all() []string {
	return slices.Concat(l.always, l.forced, l.found)
}

func (v reqView) layers() layers {
	var l layers
	seen := map[string]bool{}
	add := func(dst *[]string, n string) {
		if _, ok := v.tools[n]; ok && !seen[n] && !v.withheld(n) {
			seen[n] = true
			*dst = append(*dst, n)
		}
	}
	for _, b := range v.builtins() {
		add(&l.always, b.Name)
	}
	for _, n := range v.cfg.Surface.AlwaysOn {
		add(&l.always, n)
	}
	if sl := v.ss.activeSlash(); sl != nil {
		for _, n := range sl.Tools {
			add(&l.forced, n)
		}
	}
	for _, n := range v.ss.bound(v.cfg.Surface.BindTurns) {
		add(&l.found, n)
	}
	return l
}

// surface lists, in order, the tools the session's tools/list shows: the
// always-on layer, then (per reveal mode) the forced and found layers, or
// every other tool in direct mode.
func (v reqView) surface() []string {
	l := v.layers()
	switch v.cfg.Surface.Reveal {
	case registry.RevealDirect:
		names := slices.Concat(l.always, l.forced)
		for _, t := range v.cat.Tools {
			n := t.Exposed
			if _, ok := v.tools[n]; !ok || slices.Contains(names, n) || v.withheld(n) {
				continue
			}
			if _, gated := v.cfg.SlashFor(n); gated {
				continue // listed only in the turn its slash command forces it
			}
			names = append(names, n)
		}
		return names
	case registry.RevealAuto, registry.RevealList:
		v.ss.mu.Lock()
		modern := v.ss.modern
		v.ss.mu.Unlock()
		// A 2026-07-28 client's list must not change as a side effect; it
		// reaches forced and found tools through call_tool.
		if modern && v.cfg.Surface.Reveal == registry.RevealAuto {
			return l.always
		}
		return l.all()
	}
	return l.always
}

// withheld reports whether the session may not see, bind or call name
// now, whatever a search or a slash command says (see whyWithheld).
func (v reqView) withheld(name string) bool {
	_, w := v.whyWithheld(name)
	return w
}

// whyWithheld is the one decision: a tool held for a changed definition
// (registry/pin.go), switched off (tools.yaml, or its server's
// tools_default: off) or outside the allow list of this turn's
// slash command is withheld: not listed, not found, not bound, refused at
// dispatch with deny.withheld; an activity narrows the catalog and nothing
// widens it. why ends the refusal's sentence. quiver's builtins are never
// withheld; a downstream tool is, whatever its name (isBuiltin).
func (v reqView) whyWithheld(name string) (why string, withheld bool) {
	if v.isBuiltin(name) {
		return "", false
	}
	t, ok := v.cat.Lookup(name)
	return v.withheldWhy(name, t, ok)
}

// withheldWhy is whyWithheld for t, the entry found for name (ok): a
// catalog tool, or a server's pass-through operation (opTool), which is
// switched off and narrowed by a slash command like a tool.
func (v reqView) withheldWhy(name string, t registry.Tool, ok bool) (why string, withheld bool) {
	if ok && t.Held != nil {
		return "it is held until a person accepts its definition (" + t.Held.Diff.Summary() +
			"); a person must accept it with `quiver tools accept " + name + "`", true
	}
	if ok && t.Off {
		why = "it is switched off here"
		if t.Toggle != "" {
			why += " (" + t.Toggle + ")"
		}
		return why + "; ask the user to enable it (quiver tools enable " + name + "), or use another tool", true
	}
	if sl := v.ss.activeSlash(); sl != nil && len(sl.Allow) > 0 && !registry.MatchAny(sl.Allow, name) {
		return fmt.Sprintf("this turn's /%s allows only %s", sl.Name, strings.Join(sl.Allow, ", ")), true
	}
	return "", false
}

// visible reports whether the session may call name now. (The gate
// checks slash gating first, so a slash-gated tool gets deny.slash_gated,
// not a "search first" that could never bind it.)
func (v reqView) visible(name string) bool {
	// A session of one request cannot carry a search's bindings to the
	// call that follows, so for it every tool is as in reveal: direct:
	// callable by name, and still decided by the gate. Binding is about
	// a stable list, not about what may run.
	if v.cfg.Surface.Reveal == registry.RevealDirect || v.ss.ephemeral {
		return true
	}
	return slices.Contains(v.layers().all(), name)
}

// notify tells one session that its tool list changed, if it did, and
// logs each change of what the session may call.
func (s *Server) notify(ss *session) {
	v := s.viewOf(ss)
	defer v.release()
	l := v.layers()
	names := v.surface()
	desc := fmt.Sprintf("surface: bound %d tools (%d always-on, %d forced, %d found by search; filtered from %d)",
		len(l.always)+len(l.forced)+len(l.found), len(l.always), len(l.forced), len(l.found), len(v.tools))
	key := fmt.Sprint(l)
	ss.mu.Lock()
	changed := ss.surfaced != key
	ss.surfaced = key
	send := ss.listed != nil && !slices.Equal(ss.listed, names)
	if send {
		ss.listed = names
	}
	ss.mu.Unlock()
	if changed {
		s.log.Info(desc, "session", ss.id, "turn", ss.currentTurn())
	}
	if !send {
		return
	}
	if err := s.mcp.SendNotificationToSpecificClient(ss.id, mcp.MethodNotificationToolsListChanged, nil); err != nil {
		s.log.Debug("list_changed not delivered", "session", ss.id, "err", err)
	}
}

func (s *Server) allSessions() []*session {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	return all
}

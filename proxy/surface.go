package proxy

import (
	"context"
	"slices"

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
	s.mu.Lock()
	ss, ok := s.sessions[id]
	if !ok {
		ss = &session{id: id}
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
	ss := s.session(ctx)
	st := s.state.Load()
	names := s.surface(ss, st)
	ss.mu.Lock()
	ss.listed = names
	ss.mu.Unlock()
	out := make([]mcp.Tool, 0, len(names))
	for _, n := range names {
		out = append(out, st.tools[n])
	}
	return out
}

// surface lists, in order, the tools the session sees: builtins and
// always-on tools in config order, then (per reveal mode) the tools its
// searches bound, oldest first, or every tool in direct mode.
func (s *Server) surface(ss *session, st *snapshot) []string {
	var names []string
	for _, b := range builtinTools(s.cfg.Surface.Reveal) {
		names = append(names, b.Name)
	}
	for _, n := range s.cfg.Surface.AlwaysOn {
		if _, ok := st.tools[n]; ok && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	switch s.cfg.Surface.Reveal {
	case registry.RevealDirect:
		for _, t := range st.cat.Tools {
			if _, ok := st.tools[t.Exposed]; ok && !slices.Contains(names, t.Exposed) {
				names = append(names, t.Exposed)
			}
		}
	case registry.RevealAuto, registry.RevealList:
		ss.mu.Lock()
		modern := ss.modern
		ss.mu.Unlock()
		// A 2026-07-28 client's list must not change as a side effect of a
		// call; it reaches found tools through call_tool.
		if modern && s.cfg.Surface.Reveal == registry.RevealAuto {
			break
		}
		for _, n := range ss.bound(s.cfg.Surface.BindTurns) {
			if _, ok := st.tools[n]; ok && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// visible reports whether the session may call name now.
func (s *Server) visible(ss *session, st *snapshot, name string) bool {
	if s.cfg.Surface.Reveal == registry.RevealDirect || slices.Contains(s.cfg.Surface.AlwaysOn, name) {
		return true
	}
	return ss.isBound(name, s.cfg.Surface.BindTurns)
}

// notify tells one session that its tool list changed, if it did.
func (s *Server) notify(ss *session) {
	st := s.state.Load()
	names := s.surface(ss, st)
	found := len(ss.bound(s.cfg.Surface.BindTurns))
	ss.mu.Lock()
	if ss.listed == nil || slices.Equal(ss.listed, names) {
		ss.mu.Unlock()
		return
	}
	ss.listed = names
	ss.mu.Unlock()
	s.log.Info("surface: tools/list changed",
		"session", ss.id, "tools", len(names), "found", found, "catalog", len(st.cat.Tools))
	if err := s.mcp.SendNotificationToSpecificClient(ss.id, mcp.MethodNotificationToolsListChanged, nil); err != nil {
		s.log.Debug("list_changed not delivered", "session", ss.id, "err", err)
	}
}

func (s *Server) notifyAll() {
	s.mu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		s.notify(ss)
	}
}

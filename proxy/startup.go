package proxy

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/registry"
)

// Startup awareness: npx may take seconds to fetch a server, and a search
// in those seconds must neither miss its tools in silence nor tell the
// model that no server can do the job (issue 17, problem 1).

// awaitStartup returns the installed snapshot once no configured server is
// still starting, or once ready says the snapshot has what the caller
// needs, or after wait (surface.search_wait), whichever comes first.
func (s *Server) awaitStartup(ctx context.Context, wait time.Duration, ready func(*snapshot) bool) *snapshot {
	// The common case, every server settled, costs no timer.
	if st := s.state.Load(); !anyStarting(st.cat) {
		return st
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		// The channel before the snapshot: an install in between closes it.
		next := s.installWait()
		st := s.state.Load()
		if !anyStarting(st.cat) || (ready != nil && ready(st)) {
			return st
		}
		select {
		case <-next:
		case <-timer.C:
			return s.state.Load()
		case <-ctx.Done():
			return s.state.Load()
		}
	}
}

func anyStarting(cat *registry.Catalog) bool {
	for _, sv := range cat.Servers {
		if sv.State == registry.StateStarting {
			return true
		}
	}
	return false
}

// notUp lists the servers of cat that are not up, for a search answer;
// a down server's reason is redacted like anything quiver shows.
func (s *Server) notUp(cat *registry.Catalog) []builtin.PendingServer {
	var out []builtin.PendingServer
	redact := s.redactor()
	for _, sv := range cat.Servers {
		if sv.State == registry.StateUp {
			continue
		}
		out = append(out, builtin.PendingServer{Name: sv.Name, State: string(sv.State), Reason: redact(sv.LastError)})
	}
	return out
}

// awaitTool runs before mcp-go looks a called tool up: a tool of a
// configured server that is still starting is not registered yet, and
// mcp-go would answer "tool not found" (-32602). It waits, up to
// surface.search_wait, for the tool to appear or its server to settle.
func (s *Server) awaitTool(ctx context.Context, req *mcp.CallToolRequest) {
	name := req.Params.Name
	if s.isBuiltin(name) {
		return
	}
	st := s.state.Load()
	if _, ok := st.tools[name]; ok {
		return
	}
	srv, ok := st.cfg.ServerFor(name)
	if !ok {
		return
	}
	if sv, ok := st.cat.Status(srv.Name); !ok || sv.State != registry.StateStarting {
		return
	}
	s.awaitStartup(ctx, st.cfg.Surface.SearchWait, func(st *snapshot) bool {
		_, ok := st.tools[name]
		sv, _ := st.cat.Status(srv.Name)
		return ok || sv.State != registry.StateStarting
	})
}

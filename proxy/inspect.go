package proxy

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// Search runs search_tools as a fresh session would, for the command line.
// Nothing it binds outlives the call.
func (s *Server) Search(ctx context.Context, args json.RawMessage) *mcp.CallToolResult {
	st := s.state.Load()
	ss := &session{id: "cli"}
	return builtin.SearchTool{Index: searcher{s, ss, st}, Binder: binder{s, ss, st}, Slash: st.cfg, Pending: s.notUp(st.cat)}.Call(ctx, args)
}

// Surface returns the tools a new session sees first, and every tool quiver
// could list, so people can weigh what the lean surface saves.
func (s *Server) Surface() (lean, full []mcp.Tool) {
	st := s.state.Load()
	for _, n := range s.surface(&session{}, st) {
		lean = append(lean, st.tools[n])
	}
	full = append(full, s.builtins()...)
	for _, t := range st.cat.Tools {
		if def, ok := st.tools[t.Exposed]; ok && !t.Off && t.Held == nil {
			full = append(full, def)
		}
	}
	return lean, full
}

// Class is the action class the gate in force gives a catalog tool: the
// policy's classes override first, then the tool's annotations.
func (s *Server) Class(t registry.Tool) gate.Class {
	return s.gate().ClassOf(s.gateTool(t))
}

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
	v := s.viewOf(&session{id: "cli"})
	defer v.release()
	return builtin.SearchTool{Index: searcher{v}, Binder: binder{v}, Slash: v.cfg, Pending: v.notUp()}.Call(ctx, args)
}

// Surface returns the tools a new session sees first, and every tool quiver
// could list, so people can weigh what the lean surface saves.
func (s *Server) Surface() (lean, full []mcp.Tool) {
	v := s.viewOf(&session{})
	defer v.release()
	for _, n := range v.surface() {
		lean = append(lean, v.tools[n])
	}
	full = append(full, v.builtins()...)
	for _, t := range v.cat.Tools {
		if def, ok := v.tools[t.Exposed]; ok && !t.Off && t.Held == nil {
			full = append(full, def)
		}
	}
	return lean, full
}

// Class is the action class the gate in force gives a catalog tool: the
// policy's classes override first, then the tool's annotations.
func (s *Server) Class(t registry.Tool) gate.Class {
	v := s.viewOf(nil)
	defer v.release()
	return v.gate.ClassOf(v.gateTool(t))
}

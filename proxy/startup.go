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

// awaitStartup returns a view of the snapshot in force once no configured
// server is still starting, or once ready says the snapshot has what the
// caller needs, or after v's surface.search_wait, whichever comes first.
// The view it returns is the one the caller goes on with: v is released
// when a newer snapshot replaces it.
func (v reqView) awaitStartup(ctx context.Context, ready func(*snapshot) bool) reqView {
	// The common case, every server settled, costs no timer.
	if !anyStarting(v.cat) {
		return v
	}
	timer := time.NewTimer(v.cfg.Surface.SearchWait)
	defer timer.Stop()
	for {
		// The channel before the snapshot: an install in between closes it.
		next := v.s.installed.wait()
		v = v.renew()
		if !anyStarting(v.cat) || (ready != nil && ready(v.snapshot)) {
			return v
		}
		select {
		case <-next:
		case <-timer.C:
			return v.renew()
		case <-ctx.Done():
			return v.renew()
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

// notUp lists the servers of the view's catalog that are not up, for a search answer;
// a down server's reason is redacted like anything quiver shows.
func (v reqView) notUp() []builtin.PendingServer {
	var out []builtin.PendingServer
	for _, sv := range v.cat.Servers {
		if sv.State == registry.StateUp {
			continue
		}
		out = append(out, builtin.PendingServer{Name: sv.Name, State: string(sv.State),
			Reason: v.redacted(sv.LastError), Said: v.redacted(sv.LastWords), SaidLabel: sv.WordsLabel()})
	}
	return out
}

// awaitTool runs before mcp-go looks a called tool up: a tool of a
// configured server that is still starting is not registered yet, and
// mcp-go would answer "tool not found" (-32602). It waits, up to
// surface.search_wait, for the tool to appear or its server to settle.
// A name still unknown then is sent to unknownTool, so that a plain
// tools/call of a misspelled name gets what call_tool gets: the gate's
// deny.unknown_tool with the closest names, recorded in the ledger
// (mcp-go looks the name up before any middleware runs; this hook is the
// one place before that lookup, and it holds the request by pointer).
func (s *Server) awaitTool(ctx context.Context, req *mcp.CallToolRequest) {
	name := req.Params.Name
	// No session: this hook only waits, and must not create one.
	v := s.viewOf(nil)
	defer func() { v.release() }()
	if v.isBuiltin(name) {
		return
	}
	if _, ok := v.tools[name]; ok {
		return
	}
	if srv, ok := v.cfg.ServerFor(name); ok {
		if sv, ok := v.cat.Status(srv.Name); ok && sv.State == registry.StateStarting {
			v = v.awaitStartup(ctx, func(st *snapshot) bool {
				_, ok := st.tools[name]
				sv, _ := st.cat.Status(srv.Name)
				return ok || sv.State != registry.StateStarting
			})
			if _, ok := v.tools[name]; ok {
				return
			}
		}
	}
	toUnknownTool(req)
}

// unknownTool is the registered, never listed tool that a call of an
// unknown name is sent to. A dot never occurs in an exposed tool name, so
// no downstream tool can take it; a host that calls it by name is sent to
// it as an unknown name too, and is told there is no tool of that name.
const unknownTool = "quiver.unknown_tool"

// unknownNameMeta carries the name the host called from awaitTool to
// handleUnknown. awaitTool sets it on every call it sends there, so a
// host's own value under this key never arrives.
const unknownNameMeta = "quiver/unknown_name"

func toUnknownTool(req *mcp.CallToolRequest) {
	if req.Params.Meta == nil {
		req.Params.Meta = &mcp.Meta{}
	}
	if req.Params.Meta.AdditionalFields == nil {
		req.Params.Meta.AdditionalFields = map[string]any{}
	}
	req.Params.Meta.AdditionalFields[unknownNameMeta] = req.Params.Name
	req.Params.Name = unknownTool
}

// handleUnknown runs a call of an unknown name through dispatch under the
// name the host called, where the gate refuses it.
func (s *Server) handleUnknown(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name := ""
	if m := req.Params.Meta; m != nil {
		name, _ = m.AdditionalFields[unknownNameMeta].(string)
		delete(m.AdditionalFields, unknownNameMeta)
	}
	req.Params.Name = name
	return s.handleDirect(ctx, req)
}

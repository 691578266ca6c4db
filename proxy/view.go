package proxy

import (
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// A reqView is one request's world: the session it belongs to and the
// snapshot in force when it entered (catalog, index, listed tools, and the
// configuration and gate installed with them). A request takes it once,
// at its entrance, and every step after reads this value, never the
// server's current state: a reload in the middle of a call cannot give it
// an old catalog and a new gate or configuration.
//
// A view holds a reference to its snapshot, so that a reload does not
// close the index under a search; release gives it back. (The mirror's
// per-server "view" of prompts and resources is another thing.)
type reqView struct {
	s  *Server
	ss *session
	*snapshot
	held bool // release gives back a reference
	// paths is the call's hold on the path lock (pathlock.go), given
	// back before a person is asked; nil when it holds none.
	paths *pathHold
}

// viewOf takes the snapshot in force for one request of session ss; the
// request releases it when it is done.
func (s *Server) viewOf(ss *session) reqView {
	st, held := s.acquire()
	return reqView{s: s, ss: ss, snapshot: st, held: held}
}

// release gives the view's snapshot back. What the view read stays valid
// (catalogs and settings are never changed in place); only the index may
// be closed once the last view of a replaced snapshot is released.
func (v reqView) release() {
	if v.held {
		v.snapshot.release()
	}
}

// renew releases v and takes the newest snapshot for the same session.
func (v reqView) renew() reqView {
	v.release()
	return v.s.viewOf(v.ss)
}

// builtins are quiver's own tools on this view's surface.
func (v reqView) builtins() []mcp.Tool { return v.s.builtinsFor(v.cfg) }

// isBuiltin reports whether name is one of quiver's own tools on this
// surface. Transparent mode has none, and reveal: list no call_tool:
// there a downstream tool may bear the name (server-filesystem's
// read_file), and it is withheld, held or switched off like any other.
func (v reqView) isBuiltin(name string) bool {
	if v.s.transparent {
		return false
	}
	switch name {
	case builtin.SearchToolsName, builtin.ReadFileName, builtin.RequestCapabilityName:
		return true
	case builtin.CallToolName:
		return v.cfg.Surface.Reveal != registry.RevealList
	}
	return false
}

// gateTool gives the gate the facts it needs about a catalog tool.
func (v reqView) gateTool(t registry.Tool) *gate.Tool { return gateToolFor(v.settings, t) }

// callTimeout is the deadline of a call to the named tool's server.
func (v reqView) callTimeout(name string) time.Duration {
	if t, ok := v.cat.Lookup(name); ok {
		if sc, ok := v.cfg.Server(t.Server); ok && sc.Timeout > 0 {
			return sc.Timeout
		}
	}
	return registry.DefaultTimeout
}

// approvalTimeout is how long an approval card waits for its answer.
func (v reqView) approvalTimeout() time.Duration { return v.gate.ApprovalTimeout() }

// redacted hides the view's secrets in text.
func (v reqView) redacted(text string) string { return v.redact.Redact(text) }

// prefixOf is the prefix of the named server ("" for a transparent one).
func prefixOf(cfg *registry.Config, srv string) string {
	if sc, ok := cfg.Server(srv); ok {
		return sc.Prefix
	}
	return srv
}

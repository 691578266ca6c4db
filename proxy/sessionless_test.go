package proxy

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/gate"
)

// A client without a session id (streamable HTTP on 2026-07-28) used to
// be session "", shared by every such client: client B called what client
// A had bound, and an approval for A's session let B read the file. Each
// such request is now a session of its own.
func TestSessionlessClientsShareNothing(t *testing.T) {
	r := newRig(t, rigServer+`
policy:
  defaults:
    write: ask
`, rigTools()...)
	a, b := sessionless(r), sessionless(r)

	// Nothing is bound for anyone, yet a tool is callable by name: the
	// gate, not a binding, decides.
	wantCode(t, a.call("ex__notes_list", map[string]any{}), "")

	// An approval from a terminal could never reach the next request, so
	// the refusal says so instead of naming `quiver approve N`.
	res := a.call("ex__notes_add", map[string]any{"title": "x"})
	wantCode(t, res, gate.CodeApprovalUnavailable)
	if !strings.Contains(res.text(), "no session") || strings.Contains(res.text(), "quiver approve") {
		t.Fatalf("refusal does not explain the missing session: %q", res.text())
	}

	// Whatever was granted to the session key of one request covers no
	// other request, of the same client or another.
	first, second := r.s.session(a.ctx), r.s.session(b.ctx)
	if first.key == second.key || !first.ephemeral || !second.ephemeral {
		t.Fatalf("sessionless requests share a key: %q %q", first.key, second.key)
	}
	ctx := context.Background()
	id, err := r.s.ledger.CreateApproval(ctx, gate.Approval{Session: first.key, Capability: "write", Tool: "ex__notes_add"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.s.ledger.ResolveApproval(ctx, id, gate.Resolution{Approve: true, Lifetime: gate.ForSession}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, b.call("ex__notes_add", map[string]any{"title": "y"}), gate.CodeApprovalUnavailable)
	r.s.mu.Lock()
	n := len(r.s.sessions)
	r.s.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d sessions remembered for sessionless clients", n)
	}
}

// sessionless is a client as mcp-go presents one on 2026-07-28 over HTTP:
// a session with no id, registered nowhere.
func sessionless(r *rig) *conn {
	sess := &testSession{id: "", notes: make(chan mcp.JSONRPCNotification, 64)}
	sess.Initialize()
	return &conn{r: r, sess: sess, ctx: r.s.mcp.WithContext(context.Background(), sess)}
}

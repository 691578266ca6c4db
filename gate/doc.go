// Package gate decides every tool call before quiver forwards it.
//
// Evaluate takes the concrete call — the tool's facts, the raw arguments the
// model wrote, the session's activity, turn and roots — and returns a
// Decision: allow, deny or ask, with a stable code and one sentence a model
// can act on. Hiding a tool never stopped a model from naming it, so the gate
// never trusts the surface: it re-checks binding, shape, activity, paths and
// rules on every call.
//
// gate knows nothing of MCP sessions, transports or the registry; the proxy
// hands it plain values. It never forwards a call and never talks to a user.
package gate

// Package gate decides every tool call before quiver forwards it.
//
// Evaluate takes the concrete call — the tool's facts, the raw arguments the
// model wrote, the session's activity, turn and roots — and returns a
// Decision: allow, deny or ask, with a stable code and one sentence a model
// can act on. Hiding a tool never stopped a model from naming it, so the gate
// never trusts the surface: it re-checks binding, shape, activity, paths and
// rules on every call, in the order of DESIGN.md: resolve, shape (JSON
// Schema, correction budget), pins, activity (read-only, justification),
// fence (every path argument resolved like the OS would), rules and class
// defaults, then grants and permits from the Ledger.
//
// The Ledger (SQLite) records each call's stages by argument digest, and
// holds grants, one-use permits and pending approvals, so that `quiver
// approve N` in another process can answer what a session asked.
//
// gate knows nothing of MCP sessions, transports or the registry; the proxy
// hands it plain values. It never forwards a call, never talks to a user and
// never loads a schema $ref from a file or the network.
package gate

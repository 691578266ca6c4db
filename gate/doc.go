// Package gate decides every tool call before quiver forwards it.
//
// Evaluate takes the concrete call — the tool's facts, the raw arguments the
// model wrote, the session's activity, turn and roots — and returns a
// Decision: allow, deny or ask, with a stable code and one sentence a model
// can act on. Hiding a tool never stopped a model from naming it, so the gate
// never trusts the surface: it re-checks binding, shape, activity, paths and
// rules on every call, in the order docs/ARCHITECTURE.md gives: resolve, shape (JSON
// Schema, correction budget), pins, activity (read-only, justification),
// fence, rules and class defaults, then grants and permits from the
// Ledger.
//
// The fence judges every path in the server's frame: a relative path
// against each folder the server resolves against (Tool.Bases), "~" as the
// server's HOME (Tool.Home). A path it cannot place (relative with no
// bases, "~" of an unknown HOME, a Windows path here) is outside, and only
// a one-use permit for the exact call allows it. A value is a path by its
// argument's name or by its shape ("/…", "~/…", "./…", "../…", "file:",
// "C:\…", "\\…"), at any depth. quiver's own files (WithProtected, and
// WithSecrets, whose folders above are refused too) are
// refused to every call (deny.protected_path) before inside or outside is
// asked (a server's own run folder, WithChildFolders, is carved out for
// its own server's calls only), and the work per call is capped (deny.args_too_complex), so that
// no argument makes the fence slow. Model-written text that a person will
// read on an approval card is checked by CheckModelText.
//
// The Ledger (SQLite) records each call's stages by argument digest, and
// holds grants, one-use permits and pending approvals, so that `quiver
// approve N` in another process can answer what a session asked.
//
// gate knows nothing of MCP sessions, transports or the registry; the proxy
// hands it plain values. It never forwards a call, never talks to a user and
// never loads a schema $ref from a file or the network.
package gate

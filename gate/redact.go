package gate

// The ledger holds what models wrote (paths, content, justifications) as
// they wrote it, and a model that read a token can put it there: whatever
// shows a ledger record to a person (the CLI, the operator page) passes it
// through one of these first, with the redactor of quiver's secrets.

// Redact hides secrets in every field of a that holds text.
func (a *Approval) Redact(r func(string) string) {
	a.Session, a.Tool, a.Capability, a.Path = r(a.Session), r(a.Tool), r(a.Capability), r(a.Path)
	a.Justification, a.Reason = r(a.Justification), r(a.Reason)
	needs := make([]Need, len(a.Needs))
	for i, n := range a.Needs {
		needs[i] = Need{Capability: r(n.Capability), Path: r(n.Path), Unresolved: r(n.Unresolved)}
	}
	a.Needs = needs
}

// Redact hides secrets in every field of g that holds text.
func (g *Grant) Redact(r func(string) string) {
	g.Capability, g.Tool, g.Path, g.Session = r(g.Capability), r(g.Tool), r(g.Path), r(g.Session)
}

// Redact hides secrets in every field of e that holds text.
func (e *CallEntry) Redact(r func(string) string) {
	e.Session, e.Tool, e.Code, e.Reason = r(e.Session), r(e.Tool), r(e.Code), r(e.Reason)
	e.Approval, e.Detail = r(e.Approval), r(e.Detail)
}

package proxy

import (
	"slices"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// callFacts gives call the facts of t that this request's view and session
// decide: the tool as the gate sees it, whether it is withheld (held for a
// changed definition, switched off, outside this turn's slash allow list)
// and why, whether the session may call it now, and the activity in force
// (read-only, forced tools, argument pins). Both doors build them here —
// dispatch for a catalog tool, enter for a server's pass-through operation
// (op: opTool, never bound, so always callable by name) — so a switch or an
// activity that covers a tool covers its server's prompts/get,
// resources/read, subscribe and completion alike.
func (v reqView) callFacts(call *gate.Call, t registry.Tool, op bool) {
	name := call.Name
	call.Tool = v.gateTool(t)
	if !v.isBuiltin(name) {
		call.WithheldWhy, call.Withheld = v.withheldWhy(name, t, true)
	}
	if t.Held != nil {
		call.Changed = t.Held.Diff.Summary()
	}
	call.Visible = op || v.visible(name)
	if !call.Visible {
		call.Lapsed = v.ss.lapsedWhy(name, v.cfg.Surface.BindTurns)
	}
	if sl := v.ss.activeSlash(); sl != nil {
		call.Activity, call.ReadOnlyActivity = sl.Activity, sl.ReadOnly
		call.Forced = slices.Contains(sl.Tools, name)
		if pins := sl.Pins[name]; len(pins) > 0 {
			call.Pins = pins
		}
	}
}

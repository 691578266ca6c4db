package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Evaluate decides one call. It never panics on any input and every
// decision it returns carries a code and a reason.
//
// The call goes through the steps in docs/ARCHITECTURE.md's order; the first step
// that reaches a decision ends it. A refusal of the arguments (shape,
// schema, justification) also counts against the tool's correction budget.
func (g *Gate) Evaluate(ctx context.Context, c Call) (d Decision) {
	defer func() {
		if r := recover(); r != nil {
			d = deny(CodeInternal, fmt.Sprintf("quiver could not evaluate the call to %q (internal error), so it did not run; tell the user.", c.Name))
		}
		if d.Code == "" || d.Reason == "" {
			d = deny(CodeInternal, fmt.Sprintf("quiver reached no decision for %q, so it did not run; tell the user.", c.Name))
		}
	}()
	// 1. Resolve.
	if d, done := resolve(c); done {
		return d
	}
	e := &evaluation{g: g, c: c, t: c.Tool, class: g.ClassOf(c.Tool)}
	for _, step := range [...]func(*evaluation) (Decision, bool){
		(*evaluation).shape,    // 2. Shape (the schema check waits for the pins).
		(*evaluation).pin,      // 3. Pins, then the schema check of step 2.
		(*evaluation).activity, // 4. Activity and justification.
		(*evaluation).fence,    // 5. Fence.
		(*evaluation).rules,    // 6. Rules, then the class default.
	} {
		if d, done := step(e); done {
			return d
		}
	}
	// 7. Grants and permits.
	return e.cover(ctx)
}

// An evaluation is one call on its way through Evaluate's steps: what
// each step learned that a later one needs.
type evaluation struct {
	g     *Gate
	c     Call
	t     *Tool
	class Class

	// shape
	args    map[string]any
	shadows []shadow
	schema  *compiledSchema
	just    any // the justification argument, of an execute-class call
	hasJust bool

	// activity
	justification string
	canon         json.RawMessage

	// fence
	roots      []string
	paths      []pathArg
	resolved   []ResolvedPath
	placedOut  []string  // placed paths outside the fence
	unresolved []pathArg // paths quiver could not place, one per raw value
	outside    []string  // placedOut, then the raw values of unresolved
	capability string    // what a path outside needs: read or mutate outside

	// rules
	out Decision
}

// shape checks that the arguments are one JSON object and parses them. An
// execute-class call's justification is taken out here, before the schema
// sees the arguments, unless the tool's own schema declares it.
func (e *evaluation) shape() (Decision, bool) {
	raw, d, ok := shape(e.c)
	if !ok {
		return e.g.refuse(e.c, d), true
	}
	args, shadows, err := parseArgs(raw)
	if err != nil {
		return e.g.refuse(e.c, deny(CodeArgsShape, fmt.Sprintf("The arguments for %q must be one JSON object of named parameters (%v); call again with an object such as {\"name\": value}.", e.c.Name, err))), true
	}
	e.args, e.shadows = args, shadows
	e.schema = e.g.schemas.get(e.t.Name, e.t.Schema)
	if e.class == ClassExecute {
		e.just, e.hasJust = args[justificationArg]
		if !e.schema.declaresJustification {
			// quiver's own argument: the downstream tool never sees it.
			delete(args, justificationArg)
		}
	}
	return Decision{}, false
}

// pin overwrites the activity's pinned arguments, then validates against
// the tool's schema: what is checked is exactly what will be forwarded.
func (e *evaluation) pin() (Decision, bool) {
	for k, v := range e.c.Pins {
		nv, err := normalizeValue(v)
		if err != nil {
			return deny(CodeInternal, fmt.Sprintf("The pinned argument %q of this activity is not a JSON value; tell the user to fix the configuration.", k)), true
		}
		e.args[k] = nv
	}
	if e.schema.sch != nil {
		if err := e.schema.sch.Validate(any(e.args)); err != nil {
			return e.g.refuse(e.c, deny(CodeArgsInvalid, fmt.Sprintf("The arguments for %q do not fit its schema: %s. Fix them and call again.", e.c.Name, explain(err, e.schema.props)))), true
		}
	}
	return Decision{}, false
}

// activity refuses a call a read-only activity does not allow and an
// execute-class call without a usable justification, then fixes the
// arguments' canonical form (what the digest and the downstream see).
func (e *evaluation) activity() (Decision, bool) {
	c, class := e.c, e.class
	if c.ReadOnlyActivity && class != ClassRead {
		act := c.Activity
		if act == "" {
			act = "current"
		}
		dd := deny(CodeReadOnly, fmt.Sprintf("The %s activity is read-only and %q is a %s tool: it needs the %q capability. Use a read-only tool, or ask the user to leave the activity.", act, c.Name, class, class))
		dd.Class, dd.Capability = class, string(class)
		return dd, true
	}
	if class == ClassExecute {
		j, why := checkJustification(e.just, e.hasJust)
		if why != "" {
			return e.g.refuse(c, deny(CodeJustification, fmt.Sprintf("%q runs commands, so it needs a %q argument: %s. Call again with one or two sentences saying why it must run (at most %d characters).", c.Name, justificationArg, why, maxJustification))), true
		}
		e.justification = j
	}
	canon, err := canonical(e.args)
	if err != nil {
		return deny(CodeInternal, fmt.Sprintf("quiver could not re-encode the arguments for %q; it did not run.", c.Name)), true
	}
	e.canon = canon
	return Decision{}, false
}

// fence resolves every path argument against the roots (the policy's and
// the session's), refuses what the fence refuses outright, and sorts the
// paths outside for the steps after it. Under outside_fence: deny, a path
// outside ends the call here.
func (e *evaluation) fence() (Decision, bool) {
	g, c, class := e.g, e.c, e.class
	e.roots = g.p.roots
	own := g.ownChildren(e.t)
	if len(c.Roots) > 0 || len(own) > 0 {
		e.roots = append(append([]string(nil), e.roots...), g.sessionRoots(c.Roots)...)
		// The server's own folder, for its own calls only: a server's
		// plain names land there.
		for i := 0; i < len(own); i += 2 {
			if !contains(e.roots, own[i]) {
				e.roots = append(e.roots, own[i])
			}
		}
	}
	skip := ""
	if class == ClassExecute {
		skip = justificationArg
	}
	paths, dd, ok := g.fence(c, e.t, class, e.args, e.shadows, skip, e.roots)
	if !ok {
		return dd, true
	}
	e.paths = paths
	for _, pa := range paths {
		e.resolved = append(e.resolved, ResolvedPath{Arg: pa.arg, Raw: pa.raw, Path: pa.primary,
			Outside: pa.isOutside(), Unresolved: pa.unresolved})
		for _, o := range pa.outside {
			if !contains(e.placedOut, o) {
				e.placedOut = append(e.placedOut, o)
			}
		}
		if pa.unresolved != "" && !slices.ContainsFunc(e.unresolved, func(u pathArg) bool { return u.raw == pa.raw }) {
			e.unresolved = append(e.unresolved, pa)
		}
	}
	e.outside = append(e.outside, e.placedOut...)
	for _, u := range e.unresolved {
		if !contains(e.outside, u.raw) {
			e.outside = append(e.outside, u.raw)
		}
	}
	e.capability = CapMutateOutside
	if class == ClassRead {
		e.capability = CapReadOutside
	}
	if len(e.outside) > 0 && g.p.outsideDeny {
		reason := g.outsideText("Using", e.placedOut, e.unresolved, e.roots, ", and this setup refuses such calls") + " " + g.howInside(e.roots, e.unresolved, false)
		dd := deny(CodeOutsideFence, reason)
		dd.Class, dd.Capability, dd.Paths, dd.Resolved = class, e.capability, e.outside, e.resolved
		return dd, true
	}
	return Decision{}, false
}

// rules applies the policy's rules, then the class default. A deny ends
// the call; otherwise the call is allowed unless it has needs: a path
// outside the fence, or a rule or default that asks. A call with needs
// becomes an ask, which step 7 may still allow.
func (e *evaluation) rules() (Decision, bool) {
	g, c, class := e.g, e.c, e.class
	verdict, code, reason := g.decide(c.Name, class, e.args, e.paths)
	if verdict == Deny {
		dd := deny(code, reason)
		dd.Class = class
		return dd, true
	}
	out := Decision{Class: class, Args: e.canon, Digest: digestOf(e.canon, e.paths), Justification: e.justification, Resolved: e.resolved}
	for _, o := range e.placedOut {
		out.Needs = append(out.Needs, Need{Capability: e.capability, Path: o})
	}
	for _, u := range e.unresolved {
		out.Needs = append(out.Needs, Need{Capability: e.capability, Unresolved: u.raw})
	}
	if verdict == Ask {
		out.Needs = append(out.Needs, Need{Capability: string(class)})
	}
	if len(out.Needs) == 0 {
		out.Verdict, out.Code, out.Reason = Allow, code, reason
		return out, true
	}
	out.Verdict = Ask
	out.Paths = e.outside
	if len(e.outside) > 0 {
		out.Capability = e.capability
		out.Code = CodeAskMutateOutside
		verb := "Changing"
		if class == ClassRead {
			out.Code, verb = CodeAskReadOutside, "Reading"
		}
		out.Reason = g.outsideText(verb, e.placedOut, e.unresolved, e.roots, fmt.Sprintf(", so the user must approve it (capability %s)", e.capability))
		if len(e.unresolved) > 0 {
			out.Reason += " " + g.howInside(e.roots, e.unresolved, true)
		}
		if verdict == Ask {
			out.Reason += " " + reason
		}
	} else {
		out.Capability, out.Code, out.Reason = string(class), code, reason
	}
	e.out = out
	return Decision{}, false
}

// cover allows an ask that a grant or a one-use permit in the ledger
// covers; any other ask goes back to the proxy to be put to the person.
func (e *evaluation) cover(ctx context.Context) Decision {
	out := e.out
	if e.g.ledger != nil {
		if how, id, ok := e.g.ledger.cover(ctx, e.c.Session, e.t.Name, out.Digest, out.Needs); ok {
			out.Verdict = Allow
			switch how {
			case coveredByPermit:
				out.Code, out.Permit = CodeAllowPermit, id
				out.Reason = fmt.Sprintf("Allowed once by the user's approval of this exact call (permit %d).", id)
			default:
				out.Code, out.Grant = CodeAllowGrant, id
				out.Reason = fmt.Sprintf("Allowed by the user's grant %d.", id)
			}
		}
	}
	return out
}

// refuse counts a refused argument round and turns the refusal into
// deny.correction_budget once the tool has used up its rounds this turn.
func (g *Gate) refuse(c Call, d Decision) Decision {
	n := g.budget.refuse(c.Session, c.Name, c.Turn)
	if n > g.p.rounds {
		return deny(CodeCorrectionBudget, fmt.Sprintf("The arguments for %q were refused %d times this turn; stop retrying it, and tell the user what you were trying to do and the last error: %s", c.Name, n-1, d.Reason))
	}
	return d
}

// maxJustification is the longest justification quiver accepts, in
// characters: enough for two sentences, short enough for an approval card.
const maxJustification = maxModelText

// maxModelText is the longest text a model may write for a person to read
// on a card, in characters.
const maxModelText = 512

// CheckModelText checks text a model wrote that a person will read on an
// approval card (a justification, request_capability's reason): at most
// 512 characters, not blank, valid UTF-8, and free of what can make a card
// say something other than what was written or hide words in it — control
// characters (line breaks included), bidirectional formatting, line and
// paragraph separators, and invisible formatting characters (zero-width
// spaces and joiners, word joiners, byte-order marks, soft hyphens, tag
// characters, Hangul fillers). The error completes a sentence about the
// text ("...: the text is blank").
func CheckModelText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("the text is not valid UTF-8")
	}
	if strings.TrimSpace(s) == "" {
		return errors.New("the text is blank")
	}
	if n := utf8.RuneCountInString(s); n > maxModelText {
		return fmt.Errorf("the text is %d characters long (at most %d)", n, maxModelText)
	}
	for _, r := range s {
		if why := hiddenRune(r); why != "" {
			return fmt.Errorf("the text contains %s (U+%04X)", why, r)
		}
	}
	return nil
}

// hiddenRune says what kind of character r is when a card must not show
// it, or "".
func hiddenRune(r rune) string {
	switch {
	case r == utf8.RuneError:
		return "a replacement character (invalid text)"
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return "a control character"
	case isBidi(r):
		return "a bidirectional formatting character"
	case r == 0x2028 || r == 0x2029:
		return "a line or paragraph separator"
	case unicode.Is(unicode.Cf, r), r == 0x034f, r == 0x115f, r == 0x1160, r == 0x17b4, r == 0x17b5,
		r >= 0x180b && r <= 0x180f, r == 0x3164, r == 0xffa0, r >= 0xfe00 && r <= 0xfe0e, r >= 0xe0100 && r <= 0xe01ef:
		// Format characters (zero-width, joiners, tags), the grapheme
		// joiner, fillers and variation selectors (bar the emoji one)
		// render as nothing.
		return "an invisible character"
	}
	return ""
}

func checkJustification(v any, present bool) (string, string) {
	if !present {
		return "", "it is missing"
	}
	s, ok := v.(string)
	if !ok {
		return "", "it must be a string, not " + kindOf(v)
	}
	if err := CheckModelText(s); err != nil {
		return "", err.Error()
	}
	return s, ""
}

func resolve(c Call) (Decision, bool) {
	switch {
	case c.Tool == nil:
		reason := fmt.Sprintf("There is no tool named %q.", c.Name)
		if len(c.Closest) > 0 {
			reason += " Closest names: " + strings.Join(c.Closest, ", ") + "."
		}
		reason += " Use search_tools to find the tool you need."
		return deny(CodeUnknownTool, reason), true
	case c.Changed != "":
		// c.Changed is counts and kinds only (registry.Diff.Summary): the
		// server's text is for the person who reviews it, not the model.
		return deny(CodeDefinitionChanged, fmt.Sprintf("The tool %q is held: its definition is not the one a person approved (%s); "+
			"a person must accept it with `quiver tools accept %s` (quiver tools changes shows the change). Use another tool meanwhile.", c.Name, c.Changed, c.Name)), true
	case c.Withheld:
		why := c.WithheldWhy
		if why == "" {
			why = "it is switched off here; ask the user to enable it, or use another tool"
		}
		return deny(CodeWithheld, fmt.Sprintf("The tool %q is not available: %s.", c.Name, why)), true
	case c.Tool.SlashGated && !c.Forced:
		// Before visibility: searching can never bind a slash-gated tool,
		// so "search first" would send the model in a circle.
		return deny(CodeSlashGated, fmt.Sprintf("The tool %q runs only through its slash command; ask the user to run that command.", c.Name)), true
	case !c.Visible && c.Lapsed != "":
		return deny(CodeNotBound, fmt.Sprintf("The tool %q is no longer bound: %s. Search for it again with search_tools (its name as the query will do), then call it.", c.Name, c.Lapsed)), true
	case !c.Visible:
		return deny(CodeNotBound, fmt.Sprintf("The tool %q is not available yet: search for it first with search_tools, then call it.", c.Name)), true
	}
	return Decision{}, false
}

// shape checks that the arguments are a JSON object. A missing or null
// value means "no arguments" and becomes {}.
func shape(c Call) (json.RawMessage, Decision, bool) {
	raw := bytes.TrimSpace(c.Args)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage("{}"), Decision{}, true
	}
	if raw[0] != '{' || !json.Valid(raw) {
		return nil, deny(CodeArgsShape, fmt.Sprintf("The arguments for %q must be a JSON object of named parameters, like {\"path\": \"/tmp/x\"}; got %s.", c.Name, describe(raw))), false
	}
	return json.RawMessage(raw), Decision{}, true
}

func describe(raw []byte) string {
	switch raw[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case '{':
		return "malformed JSON"
	default:
		if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
			return "a number"
		}
		return "something that is not JSON"
	}
}

package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Verdict is what the gate says of a call.
type Verdict int

const (
	// Deny refuses the call; the reason says how to do it right.
	Deny Verdict = iota
	// Allow lets the call through.
	Allow
	// Ask needs a grant or a person's approval before the call may run.
	Ask
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	default:
		return "deny"
	}
}

// MarshalText writes the verdict as allow, deny or ask (JSON, YAML).
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads allow, deny or ask.
func (v *Verdict) UnmarshalText(b []byte) error {
	x, err := parseVerdict(string(b))
	if err != nil {
		return err
	}
	*v = x
	return nil
}

// Capabilities a path outside the fence needs. A mutate grant also covers
// reading. Other needs are named by the tool's class ("execute", ...).
const (
	CapReadOutside   = "read_outside_fence"
	CapMutateOutside = "mutate_outside_fence"
)

// A Tool carries the facts the gate needs about one downstream or builtin
// tool. The proxy fills it from the catalog.
type Tool struct {
	Name   string          // exposed name, e.g. "github__create_issue"
	Server string          // server key; "" for quiver's builtins
	Schema json.RawMessage // input schema as the server sent it
	// Class is the tool's action class; when empty the gate derives it
	// from Hints. Policy.Classes overrides either.
	Class Class
	Hints Hints
	// PathArgs are the top-level arguments config declares as paths; the
	// gate adds those it infers from argument names and values shaped
	// like paths.
	PathArgs []string
	// Bases are the absolute folders this server resolves a relative path
	// against (its path_base; its allowed folders for servers that resolve
	// against those, like server-filesystem). Every base is tried and every
	// reading must be inside the fence, since quiver cannot know which one
	// the server picks. Empty means undeclared: a relative path, ".", ""
	// and "./x" cannot be placed, and are outside.
	Bases []string
	// Home is the server's HOME, which "~" and "~/..." stand for; "" means
	// unknown, and such paths are outside. "~name" is another user's home
	// from this host's user database.
	Home string
	// Cwd is the folder the server runs in, when quiver starts it (its
	// cwd:, else quiver's own): a server that opens any string as a file
	// finds a bare name there. No string, whatever its argument, may name
	// one of quiver's own files from that folder (WithProtected).
	Cwd string
	// RelativeElsewhere says the server's relative paths name nothing on
	// this machine (a path in a repository, a key in a bucket: path_base:
	// none): the fence leaves them alone. Absolute paths, file: URIs and
	// "~" are judged as ever.
	RelativeElsewhere bool
	// SlashGated tools run only in a turn whose slash command forced them.
	SlashGated bool
}

// A Call is one tools/call as the model wrote it, with what the session
// knows about it.
type Call struct {
	Session string
	Name    string // the name the model used
	// Tool is nil when the name resolves to nothing.
	Tool *Tool
	// Closest holds the nearest known names, offered when Tool is nil.
	Closest []string
	// Withheld is true when the tool exists but is switched off or outside
	// the current activity; WithheldWhy, when set, says which, as the end
	// of a sentence ("the current /review allows only read tools").
	Withheld    bool
	WithheldWhy string
	// Changed, when set, says what changed in the tool's definition since
	// it was pinned (names, never the server's new text): the tool is held
	// until a person accepts the change, whatever else holds.
	Changed string
	// Visible is true when the session may call the tool now: always-on,
	// forced by a slash command, or bound by one of its searches.
	Visible bool
	// Lapsed, for a tool not visible, says why a binding the session had
	// for it ended ("its binding from turn 2 expired after 3 turns").
	Lapsed string
	// Args are the arguments exactly as received (nil when absent).
	Args json.RawMessage
	// Pins are argument values fixed by the activity or slash command;
	// they overwrite whatever the model wrote.
	Pins map[string]any
	// Activity names the session's activity (plan, review, ...), for
	// messages; ReadOnlyActivity makes it refuse every class but read.
	Activity         string
	ReadOnlyActivity bool
	// Forced is true when this turn's slash command forced the tool.
	Forced bool
	// Turn is the session's turn clock, for the correction budget.
	Turn int
	// Roots are the session's MCP roots (file:// URIs or absolute paths),
	// inside the fence for this session only.
	Roots []string
}

// A Need is one thing an ask waits for: a capability, for a path (and
// what is under it) or, with no path, for the tool.
type Need struct {
	Capability string `json:"capability"`
	Path       string `json:"path,omitempty"`
	// Unresolved is a path as written that quiver could not place in the
	// server's frame (Path is then empty). No grant meets such a need:
	// only a one-use permit for the exact call, so approving it for a
	// session or for good approves it once.
	Unresolved string `json:"unresolved,omitempty"`
}

// A ResolvedPath is one path argument: its name, what the model wrote,
// where it leads and whether that is outside the fence, for builtins that
// open the path themselves and for approval cards.
type ResolvedPath struct {
	Arg, Raw string
	// Path is the reading a well-behaved server takes; "" when Unresolved.
	Path string
	// Outside is true when any reading lies outside the fence, or the path
	// could not be placed.
	Outside bool
	// Unresolved says why quiver could not place the path in the server's
	// frame ("it is a relative path and this server declares no
	// path_base"); "" when it did.
	Unresolved string
}

// A Decision is the gate's answer to one call.
type Decision struct {
	Verdict Verdict
	Code    string
	// Reason is one sentence for the model: what was wrong and how to do
	// it right.
	Reason string
	// Args are the arguments to forward: canonical JSON with pins applied
	// and quiver's justification argument removed. Nil when denied.
	Args json.RawMessage
	// Class is the tool's action class ("" when the call never got that
	// far).
	Class Class
	// Capability is what an ask or a read-only refusal needs, e.g.
	// "mutate_outside_fence" or "execute".
	Capability string
	// Paths are the paths the fence asked or refused about: resolved, or
	// as written when quiver could not place them.
	Paths []string
	// Resolved holds every path argument as the fence resolved it (~, the
	// tool's directory, .., symlinks), so that a builtin acting on a path
	// itself uses exactly the one the gate judged.
	Resolved []ResolvedPath
	// Needs lists everything an ask waits for; an approval must cover all.
	Needs []Need
	// Digest is the SHA-256 of Args and of where their paths resolved
	// (hex): what permits bind to and the ledger records instead of raw
	// arguments.
	Digest string
	// Justification is the model's reason for an execution-class call.
	Justification string
	// Grant or Permit is the ledger row that turned an ask into an allow.
	Grant  int64
	Permit int64
}

// Gate evaluates calls. It is safe for concurrent use. The zero value is
// not usable; use New.
type Gate struct {
	p       compiledPolicy
	written Policy // as given to New, for Effective
	res     *resolver
	schemas *schemaCache
	budget  budget
	ledger  *Ledger
	// protected are quiver's own files, as resolved at New and as written.
	protected []string
	// roots holds each session root as first resolved (string -> string):
	// a root folder turned into a link to / later must not widen the fence.
	roots sync.Map
}

// An Option adjusts a Gate at construction.
type Option func(*options)

type options struct {
	ledger    *Ledger
	protected []string
}

// WithLedger makes Evaluate consult grants and permits in l before it
// answers ask.
func WithLedger(l *Ledger) Option { return func(o *options) { o.ledger = l } }

// WithProtected names quiver's own files and folders (its configuration,
// toggles, state dir, ledger), which no tool call may reach: a reading
// equal to or under one is refused (deny.protected_path) whatever the
// fence, rules, grants or permits say, and so is a reading that holds one
// (a folder above it) when the call may change something, since moving or
// deleting that folder moves or deletes them. Reading a folder above them
// (listing the home folder) stays allowed: it shows their names, not what
// they hold. Paths must be absolute; they are resolved once, at New.
func WithProtected(paths ...string) Option {
	return func(o *options) { o.protected = append(o.protected, paths...) }
}

// New validates p (globs, regular expressions, classes, verdicts, fence
// roots) and returns a gate. New(Policy{}) is the cheap zero-config gate:
// built-in defaults, no roots but the session's.
func New(p Policy, opts ...Option) (*Gate, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	home, _ := os.UserHomeDir()
	res := newResolver(home)
	cp, err := compilePolicy(p, res)
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	var protected []string
	for _, pp := range o.protected {
		if !filepath.IsAbs(pp) {
			return nil, fmt.Errorf("gate: protected path %q is not absolute", pp)
		}
		real, err := res.resolveRoot(pp)
		if err != nil {
			return nil, fmt.Errorf("gate: protected path %q: %w", pp, err)
		}
		// Both where it leads and where it is written: deleting a link
		// that leads to quiver's files loses them as surely.
		for _, q := range []string{real, filepath.Clean(pp)} {
			if !contains(protected, q) {
				protected = append(protected, q)
			}
		}
	}
	return &Gate{p: cp, written: p, res: res, schemas: &schemaCache{strict: cp.strict}, ledger: o.ledger, protected: protected}, nil
}

// Effective is the policy the gate runs with, every default filled in: the
// fence's roots as resolved (the state dir among them), what a path
// outside gets, each class's verdict, the correction budget and the
// approval wait. It is for showing (quiver config effective).
func (g *Gate) Effective() Policy {
	p := g.written
	p.AllowedDirs = slices.Clone(g.p.roots)
	p.StateDir = ""
	p.OutsideFence = "ask"
	if g.p.outsideDeny {
		p.OutsideFence = "deny"
	}
	p.StrictArgs, p.CorrectionRounds, p.ApprovalTimeout = g.p.strict, g.p.rounds, g.p.approvalWait
	if p.Pinning == "" {
		p.Pinning = "strict"
	}
	p.Profile = g.p.profile
	p.Defaults = make(map[Class]string, len(g.p.defaults))
	for c, v := range g.p.defaults {
		p.Defaults[c] = v.String()
		if g.p.inside[c] {
			p.Defaults[c] = AllowInside
		}
	}
	return p
}

// ApprovalTimeout is how long the proxy should wait for a person to
// answer an approval card (policy approval_timeout, default 120 s).
func (g *Gate) ApprovalTimeout() time.Duration { return g.p.approvalWait }

// ClassOf returns the class the gate gives a tool: the policy's overrides
// first, then the tool's own Class, then its annotations.
func (g *Gate) ClassOf(t *Tool) Class {
	if c, ok := matchClass(t.Name, g.p.classes); ok {
		return c
	}
	if t.Class.valid() {
		return t.Class
	}
	return classFromHints(t.Hints)
}

// Evaluate decides one call. It never panics on any input and every
// decision it returns carries a code and a reason.
func (g *Gate) Evaluate(ctx context.Context, c Call) (d Decision) {
	defer func() {
		if r := recover(); r != nil {
			d = deny(CodeInternal, fmt.Sprintf("quiver could not evaluate the call to %q (internal error), so it did not run; tell the user.", c.Name))
		}
		if d.Code == "" || d.Reason == "" {
			d = deny(CodeInternal, fmt.Sprintf("quiver reached no decision for %q, so it did not run; tell the user.", c.Name))
		}
	}()
	if d, done := resolve(c); done {
		return d
	}
	t := c.Tool
	class := g.ClassOf(t)

	// 2. Shape.
	raw, d, ok := shape(c)
	if !ok {
		return g.refuse(c, d)
	}
	args, shadows, err := parseArgs(raw)
	if err != nil {
		return g.refuse(c, deny(CodeArgsShape, fmt.Sprintf("The arguments for %q must be one JSON object of named parameters (%v); call again with an object such as {\"name\": value}.", c.Name, err)))
	}
	cs := g.schemas.get(t.Name, t.Schema)
	var just any
	hasJust := false
	if class == ClassExecute {
		just, hasJust = args[JustificationArg]
		if !cs.declaresJustification {
			// quiver's own argument: the downstream tool never sees it.
			delete(args, JustificationArg)
		}
	}

	// 3. Pins overwrite before validation, so what is checked is exactly
	// what will be forwarded.
	for k, v := range c.Pins {
		nv, err := normalizeValue(v)
		if err != nil {
			return deny(CodeInternal, fmt.Sprintf("The pinned argument %q of this activity is not a JSON value; tell the user to fix the configuration.", k))
		}
		args[k] = nv
	}
	if cs.sch != nil {
		if err := cs.sch.Validate(any(args)); err != nil {
			return g.refuse(c, deny(CodeArgsInvalid, fmt.Sprintf("The arguments for %q do not fit its schema: %s. Fix them and call again.", c.Name, explain(err, cs.props))))
		}
	}

	// 4. Activity.
	if c.ReadOnlyActivity && class != ClassRead {
		act := c.Activity
		if act == "" {
			act = "current"
		}
		dd := deny(CodeReadOnly, fmt.Sprintf("The %s activity is read-only and %q is a %s tool: it needs the %q capability. Use a read-only tool, or ask the user to leave the activity.", act, c.Name, class, class))
		dd.Class, dd.Capability = class, string(class)
		return dd
	}
	var justification string
	if class == ClassExecute {
		j, why := checkJustification(just, hasJust)
		if why != "" {
			return g.refuse(c, deny(CodeJustification, fmt.Sprintf("%q runs commands, so it needs a %q argument: %s. Call again with one or two sentences saying why it must run (at most %d characters).", c.Name, JustificationArg, why, maxJustification)))
		}
		justification = j
	}

	canon, err := canonical(args)
	if err != nil {
		return deny(CodeInternal, fmt.Sprintf("quiver could not re-encode the arguments for %q; it did not run.", c.Name))
	}

	// 5. Fence.
	roots := g.p.roots
	if len(c.Roots) > 0 {
		roots = append(append([]string(nil), roots...), g.sessionRoots(c.Roots)...)
	}
	skip := ""
	if class == ClassExecute {
		skip = JustificationArg
	}
	paths, dd, ok := g.fence(c, t, class, args, shadows, skip, roots)
	if !ok {
		return dd
	}

	out := Decision{Class: class, Args: canon, Digest: digestOf(canon, paths), Justification: justification}
	var outside, placedOut []string
	var unresolved []pathArg
	for _, pa := range paths {
		out.Resolved = append(out.Resolved, ResolvedPath{Arg: pa.arg, Raw: pa.raw, Path: pa.primary,
			Outside: pa.isOutside(), Unresolved: pa.unresolved})
		for _, o := range pa.outside {
			if !contains(placedOut, o) {
				placedOut = append(placedOut, o)
			}
		}
		if pa.unresolved != "" && !slices.ContainsFunc(unresolved, func(u pathArg) bool { return u.raw == pa.raw }) {
			unresolved = append(unresolved, pa)
		}
	}
	outside = append(outside, placedOut...)
	for _, u := range unresolved {
		if !contains(outside, u.raw) {
			outside = append(outside, u.raw)
		}
	}
	capability := CapMutateOutside
	if class == ClassRead {
		capability = CapReadOutside
	}
	if len(outside) > 0 && g.p.outsideDeny {
		reason := g.outsideText("Using", placedOut, unresolved, roots, ", and this setup refuses such calls") + " " + g.howInside(roots, unresolved, false)
		dd := deny(CodeOutsideFence, reason)
		dd.Class, dd.Capability, dd.Paths, dd.Resolved = class, capability, outside, out.Resolved
		return dd
	}

	// 6. Rules, then the class default.
	verdict, code, reason := g.decide(c.Name, class, args, paths)
	if verdict == Deny {
		dd := deny(code, reason)
		dd.Class = class
		return dd
	}
	for _, o := range placedOut {
		out.Needs = append(out.Needs, Need{Capability: capability, Path: o})
	}
	for _, u := range unresolved {
		out.Needs = append(out.Needs, Need{Capability: capability, Unresolved: u.raw})
	}
	if verdict == Ask {
		out.Needs = append(out.Needs, Need{Capability: string(class)})
	}
	if len(out.Needs) == 0 {
		out.Verdict, out.Code, out.Reason = Allow, code, reason
		return out
	}
	out.Verdict = Ask
	out.Paths = outside
	if len(outside) > 0 {
		out.Capability = capability
		out.Code = CodeAskMutateOutside
		verb := "Changing"
		if class == ClassRead {
			out.Code, verb = CodeAskReadOutside, "Reading"
		}
		out.Reason = g.outsideText(verb, placedOut, unresolved, roots, fmt.Sprintf(", so the user must approve it (capability %s)", capability))
		if len(unresolved) > 0 {
			out.Reason += " " + g.howInside(roots, unresolved, true)
		}
		if verdict == Ask {
			out.Reason += " " + reason
		}
	} else {
		out.Capability, out.Code, out.Reason = string(class), code, reason
	}

	// 7. Grants and permits.
	if g.ledger != nil {
		if how, id, ok := g.ledger.cover(ctx, c.Session, t.Name, out.Digest, out.Needs); ok {
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

// fence finds and resolves every path in the arguments within the work
// caps, and refuses a bad path, a call too complex to check, or a reading
// that reaches quiver's own files.
func (g *Gate) fence(c Call, t *Tool, class Class, args map[string]any, shadows []shadow, skip string, roots []string) ([]pathArg, Decision, bool) {
	w := &work{}
	fr := frame{bases: t.Bases, home: t.Home, elsewhere: t.RelativeElsewhere}
	raws := collectPaths(args, shadows, t.PathArgs, skip)
	if len(raws) > maxPathValues {
		return nil, g.tooComplex(c, class, &tooComplex{fmt.Sprintf("they hold more than %d paths", maxPathValues)}), false
	}
	seen := make(map[string]placed, len(raws))
	paths := make([]pathArg, 0, len(raws))
	for _, rp := range raws {
		pl, ok := seen[rp.s]
		var err error
		if !ok {
			pl, err = g.res.readings(rp.s, fr, w)
			seen[rp.s] = pl
		}
		if errors.Is(err, errTooComplex) {
			return nil, g.tooComplex(c, class, err), false
		}
		if err != nil {
			dd := deny(CodeBadPath, fmt.Sprintf("The argument %q holds a path quiver will not resolve: %v. Pass a plain absolute path.", rp.arg, err))
			dd.Class = class
			return nil, dd, false
		}
		pa := pathArg{arg: rp.arg, raw: rp.s, primary: pl.primary, readings: pl.readings, unresolved: pl.unresolved}
		for _, r := range pl.readings {
			if !insideAny(r, roots) {
				pa.outside = append(pa.outside, r)
			}
		}
		paths = append(paths, pa)
	}
	// Protected before inside or outside: no fence, rule, grant or permit
	// reaches quiver's own files.
	for _, pa := range paths {
		for _, r := range pa.readings {
			if d, hit := g.protectedPath(pa.raw, r, class); hit {
				return nil, d, false
			}
		}
	}
	if d, hit := g.protectedFromCwd(t, class, args); hit {
		return nil, d, false
	}
	return paths, Decision{}, true
}

// protectedFromCwd refuses a call any of whose strings, read as a file
// name in the folder the server runs in, is one of quiver's own files: a
// server that opens any string it is given ({"q": "servers.yaml"}) would
// find it there, whatever the argument is called. The check is lexical
// and costs no file system lookups, so every string is checked.
func (g *Gate) protectedFromCwd(t *Tool, class Class, args map[string]any) (Decision, bool) {
	if t.Cwd == "" || len(g.protected) == 0 || !filepath.IsAbs(t.Cwd) {
		return Decision{}, false
	}
	cwd := t.Cwd
	if res, ok := g.roots.Load("cwd:" + cwd); ok {
		cwd = res.(string)
	} else if res, err := g.res.resolveRoot(cwd); err == nil {
		g.roots.Store("cwd:"+cwd, res)
		cwd = res
	}
	var d Decision
	hit := false
	var walk func(v any, depth int)
	check := func(s string) {
		s = strings.TrimFunc(s, isTrimmed)
		if hit || s == "" || len(s) > maxPathLen || strings.ContainsAny(s, "\n\r") || filepath.IsAbs(s) {
			return
		}
		d, hit = g.protectedPath(s, filepath.Join(cwd, s), class)
	}
	walk = func(v any, depth int) {
		if hit || depth > maxArgDepth {
			return
		}
		switch x := v.(type) {
		case string:
			check(x)
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		case map[string]any:
			for k, e := range x {
				check(k)
				walk(e, depth+1)
			}
		}
	}
	walk(any(args), 0)
	return d, hit
}

// protectedPath refuses reading r of the path written raw when it is one
// of quiver's own files, or holds one and the call may change something.
// Names compare without case: on a case-insensitive file system (macOS,
// Windows) "~/.Config/Quiver" is the same folder, and refusing its
// lookalike on Linux costs nothing.
func (g *Gate) protectedPath(raw, r string, class Class) (Decision, bool) {
	for _, p := range g.protected {
		var what string
		switch {
		case withinFold(r, p):
			what = "is one of quiver's own files (its configuration, toggles and state): no tool may read or change them"
		case class != ClassRead && class != ClassExecute && withinFold(p, r):
			// Moving or deleting a folder that holds them. An execute tool
			// is not held to this: a command can reach quiver's files
			// whatever folder it runs in, so refusing a home folder as its
			// working directory would only look like protection; policy
			// is what fences commands.
			what = fmt.Sprintf("holds quiver's own files (%s, its configuration, toggles or state): no tool may move, delete or change them", p)
		default:
			continue
		}
		subject := fmt.Sprintf("%q", raw)
		if r != raw {
			subject += fmt.Sprintf(" (which leads to %s)", r)
		}
		d := deny(CodeProtectedPath, fmt.Sprintf("%s %s, whatever the fence or any approval says. Leave them alone and work with other files; the user changes quiver's settings with the quiver command.", subject, what))
		d.Class, d.Paths = class, []string{r}
		return d, true
	}
	return Decision{}, false
}

// tooComplex refuses a call whose paths would cost the fence more than
// its caps, saying which cap and how to split the call.
func (g *Gate) tooComplex(c Call, class Class, err error) Decision {
	d := deny(CodeArgsTooComplex, fmt.Sprintf("The arguments for %q are too much for quiver to check in one call: %v. Split the work into several smaller calls (at most %d paths each, not nested deep), and call again.",
		c.Name, err, maxPathValues))
	d.Class = class
	return g.refuse(c, d)
}

// outsideText says what lies outside, as one or two sentences starting
// with verb ("Reading"): the placed readings, then each path quiver could
// not place, as written, with why; tail ends the first sentence (", so
// the user must approve it").
func (g *Gate) outsideText(verb string, placedOut []string, unresolved []pathArg, roots []string, tail string) string {
	where := fmt.Sprintf("outside the folders quiver may touch (%s)", g.rootsText(roots))
	var why strings.Builder
	for i, u := range unresolved {
		switch {
		case i == 3:
			fmt.Fprintf(&why, "; nor where %d more paths lead", len(unresolved)-3)
		case i > 3:
		case i > 0:
			fmt.Fprintf(&why, "; nor where %q leads (%s)", u.raw, u.unresolved)
		default:
			fmt.Fprintf(&why, "quiver cannot tell where %q leads (%s)", u.raw, u.unresolved)
		}
	}
	if len(placedOut) == 0 {
		raws := make([]string, len(unresolved))
		for i, u := range unresolved {
			raws[i] = u.raw
		}
		return fmt.Sprintf("%s %s counts as %s%s: %s.", verb, quoteList(raws), where, tail, why.String())
	}
	is := "is"
	if len(placedOut) > 1 {
		is = "are"
	}
	text := fmt.Sprintf("%s %s %s %s%s.", verb, quoteList(placedOut), is, where, tail)
	if len(unresolved) > 0 {
		text += fmt.Sprintf(" Also, %s, so that counts as outside too.", why.String())
	}
	return text
}

// howInside tells the model how to stay inside the fence.
func (g *Gate) howInside(roots []string, unresolved []pathArg, asking bool) string {
	switch {
	case len(unresolved) == 0:
		return fmt.Sprintf("Use a path inside %s.", g.rootsText(roots))
	case asking:
		return fmt.Sprintf("Pass an absolute path inside %s instead; a path quiver cannot place can be approved only once, for this exact call.", g.rootsText(roots))
	}
	return fmt.Sprintf("Pass an absolute path inside %s instead.", g.rootsText(roots))
}

func (g *Gate) sessionRoots(in []string) []string {
	var out []string
	for _, r := range in {
		p := r
		if isFileURI(r) {
			var err error
			if p, err = fileURIPath(r); err != nil {
				continue // a root quiver cannot read widens nothing
			}
		}
		if !filepath.IsAbs(p) {
			continue
		}
		if res, ok := g.roots.Load(p); ok {
			out = append(out, res.(string))
			continue
		}
		if res, err := g.res.resolveRoot(p); err == nil {
			res, _ := g.roots.LoadOrStore(p, res)
			out = append(out, res.(string))
		}
	}
	return out
}

func (g *Gate) rootsText(roots []string) string {
	if len(roots) == 0 {
		return "no folders are allowed yet"
	}
	if len(roots) > 4 {
		return strings.Join(roots[:4], ", ") + ", …"
	}
	return strings.Join(roots, ", ")
}

// decide applies the first matching rule, else the class default.
func (g *Gate) decide(name string, class Class, args map[string]any, paths []pathArg) (Verdict, string, string) {
	for _, r := range g.p.rules {
		if ok, _ := path.Match(r.glob, name); !ok || !r.holds(args, paths) {
			continue
		}
		switch r.verdict {
		case Allow:
			return Allow, CodeAllowRule, orDefault(r.reason, fmt.Sprintf("Allowed by policy rule %d.", r.idx+1))
		case Ask:
			return Ask, CodeAskRule, orDefault(r.reason, fmt.Sprintf("Policy rule %d says the user must approve calls like this to %q.", r.idx+1, name))
		default:
			return Deny, CodeDenyRule, orDefault(r.reason, fmt.Sprintf("Policy rule %d refuses calls like this to %q; do not retry it, try another way or ask the user.", r.idx+1, name))
		}
	}
	if g.p.inside[class] {
		if len(paths) > 0 && !slices.ContainsFunc(paths, pathArg.isOutside) {
			return Allow, CodeAllow, "Allowed by policy: every path it names is inside the fence."
		}
		if len(paths) == 0 {
			return Ask, CodeAskPolicy, fmt.Sprintf("%q is a %s tool and the call names no path inside the fence, so the user must approve it (capability %s).", name, class, class)
		}
	}
	switch g.p.defaults[class] {
	case Allow:
		return Allow, CodeAllow, "Allowed by policy."
	case Ask:
		return Ask, CodeAskPolicy, fmt.Sprintf("%q is a %s tool, so the user must approve the call (capability %s).", name, class, class)
	}
	return Deny, CodeDenyPolicy, fmt.Sprintf("%q is a %s tool and this setup refuses %s tools; try another way or ask the user.", name, class, class)
}

func (r rule) holds(args map[string]any, paths []pathArg) bool {
	if r.fence != "" && !fenceHolds(r.fence, paths, "") {
		return false
	}
	all := r.verdict == Allow
	for _, m := range r.args {
		v, present := args[m.name]
		if m.absent {
			if present {
				return false
			}
			continue
		}
		if !present {
			return false
		}
		if m.fence != "" && !fenceHolds(m.fence, paths, m.name) {
			return false
		}
		if (m.hasEq || m.prefix != "" || m.re != nil) && !m.valueHolds(v, all) {
			return false
		}
	}
	return true
}

// valueHolds checks equals/prefix/regex; on an array (unless equals wants
// the array itself) every element must hold for an allow rule and one for
// deny or ask.
func (m argMatch) valueHolds(v any, all bool) bool {
	if arr, ok := v.([]any); ok {
		if _, eqArr := m.equals.([]any); !(m.hasEq && eqArr) {
			if len(arr) == 0 {
				return false
			}
			for _, e := range arr {
				if m.valueHolds(e, all) != all {
					return !all
				}
			}
			return all
		}
	}
	if m.hasEq && !jsonEqual(v, m.equals) {
		return false
	}
	if m.prefix != "" || m.re != nil {
		s, ok := v.(string)
		if !ok {
			return false
		}
		if m.prefix != "" && !strings.HasPrefix(s, m.prefix) {
			return false
		}
		if m.re != nil && !m.re.MatchString(s) {
			return false
		}
	}
	return true
}

// fenceHolds: "outside" when any path (of arg, or of any argument when
// arg is "") lies outside; "inside" when there is at least one and all lie
// inside.
func fenceHolds(word string, paths []pathArg, arg string) bool {
	n, out := 0, 0
	for _, p := range paths {
		if arg != "" && p.arg != arg {
			continue
		}
		n++
		if p.isOutside() {
			out++
		}
	}
	if word == "outside" {
		return out > 0
	}
	return n > 0 && out == 0
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

func deny(code, reason string) Decision {
	return Decision{Verdict: Deny, Code: code, Reason: reason}
}

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

func quoteList(ps []string) string {
	if len(ps) > 3 {
		return fmt.Sprintf("%q and %d more", ps[:3], len(ps)-3)
	}
	q := make([]string, len(ps))
	for i, p := range ps {
		q[i] = fmt.Sprintf("%q", p)
	}
	return strings.Join(q, ", ")
}

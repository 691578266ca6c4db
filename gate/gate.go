package gate

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
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
	// one of quiver's own files from that folder (WithProtected). When it
	// is one of the servers' own folders (WithChildFolders), that folder
	// is inside the fence and writable for this tool's calls only.
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
	// secret are those of protected that hold secrets (WithSecrets): a
	// folder above one is refused to a read too.
	secret map[string]bool
	// children are the folders quiver's servers run in (WithChildFolders),
	// as resolved and as written, in pairs: each inside the fence and not
	// protected for the calls of its own server only (ownChildren).
	children []string
	// roots holds each session root as first resolved (string -> string):
	// a root folder turned into a link to / later must not widen the fence.
	roots sync.Map
}

// An Option adjusts a Gate at construction.
type Option func(*options)

type options struct {
	ledger    *Ledger
	protected []string
	// winfs makes the gate read Windows paths through it on any OS
	// (tests); on Windows the gate always does, through Windows itself.
	winfs    winFS
	secrets  []string
	children []string
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

// WithSecrets names the files and folders of quiver's that hold secrets
// (the state dir: the operator page's token, the keyring's fallback
// file, OAuth tokens; an HTTP bearer token file). They are protected as
// WithProtected's are, and more: a reading that holds one (a folder
// above it) is refused to every call but an execute, reads included,
// since a tool given the folder may walk into it (a recursive search of
// "~" returns what every file under it says). The execute exception is
// WithProtected's: a command reaches any file whatever folder it is
// given, and policy is what fences commands.
func WithSecrets(paths ...string) Option {
	return func(o *options) {
		o.protected = append(o.protected, paths...)
		o.secrets = append(o.secrets, paths...)
	}
}

// WithChildFolders names the folders quiver's stdio servers run in when
// their entry gives no cwd: (registry.ChildDir), each server's own. They
// lie in quiver's run folder, but they are not quiver's files: each is
// emptied before its server starts, so what a call writes there outlives
// no start, and a server's plain names ({"q": "notes"}) land there. Each
// is inside the fence, and not refused as protected, for the calls of the
// server that runs in it only (the one whose Tool.Cwd or Tool.Bases name
// it): for every other server's calls, and quiver's builtins, it is as
// protected as the run folder, since a call of one server that wrote an
// .npmrc in another's folder between its emptying and its start would
// run code there. Only they are: the run folder that holds them, and every
// folder above it that is quiver's, stay protected, since npm, git and
// uv look for their configuration in the parents of the folder they run
// in (ARCHITECTURE.md, "Starting servers").
func WithChildFolders(dirs ...string) Option {
	return func(o *options) { o.children = append(o.children, dirs...) }
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
	if o.winfs != nil {
		res.win = o.winfs
	}
	cp, err := compilePolicy(p, res)
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	var protected, children []string
	secret := map[string]bool{}
	both := func(pp string) ([]string, error) {
		if !res.isAbs(pp) {
			return nil, fmt.Errorf("gate: protected path %q is not absolute", pp)
		}
		real, err := res.resolveRoot(pp)
		if err != nil {
			return nil, fmt.Errorf("gate: protected path %q: %w", pp, err)
		}
		// Both where it leads and where it is written: deleting a link
		// that leads to quiver's files loses them as surely.
		return []string{real, res.clean(pp)}, nil
	}
	for _, pp := range o.protected {
		qs, err := both(pp)
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			if !contains(protected, q) {
				protected = append(protected, q)
			}
			if contains(o.secrets, pp) {
				secret[q] = true
			}
		}
	}
	for _, d := range o.children {
		qs, err := both(d)
		if err != nil {
			return nil, err
		}
		// Each server's own, not the fence's: a call of that server only
		// finds it inside and unprotected (ownChildren).
		children = append(children, qs...)
	}
	return &Gate{p: cp, written: p, res: res, schemas: &schemaCache{strict: cp.strict}, ledger: o.ledger, protected: protected, secret: secret, children: children}, nil
}

// Effective is the policy the gate runs with, every default filled in: the
// fence's roots as resolved (the servers' own folders among them), what a path
// outside gets, each class's verdict, the correction budget and the
// approval wait. It is for showing (quiver config effective).
func (g *Gate) Effective() Policy {
	p := g.written
	p.AllowedDirs = slices.Clone(g.p.roots)
	for i := 0; i < len(g.children); i += 2 {
		if !contains(p.AllowedDirs, g.children[i]) {
			p.AllowedDirs = append(p.AllowedDirs, g.children[i]) // each for its own server's calls
		}
	}
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

// ownChildren are the servers' own folders (WithChildFolders) that are
// t's server's: the one it runs in (t.Cwd, or a folder in it) or resolves
// paths against (t.Bases), as resolved and as written. Nil for quiver's
// builtins.
func (g *Gate) ownChildren(t *Tool) []string {
	if t == nil || t.Server == "" || len(g.children) == 0 {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(g.children); i += 2 {
		real, written := g.children[i], g.children[i+1]
		mine := func(d string) bool {
			if d == "" || !g.res.isAbs(d) {
				return false
			}
			return g.res.insideAny(g.res.clean(d), []string{real, written})
		}
		if mine(t.Cwd) || slices.ContainsFunc(t.Bases, mine) {
			out = append(out, real, written)
		}
	}
	return out
}

// Fenced reports whether the absolute path dir is inside one of the
// fence's allowed_dirs, or a root a session of this gate has sent, as
// the gate resolves both: a folder a call may write with no card. quiver
// asks it of the folders above its run folder before a server runs there
// (proxy.childFolders, Server.childDirSafe).
func (g *Gate) Fenced(dir string) bool {
	r, err := g.res.resolveRoot(dir)
	if err != nil {
		r = g.res.clean(dir)
	}
	roots := slices.Clone(g.p.roots)
	g.roots.Range(func(k, v any) bool {
		if !strings.HasPrefix(k.(string), "cwd:") { // a server's folder, not a root
			roots = append(roots, v.(string))
		}
		return true
	})
	return g.res.insideAny(r, roots) || g.res.insideAny(g.res.clean(dir), roots)
}

// ApprovalTimeout is how long the proxy should wait for a person to
// answer an approval card (policy approval_timeout, default 120 s).
func (g *Gate) ApprovalTimeout() time.Duration { return g.p.approvalWait }

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

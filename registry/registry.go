package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Errors a caller of Call can branch on.
var (
	ErrUnknownTool = errors.New("unknown tool")
	ErrServerDown  = errors.New("server is not running")
	// ErrHeld is a call to a tool whose changed definition awaits a person.
	ErrHeld = errors.New("tool definition changed; held until a person accepts it")
)

// Options tune a Registry. The zero value works.
type Options struct {
	Logger *slog.Logger
	// StateDir is given to stdio children as QUIVER_STATE_DIR.
	StateDir string
	// Executable is what a command of "quiver" runs; default os.Executable().
	Executable string
	// OnChange is called, one call at a time, after each new catalog.
	OnChange func(*Catalog)
	// HealthInterval is how often an idle server is pinged (default 10 s);
	// a failed ping restarts it.
	HealthInterval time.Duration
	// Backoff bounds the wait between restarts (default 500 ms to 30 s):
	// it doubles from min to max, each wait drawn from the upper half of
	// its step so that servers do not restart in lockstep (backoff).
	MinBackoff, MaxBackoff time.Duration
	// ClientOptions are added to every downstream client (handlers for
	// sampling, elicitation and roots requests from downstream servers).
	ClientOptions []client.ClientOption
	// ServerClientOptions, when set, gives the options added to the named
	// server's client only: handlers that must know which server asks.
	ServerClientOptions func(server string) []client.ClientOption
	// OnNotification, when set, receives every notification a downstream
	// server sends (tools/list_changed included, after the registry acted
	// on it). It runs on the client's read loop: it must not block, and it
	// must never send a request to that server itself.
	OnNotification func(server string, n mcp.JSONRPCNotification)
	// AnswerInput, when set, answers the input requests a tools/call
	// result carries that mcp-go's client left unanswered (see
	// rounds.go); the call is then sent again with the answers.
	AnswerInput func(ctx context.Context, server string, reqs mcp.InputRequests) (mcp.InputResponses, error)
	// ApplyWait bounds how long Apply waits for the servers it starts to
	// make their first attempt before it publishes (default 10 s); a
	// slower server joins the catalog when it comes up.
	ApplyWait time.Duration
	// Pins, when set, pins every tool's definition on first sight and
	// holds a later, different one until a person accepts it (pin.go).
	Pins PinStore
	// Pinning gives a server's pinning mode (PinStrict, PinWarn, PinOff);
	// default strict for every server.
	Pinning func(server string) string
	// Judge tells a held tool's diff which arguments are paths and what
	// class annotations make (pindiff.go); the zero value flags neither.
	Judge Judge
	// PinPoll is how often the pins are checked for a change made by
	// another process (default 500 ms).
	PinPoll time.Duration
	// WorkDir is the folder quiver owns under which a stdio server with
	// no cwd: runs, each in WorkDir/<server name> (ChildDir), emptied
	// before every start. Default: a new temporary folder, removed by
	// Close.
	WorkDir string
	// ChildDirSafe, when set, is asked before a server without cwd: starts
	// in its folder under WorkDir; an error keeps it down with that error
	// as its reason (proxy: no folder above it may be one a call can
	// write, ARCHITECTURE.md "Starting servers").
	ChildDirSafe func(server, dir string) error
}

// ChildDir is the folder server s runs in: its cwd: as written, else its
// own folder under workDir (Options.WorkDir), never quiver's working
// folder. A host starts quiver in the project, inside the fence, where a
// model may write an .npmrc that npx obeys at the server's next start;
// the folder under workDir is quiver's, and emptied before each start,
// so nothing written there outlives one (ARCHITECTURE.md, "Starting
// servers").
func ChildDir(workDir string, s Server) string {
	if s.Cwd != "" || s.Transport != TransportStdio {
		return s.Cwd
	}
	// "srv-": no server's folder is named like one a tool looks for
	// above the folder it runs in (a server called node_modules).
	return filepath.Join(workDir, "srv-"+s.Name)
}

// prepareChildDir makes the folder a server without cwd: runs in, empty.
func prepareChildDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("empty the server's working folder %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("make the server's working folder: %w", err)
	}
	return nil
}

// A Registry runs the downstream servers of one Config.
type Registry struct {
	opts Options
	log  *slog.Logger

	// applyMu serialises Apply and holds the publisher while the set of
	// servers changes, so one change makes one catalog.
	applyMu sync.Mutex
	ctx     context.Context // Start's, for the servers Apply starts

	mu       sync.Mutex
	cfg      *Config
	conns    []*conn
	pubGen   uint64        // the last catalog OnChange has seen
	pubWait  chan struct{} // closed and replaced at every publication
	catalog  *Catalog
	gen      uint64
	dirty    chan struct{}
	pending  atomic.Int32  // servers that have not finished their first attempt
	tried    chan struct{} // closed once a catalog with every first attempt is out, or on Close
	triedOne sync.Once
	readyGen uint64
	pins     *pinner // nil without Options.Pins
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	ownWork  string // Options.WorkDir when New made it: Close removes it
}

// New prepares a registry; nothing runs until Start.
func New(cfg *Config, opts Options) *Registry {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = 10 * time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 500 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.Executable == "" {
		opts.Executable, _ = os.Executable()
	}
	if opts.ApplyWait <= 0 {
		opts.ApplyWait = 10 * time.Second
	}
	if opts.PinPoll <= 0 {
		opts.PinPoll = 500 * time.Millisecond
	}
	ownWork := ""
	if opts.WorkDir == "" {
		// The caller gave no folder: one of the registry's own, so a child
		// never inherits quiver's working folder.
		if d, err := os.MkdirTemp("", "quiver-run-"); err == nil {
			opts.WorkDir, ownWork = d, d
		} else {
			opts.Logger.Error("no working folder for the servers; a server without cwd: will not start", "err", err)
		}
	}
	r := &Registry{cfg: cfg, opts: opts, log: opts.Logger, dirty: make(chan struct{}, 1), tried: make(chan struct{}), pubWait: make(chan struct{}), ownWork: ownWork}
	r.pins = newPinner(opts, opts.Logger)
	for _, s := range cfg.Servers {
		r.conns = append(r.conns, r.newConn(s, cfg.Secrets))
	}
	r.catalog = r.build()
	return r
}

// Start launches every server in the background and returns at once.
func (r *Registry) Start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	r.applyMu.Lock()
	r.ctx = ctx
	r.applyMu.Unlock()
	r.pending.Store(int32(len(r.conns)))
	for _, c := range r.conns {
		r.launch(ctx, c, func() { r.pending.Add(-1); r.changed() })
	}
	r.changed() // with no servers at all, ready at once
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		r.publish(ctx)
	}()
	go func() {
		defer r.wg.Done()
		r.pins.follow(ctx, r.opts.PinPoll, r.changed)
	}()
}

// Ready is closed once every server has made its first attempt to start,
// successful or not, and OnChange has seen the catalog that shows it (its
// generation is ReadyGen). Commands that print once (search, doctor) wait on
// it; the proxy never does. Close closes it too, so that nobody waits on a
// registry that will never be ready.
func (r *Registry) Ready() <-chan struct{} { return r.tried }

func (r *Registry) closeReady() { r.triedOne.Do(func() { close(r.tried) }) }

// ReadyGen is the generation of the first catalog published after every
// server's first attempt; valid once Ready is closed.
func (r *Registry) ReadyGen() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.readyGen
}

// Catalog returns the current snapshot.
func (r *Registry) Catalog() *Catalog {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.catalog
}

// Close stops every server and waits for their processes to be reaped.
func (r *Registry) Close() error {
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
	r.closeReady()
	if r.ownWork != "" {
		_ = os.RemoveAll(r.ownWork)
	}
	return nil
}

// Call forwards a tools/call to the server that owns the exposed name.
// args are sent as they are, byte for byte; meta carries the progress
// token. The result comes back as the server sent it, undecoded (see
// conn.call): mcp.ParseCallToolResult reads it.
func (r *Registry) Call(ctx context.Context, exposed string, args json.RawMessage, meta *mcp.Meta) (json.RawMessage, error) {
	tool, ok := r.Catalog().Lookup(exposed)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTool, exposed)
	}
	if tool.Held != nil {
		// The proxy refuses it first; nothing else may reach it either.
		return nil, fmt.Errorf("%w: %s: %s", ErrHeld, exposed, tool.Held.Diff.Summary())
	}
	c := r.connFor(tool.Server)
	if c == nil {
		return nil, fmt.Errorf("%w: %s was removed from the configuration", ErrServerDown, tool.Server)
	}
	return c.call(ctx, tool.Name, args, meta)
}

// changed marks the catalog stale; the publisher rebuilds it.
func (r *Registry) changed() {
	select {
	case r.dirty <- struct{}{}:
	default:
	}
}

func (r *Registry) publish(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.dirty:
		}
		// Apply holds applyMu while it changes the set of servers: what it
		// does comes out as one catalog, after it.
		r.applyMu.Lock()
		select {
		case <-r.dirty: // what made it dirty meanwhile is in this build
		default:
		}
		allTried := r.pending.Load() == 0
		cat := r.build()
		r.mu.Lock()
		old := r.catalog
		r.catalog = cat
		first := allTried && r.readyGen == 0
		if first {
			r.readyGen = cat.Gen
		}
		r.mu.Unlock()
		for _, p := range cat.Problems {
			if !slices.Contains(old.Problems, p) {
				r.log.Error("catalog: " + p)
			}
		}
		if r.opts.OnChange != nil {
			r.opts.OnChange(cat)
		}
		r.mu.Lock()
		r.pubGen = cat.Gen
		close(r.pubWait)
		r.pubWait = make(chan struct{})
		r.mu.Unlock()
		r.applyMu.Unlock()
		if first {
			r.closeReady()
		}
	}
}

// unaccepted is whether t was never consented to: held, with nothing
// pinned for it (a tool its server added after it was configured).
func unaccepted(t Tool) bool { return t.Held != nil && t.Held.Pinned.Name == "" }

// build assembles a snapshot from every server's current tools.
func (r *Registry) build() *Catalog {
	r.mu.Lock()
	r.gen++
	gen := r.gen
	cfg, conns := r.cfg, slices.Clone(r.conns)
	r.mu.Unlock()
	cat := &Catalog{Gen: gen, byName: map[string]int{}}
	type listed struct {
		tools  []Tool
		status ServerStatus
	}
	lists := make([]listed, 0, len(conns))
	// claimed are the exposed names of the tools a person has consented
	// to (pinned, or held with a pin): a tool that was never accepted
	// takes no name from them (unaccepted, below).
	claimed := map[string]Tool{}
	for _, c := range conns {
		tools, status := c.snapshot()
		r.pins.check(c.srv.Name, tools)
		// The entry in force: prefix, keywords and tools_default change
		// without a restart.
		srv, _ := cfg.Server(c.srv.Name)
		for i := range tools {
			t := &tools[i]
			t.Exposed = ExposedName(srv.Prefix, t.Name, cfg.Surface.MaxNameLen)
			t.Server, t.Keywords = srv.Name, srv.Keywords
			t.Off, t.Toggle = cfg.SwitchedOff(srv, t.Exposed)
			if _, ok := claimed[t.Exposed]; !ok && !unaccepted(*t) {
				claimed[t.Exposed] = *t
			}
		}
		lists = append(lists, listed{tools, status})
	}
	owner := map[string]Tool{}
	collided := map[string]bool{}
	for _, l := range lists {
		for _, t := range l.tools {
			if prev, ok := claimed[t.Exposed]; ok && unaccepted(t) {
				// A held definition has no effect on the catalog until a
				// person accepts it (ARCHITECTURE.md, "Pinned tool
				// definitions"): a new tool named like a sibling's
				// (prefix "" and "files__ok") would otherwise knock the
				// sibling's pinned tool out as a collision.
				cat.Problems = append(cat.Problems, fmt.Sprintf(
					"tool %q of server %q is new and held until a person accepts it; it would become %q, the name of tool %q of server %q, so it is left out: accepting it would withhold both (give server %q a prefix in servers.yaml first)",
					t.Name, t.Server, t.Exposed, prev.Name, prev.Server, t.Server))
				continue
			}
			if prev, dup := owner[t.Exposed]; dup {
				advice := fmt.Sprintf("give server %q another prefix in servers.yaml", t.Server)
				if prev.Server == t.Server {
					// No prefix separates two tools of one server.
					advice = fmt.Sprintf("server %q names them alike once names are limited to [A-Za-z0-9_-]; ask its authors to rename one", t.Server)
				}
				// Neither is offered: which one a name reached would depend
				// on which server started first, and a session could go on
				// calling the other server's tool under the same name.
				cat.Problems = append(cat.Problems, fmt.Sprintf(
					"tool %q of server %q and tool %q of server %q both become %q; neither is offered: %s",
					prev.Name, prev.Server, t.Name, t.Server, t.Exposed, advice))
				collided[t.Exposed] = true
				continue
			}
			owner[t.Exposed] = t
			cat.Tools = append(cat.Tools, t)
		}
		cat.Servers = append(cat.Servers, l.status)
	}
	cat.Tools = slices.DeleteFunc(cat.Tools, func(t Tool) bool { return collided[t.Exposed] })
	for i, t := range cat.Tools {
		cat.byName[t.Exposed] = i
	}
	cat.Problems = append(cat.Problems, missingTools(cfg, cat)...)
	return cat
}

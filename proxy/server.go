package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// Options tune a Server. The zero value works.
type Options struct {
	Logger *slog.Logger
	// StateDir holds quiver's state (ledger, example notes); passed to
	// stdio children as QUIVER_STATE_DIR.
	StateDir string
	// Executable is what a server command of "quiver" runs.
	Executable string
	// Debounce collects a burst of catalog changes into one index rebuild
	// (default 100 ms).
	Debounce time.Duration
	// Now is the clock (tests inject one); default time.Now.
	Now func() time.Time
	// Protected are quiver's own files besides the config file and the
	// state dir, which are always protected: the toggles file, the HTTP
	// auth token file. No downstream call may read or write them (the
	// gate's deny.protected_path), or a model could widen its own fence.
	Protected []string
	// Secrets are quiver's files and folders that hold secrets besides
	// the state dir, which always does: an HTTP auth token file, quiver's
	// config folder, the default state dir a later command reads. Besides
	// being protected, a folder above one is refused to reads too
	// (gate.WithSecrets): a tool given it may walk into them.
	Secrets []string
	// MaxSessions bounds the HTTP sessions open at once (default 1000):
	// past it a new client gets 503 until one closes or idles out.
	MaxSessions int
	// ApprovalPage says the operator page is on: a call that needs an
	// approval waits up to the approval timeout for an answer given
	// there (Answer) or in a terminal, also when its host cannot show
	// a card.
	ApprovalPage bool
	// OnCatalog, when set, sees every new catalog, one at a time (serve
	// writes the tool names down for the command line to check names
	// against).
	OnCatalog func(*registry.Catalog)
	// Downstream builds what the proxy forwards to; default the registry
	// of the servers in the configuration. Tests give servers that run in
	// process.
	Downstream NewDownstream
	// Observer, when set, watches every request's steps for metrics and
	// traces (observe.go); nil costs nothing.
	Observer Observer
}

// A Server is quiver's MCP server: it answers hosts, keeps per-session
// surfaces, and forwards calls that the gate allows.
type Server struct {
	reg    Downstream   // the servers behind quiver (downstream.go)
	ledger *gate.Ledger // nil without a state dir
	gopts  []gate.Option
	mcp    *server.MCPServer
	log    *slog.Logger
	opts   Options

	// pending is the newest accepted configuration; the next install puts
	// it in force with the catalog (reload.go).
	pending  atomic.Pointer[settings]
	reloadMu sync.Mutex

	slashMu    sync.Mutex
	slashNames []string // slash prompts registered, for reloads
	state      atomic.Pointer[snapshot]
	// installed is closed and replaced after every install.
	installed installSignal
	changes   chan *registry.Catalog

	mu       sync.Mutex
	sessions map[string]*session

	// paths keeps a call's path check and its downstream open from being
	// raced by another call through quiver (pathlock.go).
	paths pathLock

	// relay and pass carry everything but tools/call (relay.go,
	// passthrough.go); transparent hides quiver's own tools so that one
	// server with prefix "" under reveal: direct looks like itself.
	relay       *relay
	pass        *mirror
	transparent bool

	// run tells this process's sessions from those of other quiver
	// processes (and earlier runs) sharing the ledger.
	run string
	// seal seals the state of approval cards sent as input requests.
	seal *seal
	// parked are the downstream calls waiting for a 2026-07-28 host's
	// answers, by parking id (park.go).
	parkMu sync.Mutex
	parked map[string]*parking
	// waits are the calls waiting for an answer given outside the host.
	waits waitRoom
	// streams counts each HTTP session's open event streams.
	streams streamCount

	cancel context.CancelFunc
	closed atomic.Bool // Close has released the snapshot in force
	wg     sync.WaitGroup
	ready  chan struct{} // closed after the first index that follows registry.Ready
	// workDir holds the folders the stdio servers without cwd: run in
	// (childFolders, registry.ChildDir).
	workDir string
}

// New builds a Server for cfg. Nothing runs until Start. It fails only on
// a policy the gate cannot compile.
func New(cfg *registry.Config, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	// Everything quiver logs, and the registry through it, is redacted
	// with the secrets of the configuration in force: no log line depends
	// on its author remembering that a value (a progress token a server
	// chose, an error's text) may hold one.
	var s *Server
	first := registry.NewRedactor(cfg.Secrets)
	opts.Logger = slog.New(registry.RedactingHandler(opts.Logger.Handler(), func(text string) string {
		if s != nil {
			if set := s.current(); set != nil {
				return set.redact.Redact(text)
			}
		}
		return first.Redact(text)
	}))
	if opts.Debounce <= 0 {
		opts.Debounce = 100 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 1000
	}
	// Check the config before opening the ledger; the gate is built below.
	chk, err := newSettings(cfg, opts.StateDir, "")
	if err != nil {
		return nil, err
	}
	workDir, err := childFolders(opts.StateDir, chk.gate.Fenced, opts.Logger)
	if err != nil {
		return nil, err
	}
	var ledger *gate.Ledger
	gopts := []gate.Option{gate.WithProtected(absPaths(cfg.Path, opts.Protected)...),
		gate.WithSecrets(absPaths(opts.StateDir, opts.Secrets)...),
		// The run folder and all above it that is quiver's: only each
		// server's own folder in it is a call's (newSettings).
		gate.WithProtected(workDir)}
	if opts.StateDir != "" {
		l, err := gate.OpenLedger(context.Background(), filepath.Join(opts.StateDir, "ledger.db"))
		if err != nil {
			os.RemoveAll(workDir)
			return nil, fmt.Errorf("open the ledger: %w", err)
		}
		if n := l.Recovered(); n > 0 {
			opts.Logger.Warn("calls that were running when quiver last stopped are recorded as outcome_unknown; they were not retried (see quiver audit)", "calls", n)
		}
		ledger = l
		gopts = append(gopts, gate.WithLedger(l))
	}
	set, err := newSettings(cfg, opts.StateDir, workDir, gopts...)
	if err != nil {
		if ledger != nil {
			ledger.Close()
		}
		os.RemoveAll(workDir)
		return nil, err
	}
	set.skills = loadSkills(cfg, opts.Logger)
	s = &Server{
		ledger:   ledger,
		gopts:    gopts,
		log:      opts.Logger,
		opts:     opts,
		changes:  make(chan *registry.Catalog, 1),
		sessions: map[string]*session{},
		ready:    make(chan struct{}),
		run:      newRunID(),
		seal:     newSeal(),
		parked:   map[string]*parking{},
		workDir:  workDir,
	}
	s.relay, s.pass = newRelay(s), newMirror(s)
	s.markRun()
	s.endStaleSessionGrants()
	s.transparent = cfg.Surface.Reveal == registry.RevealDirect && len(cfg.Servers) == 1 && cfg.Servers[0].Prefix == ""
	s.pending.Store(set)
	if ledger != nil {
		// What the ledger stores is redacted as what quiver shows is, with
		// the secrets of the configuration in force.
		ledger.SetRedactor(func(text string) string {
			if cur := s.current(); cur != nil {
				return cur.redact.Redact(text)
			}
			return set.redact.Redact(text)
		})
	}
	ropts := registry.Options{
		Logger:              opts.Logger,
		StateDir:            opts.StateDir,
		Executable:          opts.Executable,
		OnChange:            s.catalogChanged,
		ServerClientOptions: s.relay.clientOptions,
		OnNotification:      s.relay.notification,
		AnswerInput:         s.relay.answerInput,
		Pinning:             s.pinMode,
		Judge:               PinJudge(),
		WorkDir:             workDir,
		ChildDirSafe:        s.childDirSafe,
	}
	if ledger != nil {
		ropts.Pins = NewPinStore(ledger)
	}
	newDown := opts.Downstream
	if newDown == nil {
		newDown = registryDownstream
	}
	s.reg = newDown(cfg, ropts)

	hooks := &server.Hooks{}
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
		// The server is built with listChanged off so that mcp-go's SetTools
		// does not broadcast to every session on each catalog change; quiver
		// tells each session itself, and only when its own list changed.
		if res.Capabilities.Tools != nil {
			res.Capabilities.Tools.ListChanged = true
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		s.mu.Lock()
		ss := s.sessions[cs.SessionID()]
		delete(s.sessions, cs.SessionID())
		s.mu.Unlock()
		s.relay.unregister(cs.SessionID())
		if ss != nil {
			s.expireApprovals(ss)
			s.endSessionGrants(ss)
		}
	})
	hooks.AddBeforeCallTool(func(ctx context.Context, _ any, req *mcp.CallToolRequest) { s.awaitTool(ctx, req) })
	s.clock(hooks)
	passOpts := s.passThrough(hooks)
	mcpOpts := []server.ServerOption{
		server.WithToolCapabilities(false),
		// Slash commands are prompts; downstream prompts join them.
		server.WithPromptCapabilities(true),
		server.WithToolFilter(s.filter),
		server.WithHooks(hooks),
		server.WithRecovery(),
	}
	if !s.transparent {
		mcpOpts = append(mcpOpts, server.WithInstructions("quiver fronts many MCP servers. Your tool list is kept small: "+
			"use search_tools to find the tool you need; the tools it finds are bound for your next steps."))
	}
	s.mcp = server.NewMCPServer("quiver", registry.Version, append(mcpOpts, passOpts...)...)
	s.syncSlashPrompts()
	s.passThroughInstall()
	// The registry's first catalog: no tools yet, every server starting.
	s.install(s.reg.Catalog())
	return s, nil
}

// childFolders makes the folder this process's stdio servers run in when
// their entry gives no cwd: (registry.ChildDir), one per process under
// the state dir's run folder, so that quivers sharing a state dir never
// empty each other's; without a state dir, a temporary one. Close
// removes it; the folders of quivers that died without closing are
// removed here, when the process their name carries is gone.
//
// npm, git and uv look for their configuration in every folder above the
// one they run in, so no folder above a server's may be one a call can
// write: the run folder and the state dir are protected, and a state dir
// that lies in the fence (allowed_dirs: [~] with the default state dir
// under it) is not used for it: the run folder is made in the system's
// temporary folder instead, and when that too lies in the fence quiver
// says so, makes it there all the same, and childDirSafe keeps the
// servers without cwd: from starting in it (give them a cwd:).
func childFolders(stateDir string, fenced func(string) bool, log *slog.Logger) (string, error) {
	aboveFenced := func(dir string) string {
		for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
			if fenced(d) {
				return d
			}
			if filepath.Dir(d) == d {
				return ""
			}
		}
	}
	if stateDir != "" {
		if d := aboveFenced(stateDir); d != "" {
			log.Info("the servers without cwd: run in a folder under the system's temporary folder, not under the state dir: the fence holds a folder above the state dir, and npm, git and uv read files in the folders above the one they run in", "fenced", d)
			stateDir = ""
		}
	}
	if stateDir == "" {
		if d := aboveFenced(filepath.Join(os.TempDir(), "x")); d != "" {
			log.Warn("the fence holds a folder above the system's temporary folder too, so the servers without cwd: will not start: a file a model writes there (an .npmrc, a .git folder) is one npm or git would obey. Give each server a cwd: outside the fence, or fence narrower folders", "fenced", d)
		}
	}
	parent := ""
	if stateDir != "" {
		parent = filepath.Join(stateDir, "run")
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return "", fmt.Errorf("the servers' working folders: %w", err)
		}
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			var pid int
			if _, err := fmt.Sscanf(e.Name(), "quiver-%d-", &pid); err == nil && pid > 0 && !gate.ProcessAlive(pid) {
				_ = os.RemoveAll(filepath.Join(parent, e.Name()))
			}
		}
	}
	dir, err := os.MkdirTemp(parent, fmt.Sprintf("quiver-%d-", os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("the servers' working folders: %w", err)
	}
	return filepath.Abs(dir)
}

// childDirSafe refuses to start server in dir, its folder under the run
// folder, when the fence in force lets a call write a folder above the
// ones quiver protects (the state dir, or the run folder when it is a
// temporary one): npm, git and uv would read an .npmrc, a package.json or
// a .git the model wrote there. childFolders picked a place the fence at
// start did not hold; a reload or a fence holding the temporary folder
// gets here.
func (s *Server) childDirSafe(server, dir string) error {
	top := s.workDir
	if s.opts.StateDir != "" {
		if st, err := filepath.Abs(s.opts.StateDir); err == nil && strings.HasPrefix(s.workDir, st+string(filepath.Separator)) {
			top = st
		}
	}
	g := s.current().gate
	for d := filepath.Dir(top); ; d = filepath.Dir(d) {
		if g.Fenced(d) {
			return fmt.Errorf("server %q has no cwd:, and the folder quiver would start it in (%s) lies under %s, which the fence lets a model write: npm, git and uv obey files (.npmrc, package.json, .git) in the folders above the one they run in. Give server %q a cwd: in servers.yaml (a folder outside the fence, or one you fence with policy), or fence narrower folders than %s", server, dir, d, server, d)
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}

// absPaths are first and more, the empty ones left out, made absolute
// against quiver's working directory, as quiver opens them.
func absPaths(first string, more []string) []string {
	var out []string
	for _, p := range append([]string{first}, more...) {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

func newRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Start starts the downstream servers in the background and returns at once:
// quiver answers initialize and tools/list before any server is up.
func (s *Server) Start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(ctx)
	s.reg.Start(ctx)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.rebuildLoop(ctx)
	}()
}

// Ready is closed once every downstream server has tried to start and the
// index includes what they offered. Only one-shot commands wait for it.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Close stops the downstream servers.
func (s *Server) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	err := s.reg.Close()
	// The servers are gone: nothing runs in their folders any more.
	_ = os.RemoveAll(s.workDir)
	if st := s.state.Load(); st != nil && s.closed.CompareAndSwap(false, true) {
		st.release() // the server's reference: requests still running keep theirs
	}
	if s.ledger != nil {
		// Every session ends with this process: what they asked and
		// nobody answered can no longer be retried.
		for _, ss := range s.allSessions() {
			s.expireApprovals(ss)
			s.endSessionGrants(ss)
		}
		s.unmarkRun()
		err = errors.Join(err, s.ledger.Close())
	}
	return err
}

// expireApprovals marks what an ended session asked and nobody answered as
// expired, so that quiver grants --pending stops listing it and approve
// says the session ended rather than "the model may call again".
func (s *Server) expireApprovals(ss *session) {
	if s.ledger == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n, err := s.ledger.ExpireApprovals(ctx, ss.key); err != nil {
		s.log.Warn("expiring the requests of an ended session failed", "session", ss.id, "err", err)
	} else if n > 0 {
		s.log.Info("requests of an ended session expired", "session", ss.id, "requests", n)
	}
}

// MCPServer exposes the underlying mcp-go server, for in-process clients.
func (s *Server) MCPServer() *server.MCPServer { return s.mcp }

// Catalog returns the current catalog snapshot.
func (s *Server) Catalog() *registry.Catalog { return s.state.Load().cat }

// ServeStdio serves one host over in/out until ctx ends or in closes.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ss := server.NewStdioServer(s.mcp)
	// mcp-go runs tools/call on 5 workers by default: six slow calls would
	// queue, and a call waiting on an approval could stall the read loop.
	server.WithWorkerPoolSize(64)(ss)
	server.WithQueueSize(1000)(ss)
	ss.SetErrorLogger(log.New(slogWriter{s.log}, "", 0))
	exit := &lineExit{w: out, x: s.exit()}
	in = newLineCap(in, MaxRequestLine, func(id json.RawMessage, size int64) {
		s.log.Warn("stdio: a message over the size limit was dropped and answered with an error", "bytes", size, "limit", MaxRequestLine)
		_, _ = exit.Write(tooLongAnswer(id, size, MaxRequestLine))
	})
	return ss.Listen(throughExit(ctx), in, exit)
}

// HTTPHandler serves streamable HTTP at /mcp with stateful sessions
// (an unknown session id gets 404 so the client re-initializes) and
// mcp-go's DNS-rebinding protection.
func (s *Server) HTTPHandler() http.Handler {
	h := sseResponses(httpExit(server.NewStreamableHTTPServer(s.mcp,
		server.WithStateful(true),
		server.WithSessionIdleTTL(30*time.Minute),
		server.WithStreamableHTTPLogger(s.log),
	), s.exit()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A session costs memory for its idle lifetime; one client opening
		// sessions in a loop must not take it all (red team: 20,000
		// sessions in 16 s, 327 MB).
		sid := r.Header.Get("Mcp-Session-Id")
		if r.Method == http.MethodGet && sid == "" {
			// A stream belongs to a session: without one mcp-go opened a
			// stream that nothing would ever write to and that never ended.
			// 405 is how the transport says "no stream here"; clients then
			// go on with POST alone.
			w.Header().Set("Allow", "POST, DELETE")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMethodNotAllowed)
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"GET /mcp opens a session's event stream: initialize with POST first and send its Mcp-Session-Id header"}}`)
			return
		}
		if r.Method == http.MethodGet {
			// A session's event streams cost memory and a file each: a few
			// are plenty (red team: 4,000 on one session).
			if !s.streams.open(sid) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"this session has %d event streams open already; close one first"}}`, maxStreams)
				return
			}
			defer s.streams.close(sid)
		}
		if sid == "" && s.relay.sessionCount() >= s.opts.MaxSessions {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"quiver serves at most %d sessions at once; close one (DELETE /mcp) or try again later"}}`, s.opts.MaxSessions)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// maxStreams bounds the GET event streams one HTTP session holds open.
const maxStreams = 8

// streamCount counts the open GET streams of each HTTP session.
type streamCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *streamCount) open(sid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	if c.n[sid] >= maxStreams {
		return false
	}
	c.n[sid]++
	return true
}

func (c *streamCount) close(sid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[sid]--; c.n[sid] <= 0 {
		delete(c.n, sid)
	}
}

// slogWriter carries mcp-go's log.Logger lines into slog.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	msg := trimNL(p)
	if strings.HasPrefix(msg, "Error writing response") && (strings.Contains(msg, os.ErrClosed.Error()) || strings.Contains(msg, "broken pipe")) {
		// The host closed its end while answers were still on their way:
		// how every stdio session ends, not a fault.
		w.log.Debug("mcp: a response was not written: the host has closed stdout", "err", msg)
		return len(p), nil
	}
	w.log.Warn("mcp: " + msg)
	return len(p), nil
}

func trimNL(p []byte) string {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return string(p)
}

package proxy

import (
	"cmp"
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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/index"
	"github.com/quiver-mcp/quiver/registry"
	"github.com/quiver-mcp/quiver/skills"
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
}

// A Server is quiver's MCP server: it answers hosts, keeps per-session
// surfaces, and forwards calls that the gate allows.
type Server struct {
	reg    *registry.Registry
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
	installed atomic.Pointer[chan struct{}]
	changes   chan *registry.Catalog

	mu       sync.Mutex
	sessions map[string]*session

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
	wg     sync.WaitGroup
	ready  chan struct{} // closed after the first index that follows registry.Ready
}

// snapshot is everything a request needs, swapped as one: a search never
// sees an index that disagrees with the catalog it was built from.
type snapshot struct {
	cat   *registry.Catalog
	ix    *index.Index
	tools map[string]mcp.Tool // listed definitions, by exposed name
	// The configuration and gate in force, swapped with the catalog.
	*settings
}

// New builds a Server for cfg. Nothing runs until Start. It fails only on
// a policy the gate cannot compile.
func New(cfg *registry.Config, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
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
	if _, err := newSettings(cfg, opts.StateDir); err != nil {
		return nil, err
	}
	var ledger *gate.Ledger
	gopts := []gate.Option{gate.WithProtected(protectedPaths(cfg, opts)...)}
	if opts.StateDir != "" {
		l, err := gate.OpenLedger(context.Background(), filepath.Join(opts.StateDir, "ledger.db"))
		if err != nil {
			return nil, fmt.Errorf("open the ledger: %w", err)
		}
		if n := l.Recovered(); n > 0 {
			opts.Logger.Warn("calls that were running when quiver last stopped are recorded as outcome_unknown; they were not retried (see quiver audit)", "calls", n)
		}
		ledger = l
		gopts = append(gopts, gate.WithLedger(l))
	}
	set, err := newSettings(cfg, opts.StateDir, gopts...)
	if err != nil {
		if ledger != nil {
			ledger.Close()
		}
		return nil, err
	}
	set.skills = loadSkills(cfg, opts.Logger)
	s := &Server{
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
	}
	s.relay, s.pass = newRelay(s), newMirror(s)
	s.transparent = cfg.Surface.Reveal == registry.RevealDirect && len(cfg.Servers) == 1 && cfg.Servers[0].Prefix == ""
	s.pending.Store(set)
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
	}
	if ledger != nil {
		ropts.Pins = NewPinStore(ledger)
	}
	s.reg = registry.New(cfg, ropts)

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
		}
	})
	hooks.AddBeforeCallTool(func(ctx context.Context, _ any, req *mcp.CallToolRequest) { s.awaitTool(ctx, req) })
	s.clock(hooks)
	s.passThroughHooks(hooks)
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
	s.mcp = server.NewMCPServer("quiver", registry.Version, append(mcpOpts, s.passThroughOptions()...)...)
	s.syncSlashPrompts()
	s.passThroughInstall()
	// The registry's first catalog: no tools yet, every server starting.
	s.install(s.reg.Catalog())
	return s, nil
}

// protectedPaths are quiver's own files: the config file, the toggles
// file and folder, the state dir (with the ledger). Relative names are
// made absolute against quiver's working directory, as quiver opens them.
func protectedPaths(cfg *registry.Config, opts Options) []string {
	var out []string
	for _, p := range append([]string{cfg.Path, opts.StateDir}, opts.Protected...) {
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
	if st := s.state.Load(); st != nil {
		_ = st.ix.Close()
	}
	if s.ledger != nil {
		// Every session ends with this process: what they asked and
		// nobody answered can no longer be retried.
		for _, ss := range s.allSessions() {
			s.expireApprovals(ss)
		}
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
	return ss.Listen(ctx, in, &lineExit{w: out, x: s.exit()})
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

// catalogChanged is the registry's hook; the newest catalog wins.
func (s *Server) catalogChanged(cat *registry.Catalog) {
	s.pass.catalog(cat)
	if s.opts.OnCatalog != nil {
		s.opts.OnCatalog(cat)
	}
	for {
		select {
		case s.changes <- cat:
			return
		default:
		}
		select {
		case <-s.changes: // drop the stale one
		default:
		}
	}
}

func (s *Server) rebuildLoop(ctx context.Context) {
	regReady := s.reg.Ready()
	var pending *registry.Catalog
	var installed uint64
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case cat := <-s.changes:
			pending = cat
			timer.Reset(s.opts.Debounce)
		case <-regReady:
			regReady = nil
		case <-timer.C:
			if pending != nil {
				s.install(pending)
				installed = pending.Gen
				pending = nil
			}
		}
		if regReady == nil && installed >= s.reg.ReadyGen() {
			select {
			case <-s.ready:
			default:
				close(s.ready)
			}
		}
	}
}

// install builds the index and the listed definitions for cat, swaps them
// in, registers the tools with mcp-go, and tells sessions whose list changed.
func (s *Server) install(cat *registry.Catalog) {
	set := s.pending.Load()
	cfg := set.cfg
	entries := append(builtinEntries(s.builtinsFor(cfg)), skillEntries(set.skills)...)
	tools := map[string]mcp.Tool{}
	for _, t := range s.builtinsFor(cfg) {
		tools[t.Name] = t
	}
	var serverTools []server.ServerTool
	abouts := map[string]serverAbout{} // per server, once
	for _, t := range cat.Tools {
		redact := set.redact.Redact
		def := mcp.Tool{
			Name:           t.Exposed,
			Title:          redact(t.Title),
			Description:    redact(t.Description),
			RawInputSchema: redactSchema(t.InputSchema, redact),
			Annotations:    t.Annotations,
		}
		if len(t.OutputSchema) > 0 {
			// Listed as the server wrote it: a host checks structured
			// results against it, and bound keeps them valid.
			def.RawOutputSchema = redactSchema(t.OutputSchema, redact)
		}
		if a, ok := redactJSON(def.Annotations, redact, func(b json.RawMessage) (mcp.ToolAnnotation, error) {
			var out mcp.ToolAnnotation
			return out, json.Unmarshal(b, &out)
		}); ok {
			def.Annotations = a
		}
		if set.gate.ClassOf(gateToolFor(set, t)) == gate.ClassExecute {
			// The gate wants a justification for execution; the model can
			// only give one if the schema it reads has the field.
			def.RawInputSchema = gate.WithJustification(def.RawInputSchema) // redacted, as above
		}
		if err := mcp.ValidateParamHeaderAnnotations(&def); err != nil {
			// mcp-go panics on these; leave the tool out and say why.
			s.log.Error("tool left out: invalid header annotations", "server", t.Server, "tool", t.Name, "err", err)
			continue
		}
		if slices.Contains(cfg.Surface.AlwaysOn, t.Exposed) {
			def.Meta = alwaysLoad()
		}
		// A switched-off or held tool stays registered, so that a host
		// that cached it gets deny.withheld or deny.definition_changed
		// rather than "tool not found"; it is never listed (withheld) and
		// never found (not indexed).
		tools[t.Exposed] = def
		serverTools = append(serverTools, server.ServerTool{Tool: def, Handler: s.handleDirect})
		if t.Off || t.Held != nil {
			continue
		}
		about, ok := abouts[t.Server]
		if !ok {
			about = selfDescription(cat, s.pass, t.Server, redact)
			abouts[t.Server] = about
		}
		entries = append(entries, index.Entry{
			Name: t.Exposed, Kind: index.KindMCP, Server: t.Server, Title: cmp.Or(def.Title, def.Annotations.Title),
			Description: def.Description, Keywords: t.Keywords,
			Params:      index.ParamsFromSchema(t.InputSchema),
			ReadOnly:    t.Annotations.ReadOnlyHint != nil && *t.Annotations.ReadOnlyHint,
			ServerTitle: about.title, ServerInstructions: about.instructions, ServerExtras: about.extras,
		})
	}
	ix, err := index.Build(entries)
	if err != nil {
		s.log.Error("index build failed; keeping the previous index", "err", err)
		return
	}
	for _, b := range s.builtinsFor(cfg) {
		serverTools = append(serverTools, server.ServerTool{Tool: b, Handler: s.handleBuiltin})
	}
	old := s.state.Swap(&snapshot{cat: cat, ix: ix, tools: tools, settings: set})
	s.mcp.SetTools(serverTools...)
	if old != nil {
		// Searches in flight may still hold the old index; give them time.
		time.AfterFunc(10*time.Second, func() { _ = old.ix.Close() })
	}
	s.log.Debug("catalog installed", "gen", cat.Gen, "tools", len(cat.Tools))
	s.unbindSwitchedOff(cat)
	for _, ss := range s.allSessions() {
		ss.forgetSearch() // the new catalog may answer the same search differently
		s.notify(ss)
	}
	s.signalInstalled()
}

func alwaysLoad() *mcp.Meta {
	return &mcp.Meta{AdditionalFields: map[string]any{"anthropic/alwaysLoad": true}}
}

// builtinTools are quiver's own tools, in the fixed order they are listed.
func builtinTools(reveal string) []mcp.Tool {
	out := []mcp.Tool{builtin.SearchToolsTool()}
	if reveal != registry.RevealList {
		out = append(out, builtin.CallToolTool())
	}
	out = append(out, builtin.ReadFileTool(), builtin.RequestCapabilityTool())
	for i := range out {
		out[i].Meta = alwaysLoad()
	}
	return out
}

// builtins are quiver's own tools on this server's surface: none in
// transparent mode.
func (s *Server) builtins() []mcp.Tool { return s.builtinsFor(s.cfg()) }

func (s *Server) builtinsFor(cfg *registry.Config) []mcp.Tool {
	if s.transparent {
		return nil
	}
	return builtinTools(cfg.Surface.Reveal)
}

// serverAbout is what a server says of itself, for search.
type serverAbout struct {
	title, instructions string
	extras              []string // its prompts' and resources' names and titles
}

// selfDescription gathers, redacted, what server srv said of itself in
// initialize and the names of the prompts and resources it offers.
func selfDescription(cat *registry.Catalog, m *mirror, srv string, redact func(string) string) serverAbout {
	var a serverAbout
	if st, ok := cat.Status(srv); ok {
		a.title, a.instructions = redact(st.Title), redact(st.Instructions)
	}
	m.mu.Lock()
	v := m.views[srv]
	m.mu.Unlock()
	if v == nil {
		return a
	}
	for _, p := range v.prompts {
		a.extras = append(a.extras, p.Name, p.Title)
	}
	for _, r := range v.resources {
		a.extras = append(a.extras, r.Name, r.Title)
	}
	for _, t := range v.templates {
		a.extras = append(a.extras, t.Name, t.Title)
	}
	return a
}

func builtinEntries(builtins []mcp.Tool) []index.Entry {
	var out []index.Entry
	for _, t := range builtins {
		out = append(out, index.Entry{Name: t.Name, Kind: index.KindCore, Description: t.Description,
			Params: index.ParamsFromSchema(t.RawInputSchema), ReadOnly: true})
	}
	return out
}

func skillEntries(lib *skills.Library) []index.Entry {
	var out []index.Entry
	for _, d := range lib.Docs() {
		kind := index.KindSkill
		if d.Kind == skills.KindReference {
			kind = index.KindReference
		}
		out = append(out, index.Entry{Name: d.Name, Kind: kind, Description: d.Description,
			Keywords: d.Keywords, Headings: d.Headings, Path: d.Path})
	}
	return out
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

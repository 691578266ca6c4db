package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/quiver-mcp/quiver/internal/logfile"
	"github.com/quiver-mcp/quiver/operator"
	"github.com/quiver-mcp/quiver/proxy"
	"github.com/quiver-mcp/quiver/registry"
)

func serveCmd() *command {
	return &command{
		summary: "run the proxy (stdio for desktop hosts, or streamable HTTP)",
		usage:   "serve [--config PATH] [--toggles PATH] [--http ADDR] [--auth-token-file PATH] [--ui ADDR] [--metrics ADDR] [--state-dir DIR] [--log-level LEVEL] [--log-format text|json] [--log-file PATH]",
		help: `
Runs quiver as an MCP server. By default it speaks stdio, which is what
Claude Desktop, Claude Code and most hosts launch. With --http it serves
streamable HTTP at http://ADDR/mcp with stateful sessions.

quiver answers initialize and tools/list at once; the servers in servers.yaml
start in parallel in the background and their tools join as they come up.
Logs go to stderr, never to stdout.

servers.yaml and the toggles file are watched: save either and quiver
follows without a restart or a dropped session. Servers added start,
servers removed stop, servers whose entry changed restart, the others are
untouched; then each session whose tool list changed is told so. A file
that does not parse or validate is rejected whole (the log says file, line
and key; so do "quiver doctor" and "quiver config effective") and the last
good configuration stays. A deleted servers.yaml keeps the last good
configuration; a deleted toggles file switches nothing off. The built-in
configuration (no servers.yaml) is not watched.

Over HTTP, quiver refuses:
  - a request from a web page of another site: a browser's Origin header
    must be a loopback origin (http or https on localhost, 127.0.0.0/8 or
    [::1], any port) or one listed in http.allowed_origins (403). Clients
    that send no Origin (every non-browser client) pass.
  - a request body over http.max_body (413), and one that does not arrive
    within http.read_timeout (408 or a closed connection). Responses, SSE
    streams included, are never cut by a timeout.
  - with an auth token, any request without "Authorization: Bearer TOKEN"
    (401). On a loopback address a token is optional; on any other address
    (0.0.0.0, a LAN address, an empty host as in ":8765") quiver will not
    start without one, and says so at WARN when it runs there.
A loopback address also refuses a Host header that is not localhost
(DNS-rebinding protection).

servers.yaml's http: section (read at start; restart to change it):

  http:
    max_body: 4MiB          # bytes, or a size in B, KiB, MiB or GiB
    read_timeout: 30s       # to receive a request's headers and body
    allowed_origins:        # browser origins allowed besides loopback
      - https://app.example.com

Flags:
  --config PATH      servers.yaml to use (default: servers.yaml in
                     quiver's config dir: ~/.config/quiver on Linux,
                     ~/Library/Application Support/quiver on macOS,
                     %AppData%\quiver on Windows; else built in). One in
                     the working folder is read only when named here: a
                     model may write files there through the servers.
  --toggles PATH     the tool toggles file (default: tools.yaml beside
                     servers.yaml; see "quiver help tools")
  --http ADDR        serve streamable HTTP on ADDR (e.g. 127.0.0.1:8765)
  --auth-token-file PATH
                     with --http, require "Authorization: Bearer TOKEN" on
                     every request, TOKEN being this file's content (at
                     least 16 characters; e.g. "openssl rand -hex 32 > FILE";
                     keep the file readable by you alone). The environment
                     variable QUIVER_AUTH_TOKEN is used when this flag is
                     not given. No tool may read this file, and the token
                     shows as [redacted:QUIVER_AUTH_TOKEN] in every result,
                     log line and error.
  --ui ADDR          serve the operator page on ADDR (e.g. 127.0.0.1:8766;
                     also ui.listen in servers.yaml): approval cards, tools,
                     search, audit and grants in a local web page, opened
                     with the address "quiver ui" prints. A call that needs
                     an approval then waits for an answer given there, also
                     when the host cannot show a card. Loopback only, unless
                     the HTTP auth token is set. On an address already in
                     use, serve runs without the page and says so (WARN).
  --state-dir DIR    quiver's state (default: ~/.local/state/quiver on
                     Linux, ~/Library/Application Support/quiver/state on
                     macOS, %LocalAppData%\quiver\state on Windows)
  --metrics ADDR     serve GET /healthz, /readyz and /metrics (Prometheus)
                     on ADDR (e.g. 0.0.0.0:9090; also metrics.listen in
                     servers.yaml), without the MCP token: they show
                     server names and counts, never a call's arguments.
                     /healthz is 200 while quiver runs; /readyz is 200
                     once the ledger answers and every server has started
                     or failed, 503 before. Traces: set the standard
                     OTEL_EXPORTER_OTLP_ENDPOINT (and OTEL_EXPORTER_OTLP_
                     PROTOCOL=http/protobuf or grpc, OTEL_SERVICE_NAME,
                     OTEL_TRACES_SAMPLER); none set, no traces.
  --log-level LEVEL  debug, info, warn or error (default info)
  --log-format FORMAT
                     text (default) or json: one object a line, with the
                     same fields as text
  --log-file PATH    write the log to PATH instead of stderr, for hosts
                     that hide stderr. It rotates at 10 MiB: PATH becomes
                     PATH.1 and so on, five old files are kept (60 MiB at
                     most). Secrets are redacted as on stderr.`,
		run: runServe,
	}
}

func runServe(ctx context.Context, e *env, args []string) error {
	var c common
	var addr, tokenFile, uiFlag string
	var ops operating
	fs := newFlags("serve")
	c.register(fs)
	ops.register(fs)
	fs.StringVar(&addr, "http", "", "serve streamable HTTP on this address")
	fs.StringVar(&tokenFile, "auth-token-file", "", "with --http, the bearer token every request must send")
	fs.StringVar(&uiFlag, "ui", "", "serve the operator page on this address")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if tokenFile != "" && addr == "" {
		return fmt.Errorf("%w: --auth-token-file protects --http; over stdio there is nothing to protect", errUsage)
	}
	log, logFile, err := ops.logger(e, &c)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cfg, err := c.load(e)
	if err != nil {
		return err
	}
	metricsListen, err := ops.metricsAddr(cfg)
	if err != nil {
		return err
	}
	hc, err := decodeHTTPSection(cfg)
	if err != nil {
		return err
	}
	uiListen, err := uiAddr(cfg, uiFlag)
	if err != nil {
		return err
	}
	// Listen before anything starts, so that a refused address costs no
	// downstream server a start.
	var front *httpFront
	var tokenSecret *registry.Secret
	if addr != "" {
		token, err := authToken(e, tokenFile, log)
		if err != nil {
			return err
		}
		if token != "" {
			// The token opens every tool quiver offers: no result, log
			// line or error may show it, whichever server echoes it.
			tokenSecret = &registry.Secret{Var: authTokenVar, Value: token}
			withSecret(cfg, *tokenSecret)
		}
		if front, err = listenHTTP(addr, token, hc, log); err != nil {
			return err
		}
		defer front.ln.Close()
	}
	var ui *uiFront
	if uiListen != "" {
		token, err := authToken(e, tokenFile, log)
		if err != nil {
			return err
		}
		if ui, err = openUI(uiListen, token, func() string { s, _ := c.state(e); return s }, log); err != nil {
			return err
		}
		if ui != nil {
			defer ui.ln.Close()
		}
	}
	opsf, err := startOperating(ctx, e, metricsListen)
	if err != nil {
		return err
	}
	defer opsf.close(log)
	state, err := c.state(e)
	if err != nil {
		return err
	}
	// quiver's own files are off limits to every downstream call, or a
	// model could widen its own fence or plant a configuration quiver
	// would read next time (every place quiver looks, file or not), or
	// read the token that lets anyone in over HTTP.
	protected, secrets := c.ownPaths(e)
	if ops.logFile != "" {
		// The log is quiver's record of what ran: a model that reads it
		// learns every call, and one that rewrites it forges what a
		// person reads. Its rotations too, before they exist. They are
		// secrets: a tool given a folder above them (a search of the
		// project) would read them as it walks.
		abs, err := filepath.Abs(ops.logFile)
		if err != nil {
			return fmt.Errorf("--log-file: %w", err)
		}
		secrets = append(secrets, logfile.Files(abs, logfile.DefaultKeep)...)
	}
	if tokenFile != "" {
		secrets = append(secrets, tokenFile)
	}
	servers := c.serversPath(e)
	p, err := proxy.New(cfg, proxy.Options{Logger: log, StateDir: state, Protected: protected, Secrets: secrets, ApprovalPage: ui != nil, Observer: opsf.observer(),
		OnCatalog: func(cat *registry.Catalog) { writeCatalogSnapshot(state, servers, cat, log) }})
	if err != nil {
		return err
	}
	p.Start(ctx)
	defer p.Close()
	// The endpoints stop before the proxy they read closes.
	octx, stopOps := context.WithCancel(ctx)
	waitOps := opsf.serve(octx, p, log)
	defer func() { stopOps(); waitOps() }()
	if ui != nil {
		h, err := operator.New(p, operator.Options{Toggles: c.togglesPath(e), Token: ui.token, Logger: log,
			OpenerDir: filepath.Join(state, "ui", "open")})
		if err != nil {
			return err
		}
		// The page stops before the proxy it reads closes.
		uctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); ui.serve(uctx, h, state, c.serversPath(e), log) }()
		defer func() { stop(); <-done }()
	}
	log.Info("quiver started", "config", cfg.Path, "servers", len(cfg.Servers), "reveal", cfg.Surface.Reveal, "state_dir", state)
	// A status left by an earlier run would be wrong about this one.
	writeReloadStatus(state, servers, registry.ReloadStatus{Servers: servers, Toggles: c.togglesPath(e), ServersHash: cfg.Hash}, log)
	// A reload parses servers.yaml afresh, which knows nothing of the
	// token: each new configuration gets its secret before it is in force.
	apply := p.Reload
	if tokenSecret != nil {
		apply = func(ctx context.Context, cfg *registry.Config) error {
			withSecret(cfg, *tokenSecret)
			return p.Reload(ctx, cfg)
		}
	}
	w, err := registry.Watch(ctx, cfg, registry.WatchOptions{
		Servers: servers, Toggles: c.togglesPath(e), Logger: log, Apply: apply,
		OnStatus: func(st registry.ReloadStatus) { writeReloadStatus(state, servers, st, log) },
	})
	if err != nil {
		log.Warn("config files are not watched; changes need a restart", "err", err)
	} else {
		defer w.Close()
	}

	if front == nil {
		if isTerminal(e.stdin) {
			// A person who ran serve by hand would otherwise see nothing
			// at all and wonder whether it hangs.
			fmt.Fprintln(e.stderr, "quiver serve: waiting for an MCP host on stdin (a host such as Claude Desktop runs this command itself).\n"+
				"  To try quiver by hand: quiver doctor, quiver search \"take a note\", or quiver serve --http 127.0.0.1:8080. Ctrl-D ends.")
		}
		err := p.ServeStdio(ctx, e.stdin, e.stdout)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	return front.serve(ctx, p.HTTPHandler())
}

// authTokenVar names the HTTP auth token where it is redacted:
// [redacted:QUIVER_AUTH_TOKEN], whether it came from the variable or from
// --auth-token-file.
const authTokenVar = "QUIVER_AUTH_TOKEN"

// withSecret adds sec to cfg's secrets, once. The slice is clipped first:
// a configuration copied from another shares its backing array.
func withSecret(cfg *registry.Config, sec registry.Secret) {
	if !slices.Contains(cfg.Secrets, sec) {
		cfg.Secrets = append(slices.Clip(cfg.Secrets), sec)
	}
}

// minTokenLen keeps a guessable token off a network address: 16 hex
// characters are 64 bits ("openssl rand -hex 32" gives 64 characters).
const minTokenLen = 16

// authToken returns the bearer token from --auth-token-file, else from
// QUIVER_AUTH_TOKEN, else "" (no auth).
func authToken(e *env, file string, log *slog.Logger) (string, error) {
	src, tok := "QUIVER_AUTH_TOKEN", e.getenv("QUIVER_AUTH_TOKEN")
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--auth-token-file: %w", err)
		}
		src, tok = file, string(b)
		if fi, err := os.Stat(file); err == nil && fi.Mode().Perm()&0o077 != 0 {
			log.Warn("the auth token file is readable by others; chmod 600 it", "file", file, "mode", fi.Mode().Perm().String())
		}
	}
	tok = strings.TrimSpace(tok)
	switch {
	case file == "" && tok == "":
		return "", nil
	case tok == "":
		return "", fmt.Errorf("auth token from %s is empty", src)
	case len(tok) < minTokenLen:
		return "", fmt.Errorf("auth token from %s has %d characters; use at least %d (e.g. openssl rand -hex 32)", src, len(tok), minTokenLen)
	case strings.ContainsAny(tok, " \t\r\n"):
		return "", fmt.Errorf("auth token from %s contains white space; a bearer token cannot", src)
	}
	return tok, nil
}

// Timeouts of the HTTP front. A request's headers and body must arrive
// within readTimeout (ReadHeaderTimeout caps the headers alone); net/http
// clears the read deadline once a body has been read to its end, so a
// long SSE response (a GET stream, or a POST answered with a stream) is
// not cut. WriteTimeout stays 0 for the same streams.
const (
	defaultReadTimeout = 30 * time.Second
	readHeaderTimeout  = 10 * time.Second
	idleTimeout        = 2 * time.Minute
)

// httpFront is the listening half of "serve --http".
type httpFront struct {
	ln    net.Listener
	token string
	cfg   httpSettings
	log   *slog.Logger
}

// listenHTTP listens on addr and refuses an address beyond this machine
// without a token: an MCP endpoint runs tools with the user's rights.
// The check is on the address actually bound, so "localhost" passes and
// ":8765" or a LAN name does not.
func listenHTTP(addr, token string, hc httpSettings, log *slog.Logger) (*httpFront, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	tcp, _ := ln.Addr().(*net.TCPAddr)
	loopback := tcp != nil && tcp.IP.IsLoopback()
	if !loopback && token == "" {
		ln.Close()
		return nil, fmt.Errorf("--http %s listens beyond this machine (on %s) and no auth token is set: "+
			"set one with --auth-token-file PATH or QUIVER_AUTH_TOKEN (every request must then send \"Authorization: Bearer TOKEN\"), "+
			"or listen on a loopback address such as 127.0.0.1:PORT", addr, ln.Addr())
	}
	if !loopback {
		log.Warn("serving HTTP on a non-loopback address: anyone who can reach it and holds the token can use every tool quiver offers",
			"addr", ln.Addr().String())
	}
	return &httpFront{ln: ln, token: token, cfg: hc, log: log}, nil
}

// serve runs the guarded MCP handler until ctx ends.
func (f *httpFront) serve(ctx context.Context, h http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	guarded, err := proxy.Guard(mux, proxy.GuardOptions{
		AllowedOrigins: f.cfg.AllowedOrigins, MaxBody: f.cfg.MaxBody, Token: f.token, Logger: f.log,
	})
	if err != nil {
		return fmt.Errorf("%w: http: %w", registry.ErrInvalidConfig, err)
	}
	srv := &http.Server{
		Handler:           guarded,
		ReadHeaderTimeout: min(readHeaderTimeout, f.cfg.ReadTimeout),
		ReadTimeout:       f.cfg.ReadTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(f.log.Handler(), slog.LevelDebug),
	}
	f.log.Info("serving streamable HTTP", "url", "http://"+f.ln.Addr().String()+"/mcp", "auth", f.token != "",
		"max_body", f.cfg.MaxBody, "read_timeout", f.cfg.ReadTimeout)
	return serveUntil(ctx, srv, f.ln, 5*time.Second)
}

// serveUntil serves ln until ctx ends, then gives the requests under way
// grace to finish.
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener, grace time.Duration) error {
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// httpSettings are the http: section of servers.yaml, checked and with
// defaults filled in.
type httpSettings struct {
	MaxBody        int64
	ReadTimeout    time.Duration
	AllowedOrigins []string
}

// httpSection picks the http: section out of servers.yaml (the other
// sections belong to others). Its values are kept as nodes and checked
// here, so that a mistake is reported on its line in quiver's words.
type httpSection struct {
	HTTP struct {
		MaxBody        yaml.Node `yaml:"max_body"`
		ReadTimeout    yaml.Node `yaml:"read_timeout"`
		AllowedOrigins yaml.Node `yaml:"allowed_origins"`
	} `yaml:"http"`
	Rest map[string]yaml.Node `yaml:",inline"`
}

// decodeHTTPSection reads and checks servers.yaml's http: section; an
// error wraps registry.ErrInvalidConfig and names the file and line of
// each mistake.
func decodeHTTPSection(cfg *registry.Config) (httpSettings, error) {
	hs := httpSettings{MaxBody: proxy.DefaultMaxBody, ReadTimeout: defaultReadTimeout}
	var sec httpSection
	if err := cfg.DecodeSections(&sec); err != nil {
		return hs, err
	}
	var errs []error
	bad := func(n *yaml.Node, format string, args ...any) {
		errs = append(errs, &registry.ConfigError{File: cfg.Path, Line: n.Line, Msg: fmt.Sprintf(format, args...)})
	}
	if n := &sec.HTTP.MaxBody; n.Kind != 0 {
		v, err := parseByteSize(n.Value)
		if n.Kind != yaml.ScalarNode {
			err = errors.New("want a number of bytes or a size such as 4MiB")
		}
		if err != nil {
			bad(n, "http.max_body %q: %v", n.Value, err)
		}
		hs.MaxBody = v
	}
	if n := &sec.HTTP.ReadTimeout; n.Kind != 0 {
		d, err := time.ParseDuration(n.Value)
		if n.Kind != yaml.ScalarNode || err != nil || d <= 0 {
			bad(n, "http.read_timeout %q: want a positive duration with a unit, like 30s or 2m", n.Value)
		}
		hs.ReadTimeout = d
	}
	if n := &sec.HTTP.AllowedOrigins; n.Kind != 0 {
		if n.Kind != yaml.SequenceNode {
			bad(n, "http.allowed_origins must be a list of origins, like [https://app.example.com]")
		}
		for _, o := range n.Content {
			if _, err := proxy.ParseOrigin(o.Value); err != nil || o.Kind != yaml.ScalarNode {
				bad(o, "http.allowed_origins: %q is not an origin: want scheme://host[:port], like https://app.example.com, without a path", o.Value)
				continue
			}
			hs.AllowedOrigins = append(hs.AllowedOrigins, o.Value)
		}
	}
	if errs != nil {
		return hs, fmt.Errorf("%w: %w", registry.ErrInvalidConfig, errors.Join(errs...))
	}
	return hs, nil
}

// parseByteSize reads a number of bytes written as an integer or with a
// binary unit: "4194304", "4MiB", "512 KiB". Decimal units (MB) are
// refused rather than guessed at.
func parseByteSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	num := strings.TrimRightFunc(s, func(r rune) bool { return r == ' ' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') })
	unit := strings.TrimSpace(s[len(num):])
	mult := map[string]int64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("unknown unit %q; use B, KiB, MiB or GiB (e.g. 4MiB)", unit)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	switch {
	case err != nil || n <= 0:
		return 0, errors.New("want a positive whole number of bytes, or of KiB, MiB or GiB (e.g. 4MiB)")
	case n > math.MaxInt64/mult:
		return 0, errors.New("too large")
	}
	return n * mult, nil
}

package registry

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// conn owns one downstream server: its client, its tools, its status.
type conn struct {
	reg *Registry
	srv Server
	// secrets are those of the configuration srv came from; see secretsNow.
	secrets []Secret

	mu     sync.Mutex
	client *client.Client
	tools  []Tool
	status ServerStatus
	dead   chan struct{} // closed when the running client is found dead
	reqID  atomic.Int64
	// relist is set by a tools/list_changed from the server; supervise
	// replays one that came before it installed the client, which refresh
	// would otherwise drop.
	relist atomic.Bool
	// refreshMu keeps re-lists in order, so an older list never replaces a
	// newer one.
	refreshMu sync.Mutex
	// wanted and listing coalesce list_changed: one re-list runs at a time
	// and one more follows if any came meanwhile, however many (red team:
	// 60,000 notifications made 11,396 re-lists in 15 s).
	wanted, listing atomic.Bool
	// stderr is the current child's stderr logger; a failed start quotes
	// its last words.
	stderr atomic.Pointer[lineLogger]
	// life is set by launch and used by Apply (reload.go).
	life
}

func (c *conn) snapshot() ([]Tool, ServerStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.status
	st.Tools = len(c.tools)
	return append([]Tool(nil), c.tools...), st
}

func (c *conn) setStatus(f func(*ServerStatus)) {
	c.mu.Lock()
	prev := c.status.State
	f(&c.status)
	if c.status.State != prev {
		c.status.Since = time.Now()
	}
	c.mu.Unlock()
	c.reg.changed()
}

// supervise keeps the server running until ctx ends: connect, wait for it to
// die, reconnect with backoff. firstTry is called after the first attempt.
func (c *conn) supervise(ctx context.Context, firstTry func()) {
	log := c.reg.log.With("server", c.srv.Name)
	backoff := newBackoff(c.reg.opts.MinBackoff, c.reg.opts.MaxBackoff)
	once := sync.OnceFunc(firstTry)
	defer once()
	if why := c.srv.Unavailable; why != "" {
		// Nothing to retry until the configuration changes (Apply then
		// starts a new conn).
		log.Warn("server cannot start", "err", why)
		c.setStatus(func(s *ServerStatus) {
			s.State, s.LastError, s.LastWords, s.WordsFrom = StateDown, why, "", WordsStderr
		})
		once()
		<-ctx.Done()
		c.setStatus(func(s *ServerStatus) { s.State = StateStopped })
		return
	}
	for attempt := 0; ; attempt++ {
		cl, tools, stop, err := c.connect(ctx)
		if err != nil {
			// The status first: the catalog the first try publishes (Ready's)
			// must show the server down, not starting.
			if ctx.Err() != nil {
				c.setStatus(func(s *ServerStatus) { s.State = StateStopped })
				return
			}
			// The child's last words are the server's: kept apart (Why).
			var words string
			if lw, ok := err.(*lastWordsError); ok {
				err, words = lw.err, lw.words
			}
			// A JSON-RPC error the server answered with (initialize's):
			// its message is the server's too, however quiver-like it
			// reads (red team 65), and goes where stderr's words go.
			from := WordsStderr
			var se *ServerError
			if errors.As(err, &se) {
				words, from = c.redactText(boundWords(se.Message)), WordsAnswer
				err = errors.New(strings.Replace(err.Error(), se.Error(), se.reason(), 1))
			}
			err = loginError(c.srv.Name, err)
			if errors.Is(err, ErrLoginNeeded) {
				// Someone runs quiver login in another process: look for
				// its token soon, at no cost to the server meanwhile (no
				// token, no request).
				backoff.set(min(loginPoll, c.reg.opts.MaxBackoff))
			}
			why := c.redact(err)
			wait := backoff.next()
			wordsKey := "stderr"
			if from == WordsAnswer {
				wordsKey = "its_error_answer"
			}
			log.Warn("server failed to start; retrying", "err", why, wordsKey, words, "retry_in", wait)
			c.setStatus(func(s *ServerStatus) { s.State, s.LastError, s.LastWords, s.WordsFrom = StateDown, why, words, from })
			once()
			if !sleep(ctx, wait) {
				c.setStatus(func(s *ServerStatus) { s.State = StateStopped })
				return
			}
			continue
		}
		dead := make(chan struct{})
		c.mu.Lock()
		c.client, c.tools, c.dead = cl, tools, dead
		if attempt > 0 {
			c.status.Restarts++
		}
		c.mu.Unlock()
		if c.relist.Swap(false) {
			go c.refresh(ctx, cl)
		}
		c.setStatus(func(s *ServerStatus) { s.State, s.LastError, s.LastWords, s.WordsFrom = StateUp, "", "", WordsStderr })
		log.Info("server up", "tools", len(tools))
		once()
		up := time.Now()
		c.watch(ctx, cl, dead)
		c.mu.Lock()
		c.client = nil
		c.mu.Unlock()
		stop()
		if ctx.Err() != nil {
			c.setStatus(func(s *ServerStatus) { s.State = StateStopped })
			return
		}
		// A server that ran for a while earns a fresh backoff.
		if time.Since(up) > time.Minute {
			backoff.reset()
		}
		wait := backoff.next()
		log.Warn("server stopped; restarting", "retry_in", wait)
		c.setStatus(func(s *ServerStatus) {
			s.State, s.LastError, s.LastWords, s.WordsFrom = StateDown, "the server stopped; restarting", "", WordsStderr
		})
		if !sleep(ctx, wait) {
			c.setStatus(func(s *ServerStatus) { s.State = StateStopped })
			return
		}
	}
}

// watch returns when ctx ends or the server is found dead: a failed ping, or
// a call that saw the transport close. Protocol 2026-07-28 has no ping
// (SEP-2575: liveness is the transport's), so a server on it is sent
// nothing and only the transport tells.
func (c *conn) watch(ctx context.Context, cl *client.Client, dead chan struct{}) {
	var tick <-chan time.Time
	if !mcp.IsModernProtocol(cl.ProtocolVersion()) {
		t := time.NewTicker(c.reg.opts.HealthInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-dead:
			return
		case <-tick:
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			//lint:ignore SA1019 only a connection on 2025-11-25 or before gets here, where ping is the liveness probe
			err := cl.Ping(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				c.reg.log.Warn("server failed its health check", "server", c.srv.Name, "err", c.redact(err))
				return
			}
		}
	}
}

func (c *conn) markDead(dead chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead == dead {
		select {
		case <-dead:
		default:
			close(dead)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// startTimeout bounds a server's start (spawn, initialize, first
// tools/list) when its call timeout is shorter: a start may have to
// download the server first (npx -y), which no per-call timeout foresees.
const startTimeout = DefaultTimeout

// connect starts the server, runs the handshake and lists its tools. stop
// closes the client and reaps the child's whole process group.
func (c *conn) connect(ctx context.Context) (_ *client.Client, _ []Tool, _ func(), err error) {
	// The child lives as long as life: Start's ctx must outlive the
	// handshake. life does not end with ctx, so that stop can close the
	// client first (stdin closed: a clean exit) and only then, by
	// cancelling life, sweep the process group.
	life, cancelLife := context.WithCancel(context.WithoutCancel(ctx))
	var child *exec.Cmd // set by the stdio transport inside cl.Start
	c.stderr.Store(nil)
	tr, err := c.transport(func(cmd *exec.Cmd) { child = cmd })
	if err != nil {
		cancelLife()
		return nil, nil, nil, err
	}
	opts := append([]client.ClientOption{client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)}, c.reg.opts.ClientOptions...)
	if f := c.reg.opts.ServerClientOptions; f != nil {
		opts = append(opts, f(c.srv.Name)...)
	}
	cl := client.NewClient(tr, opts...)
	stop := func() {
		_ = cl.Close()
		cancelLife()
	}
	defer func() {
		if err != nil {
			// Before stop closes the pipe: the child's last words (npm's
			// E404, "Error: GITHUB_TOKEN is not set") are the real reason.
			if l := c.stderr.Load(); l != nil && child != nil {
				if words := l.lastWords(time.Second); words != "" {
					err = &lastWordsError{err: err, words: words}
				}
			}
			stop()
		}
	}()
	if err := cl.Start(life); err != nil {
		return nil, nil, nil, fmt.Errorf("start: %w", err)
	}
	if child != nil && child.Process != nil {
		// The child and what it starts are one tree (a process group, a
		// Job Object on Windows); once stop has closed the client (and so
		// reaped the child), kill what it left behind. child.Process is
		// read here, after cl.Start returned on this goroutine, never by
		// the sweeper while cmd.Start may write it.
		if t, terr := superviseTree(child.Process); terr != nil {
			c.reg.log.Warn("what the server starts may outlive it", "server", c.srv.Name, "err", terr)
		} else {
			go func() {
				<-life.Done()
				_ = t.kill()
			}()
		}
	}
	c.relist.Store(false)
	cl.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			c.relist.Store(true)
			// Never list on the read loop: the answer would wait behind us.
			c.wanted.Store(true)
			if c.listing.CompareAndSwap(false, true) {
				go c.refreshes(ctx, cl)
			}
		}
		if f := c.reg.opts.OnNotification; f != nil {
			f(c.srv.Name, n)
		}
	})
	ictx, cancel := context.WithTimeout(ctx, max(c.timeout(), startTimeout))
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "quiver", Version: Version}
	ires, err := cl.Initialize(ictx, init)
	if err != nil {
		var te *transport.Error
		if !errors.As(err, &te) && ictx.Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			// Not the transport's: the server answered with an error,
			// whose message is its own words.
			err = &ServerError{Message: err.Error(), err: err}
		}
		return nil, nil, nil, fmt.Errorf("initialize: %w", err)
	}
	c.mu.Lock()
	c.status.Title = cmp.Or(ires.ServerInfo.Title, ires.ServerInfo.Name)
	c.status.Instructions = ires.Instructions
	c.mu.Unlock()
	tools, err := c.listTools(ictx, cl)
	if err != nil {
		return nil, nil, nil, err
	}
	return cl, tools, stop, nil
}

// refresh re-lists the tools after the server said they changed.
// refreshes re-lists while list_changed keeps coming, one list at a time.
func (c *conn) refreshes(ctx context.Context, cl *client.Client) {
	for {
		for c.wanted.Swap(false) {
			c.refresh(ctx, cl)
		}
		c.listing.Store(false)
		// One may have come between the last Swap and the Store.
		if !c.wanted.Load() || !c.listing.CompareAndSwap(false, true) {
			return
		}
	}
}

func (c *conn) refresh(ctx context.Context, cl *client.Client) {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	tools, err := c.listTools(lctx, cl)
	if err != nil {
		c.reg.log.Warn("re-listing tools failed", "server", c.srv.Name, "err", c.redact(err))
		return
	}
	c.mu.Lock()
	if c.client != cl {
		c.mu.Unlock()
		return
	}
	c.tools = tools
	c.mu.Unlock()
	c.reg.changed()
}

// listTools sends tools/list itself rather than through the typed ListTools,
// which drops schema keywords (oneOf, $schema, descriptions...): the model
// must see the schema the server wrote.
func (c *conn) listTools(ctx context.Context, cl *client.Client) ([]Tool, error) {
	var out []Tool
	cursor := ""
	for page := 0; page < 100; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		result, err := c.send(ctx, cl, "list", mcp.MethodToolsList, params)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		var res struct {
			Tools []struct {
				Name         string             `json:"name"`
				Title        string             `json:"title"`
				Description  string             `json:"description"`
				InputSchema  json.RawMessage    `json:"inputSchema"`
				OutputSchema json.RawMessage    `json:"outputSchema"`
				Annotations  mcp.ToolAnnotation `json:"annotations"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(result, &res); err != nil {
			return nil, fmt.Errorf("tools/list: malformed result: %w", err)
		}
		for _, t := range res.Tools {
			if t.Name == "" {
				continue
			}
			schema := t.InputSchema
			if len(bytes.TrimSpace(schema)) == 0 || string(schema) == "null" {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			title := t.Title
			if title == "" {
				title = t.Annotations.Title
			}
			// The schemas are kept as canonical bytes, the very bytes the
			// digest covers: what a person pinned is what the model is
			// handed, in tools/list, search_tools and the page alike.
			tool := Tool{Name: t.Name, Title: title, Description: t.Description,
				InputSchema: CanonicalSchema(schema), OutputSchema: CanonicalSchema(t.OutputSchema), Annotations: t.Annotations}
			tool.Digest = tool.Definition().Digest()
			out = append(out, tool)
		}
		if res.NextCursor == "" || res.NextCursor == cursor {
			return out, nil
		}
		cursor = res.NextCursor
	}
	return nil, errors.New("tools/list: more than 100 pages; the server keeps returning a cursor")
}

// errCallTimeout is the cause of a request's own deadline, the server's
// timeout; a shorter deadline of the caller's is not blamed on it.
var errCallTimeout = errors.New("the server's call timeout passed")

// do runs f with the server's running client under the server's per-call
// deadline: the one way a request reaches a server, tools/call and what
// Registry.Do carries alike. A server that is not running, or that Apply
// is stopping, gives ErrServerDown; a transport that closes during f marks
// the server dead so that it restarts. what names the request in errors.
func (c *conn) do(ctx context.Context, what string, f func(ctx context.Context, cl *client.Client) error) error {
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	c.mu.Lock()
	cl, dead, state := c.client, c.dead, c.status.State
	c.mu.Unlock()
	if why := c.stopWhy.Load(); why != nil {
		return fmt.Errorf("%w: %s %s", ErrServerDown, c.srv.Name, *why)
	}
	if cl == nil {
		return fmt.Errorf("%w: %s is %s", ErrServerDown, c.srv.Name, state)
	}
	timeout := c.timeout()
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errCallTimeout)
	defer cancel()
	err := f(ctx, cl)
	if err == nil {
		return nil
	}
	if why := c.stopWhy.Load(); why != nil {
		// Stopped by Apply: the transport closed, or the server ended
		// the request as it shut down; either way, say why.
		return fmt.Errorf("%w: %s %s during the %s (%v)", ErrServerDown, c.srv.Name, *why, what, err)
	}
	if errors.Is(err, transport.ErrTransportClosed) {
		c.markDead(dead)
		return fmt.Errorf("%w: %s stopped during the %s", ErrServerDown, c.srv.Name, what)
	}
	if errors.Is(context.Cause(ctx), errCallTimeout) {
		return fmt.Errorf("%s did not answer within %s (its timeout in servers.yaml): %w", c.srv.Name, timeout, err)
	}
	return err
}

// call forwards one tools/call and returns its result as the server sent
// it, byte for byte: quiver decodes a result only where it must look
// inside (rounds of input here; a cut or a check in the proxy), so a
// result that needs neither reaches the host without a decode and a
// re-encode.
func (c *conn) call(ctx context.Context, name string, args json.RawMessage, meta *mcp.Meta) (json.RawMessage, error) {
	var res json.RawMessage
	err := c.do(ctx, "call", func(ctx context.Context, cl *client.Client) (err error) {
		// The params mcp-go's CallTool would send: its MarshalJSON sends
		// RawArguments as they are.
		if res, err = c.send(ctx, cl, "call", mcp.MethodToolsCall, mcp.CallToolParams{Name: name, RawArguments: args, Meta: meta}); err != nil {
			return err
		}
		res, err = c.rounds(ctx, cl, name, args, meta, res)
		return err
	})
	return res, err
}

// send sends one request as it is and returns its result's bytes, the way
// mcp-go's typed calls do but without decoding the result: tools/list
// keeps every schema keyword, tools/call passes its result on as it came.
// Over stdio it says notifications/cancelled when ctx ends first, as the
// typed calls do there; the HTTP and SSE transports' wrappers (cancel.go)
// say it for every request.
func (c *conn) send(ctx context.Context, cl *client.Client, kind string, method mcp.MCPMethod, params any) (json.RawMessage, error) {
	tr := cl.GetTransport()
	req := transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		// String IDs never clash with the client's own integer IDs.
		ID:     mcp.NewRequestId("quiver-" + kind + "-" + strconv.FormatInt(c.reqID.Add(1), 10)),
		Method: string(method),
		Params: params,
	}
	resp, err := tr.SendRequest(ctx, req)
	if _, stdio := tr.(*transport.Stdio); stdio {
		cancelled(ctx, req, err, tr.SendNotification)
	}
	if err == nil && resp.Error != nil {
		err = &ServerError{Code: resp.Error.Code, Message: resp.Error.Message, err: resp.Error.AsError()}
	}
	if err != nil {
		return nil, err
	}
	return resp.Result, nil
}

// transport builds the client transport the entry asks for.
// started is given a stdio child's command before the transport starts it.
func (c *conn) transport(started func(*exec.Cmd)) (transport.Interface, error) {
	s := c.srv
	// The transports log through quiver's logger, tagged with the server,
	// not through slog.Default, and redacted: their errors quote urls.
	log := slog.New(redactingHandler{inner: c.reg.log.Handler(), secrets: c.secretsNow}).With("server", s.Name)
	switch s.Transport {
	case TransportHTTP:
		//lint:ignore SA1019 quiver needs a downstream HTTP server's unsolicited notifications (list_changed, resource updates) on this stream; with it the session stays on 2025-11-25, which servers on 2026-07-28 still speak
		opts := []transport.StreamableHTTPCOption{transport.WithHTTPHeaders(s.Headers), transport.WithHTTPHeaderFunc(headersOf), transport.WithContinuousListening(), transport.WithHTTPLogger(log)}
		if s.Auth == AuthOAuth {
			oc, _, err := OAuthConfig(s, c.reg.opts.StateDir, "")
			if err != nil {
				return nil, err
			}
			opts = append(opts, transport.WithHTTPOAuth(oc))
		}
		t, err := transport.NewStreamableHTTP(s.URL, opts...)
		if err != nil {
			return nil, err
		}
		return cancellingHTTP{t}, nil
	case TransportSSE:
		opts := []transport.ClientOption{transport.WithHeaders(s.Headers), transport.WithHeaderFunc(headersOf), transport.WithResponseTimeout(s.Timeout), transport.WithSSELogger(log)}
		if s.Auth == AuthOAuth {
			oc, _, err := OAuthConfig(s, c.reg.opts.StateDir, "")
			if err != nil {
				return nil, err
			}
			opts = append(opts, transport.WithOAuth(oc))
		}
		t, err := transport.NewSSE(s.URL, opts...)
		if err != nil {
			return nil, err
		}
		return cancellingSSE{t}, nil
	}
	command := s.Command
	if command == "quiver" && c.reg.opts.Executable != "" {
		command = c.reg.opts.Executable
	}
	var extra []string
	if c.reg.opts.StateDir != "" {
		extra = append(extra, "QUIVER_STATE_DIR="+c.reg.opts.StateDir)
	}
	// The child gets a small environment, never quiver's whole one: see
	// defaultEnv.
	env := s.childEnviron(os.Environ(), extra...)
	// The stderr logger redacts as it cuts (stderr.go), with the secrets
	// of the moment the child starts.
	stderr := &lineLogger{log: c.reg.log.With("server", s.Name), redact: c.secretsNow()}
	c.stderr.Store(stderr)
	return transport.NewStdioWithOptions(command, env, s.Args,
		transport.WithCommandFunc(func(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
			dir := s.Cwd
			if dir == "" {
				if c.reg.opts.WorkDir == "" {
					return nil, errors.New("quiver has no working folder of its own to start it in (see the log); give the server a cwd: in servers.yaml")
				}
				dir = ChildDir(c.reg.opts.WorkDir, s)
				if check := c.reg.opts.ChildDirSafe; check != nil {
					if err := check(s.Name, dir); err != nil {
						return nil, err
					}
				}
				if err := prepareChildDir(dir); err != nil {
					return nil, err
				}
				// A command written as a relative path ("./bin/server")
				// still names the file it named, beside quiver.
				if filepath.Base(command) != command && !filepath.IsAbs(command) {
					if abs, err := filepath.Abs(command); err == nil {
						command = abs
					}
				}
			}
			cmd := exec.Command(command, args...)
			cmd.Env = env
			cmd.Dir = dir
			cmd.SysProcAttr = childAttrs() // npx starts node, which may start more
			started(cmd)
			return cmd, nil
		}),
		transport.WithCommandStderrWriter(stderr),
		transport.WithCommandLogger(log),
	), nil
}

// redact is err's text with the configuration's secrets hidden: a url
// server's errors quote its url, keys and all.
// A lastWordsError is a failed start with what the child last wrote to
// stderr (redacted as it was read): the server's words, kept apart from
// quiver's account so that they are shown quoted and labelled
// (ServerStatus.Why), never as quiver's.
type lastWordsError struct {
	err   error
	words string
}

func (e *lastWordsError) Error() string {
	return ServerStatus{LastError: e.err.Error(), LastWords: e.words}.Why()
}

func (e *lastWordsError) Unwrap() error { return e.err }

// A ServerError is a JSON-RPC error a server answered a request with.
// Its message is the server's words (and through what it read, maybe a
// model's), never quiver's: it is shown bounded, quoted and labelled
// (red team 65), however much it reads like quiver ("quiver: allow.grant:
// the user approved …").
type ServerError struct {
	Code    int // 0 when unknown
	Message string
	err     error
}

// maxWords bounds the server's words an error quotes.
const maxWords = 300

func (e *ServerError) Error() string {
	return fmt.Sprintf("%s; it said (the server's words, not quiver's): %q", e.reason(), boundWords(e.Message))
}

// reason is quiver's account of the error, without the server's words.
func (e *ServerError) reason() string {
	if e.Code != 0 {
		return fmt.Sprintf("the server answered with JSON-RPC error %d", e.Code)
	}
	return "the server answered with an error"
}

func (e *ServerError) Unwrap() error { return e.err }

// boundWords cuts a server's words to maxWords bytes on a character
// boundary.
func boundWords(s string) string {
	if len(s) <= maxWords {
		return s
	}
	cut := maxWords
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// redactText is text with the configuration's secrets hidden.
func (c *conn) redactText(text string) string { return Redact(text, c.secretsNow()) }

func (c *conn) redact(err error) string { return Redact(err.Error(), c.secretsNow()) }

// secretsNow are the secrets to hide from what c logs or stores: those of
// the configuration c's entry came from, which Apply starts it under
// before that configuration is in force, and those in force.
func (c *conn) secretsNow() []Secret {
	now := c.reg.config().Secrets
	if len(c.secrets) == 0 || len(now) > 0 && &c.secrets[0] == &now[0] {
		return now
	}
	return append(slices.Clip(c.secrets), now...)
}

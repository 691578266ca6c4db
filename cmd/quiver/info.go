package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/internal/toolresult"
	"github.com/quiver-mcp/quiver/proxy"
	"github.com/quiver-mcp/quiver/registry"
)

// startWithCommonFlags starts a command that takes only the common flags
// and --wait: it parses them and starts every server (common.start).
func startWithCommonFlags(ctx context.Context, e *env, name string, args []string) (*proxy.Server, *common, error) {
	c := &common{}
	fs := newFlags(name)
	c.register(fs)
	c.registerWait(fs)
	if err := parseFlagsOnly(fs, args); err != nil {
		return nil, nil, err
	}
	p, err := c.start(ctx, e)
	return p, c, err
}

// start loads the config once (an error says whether a running quiver
// keeps its last good one), starts every server and waits until each has
// tried once (or --wait runs out), for commands that print once.
func (c *common) start(ctx context.Context, e *env) (*proxy.Server, error) {
	if c.logLevel == "info" {
		c.logLevel = "warn" // a one-shot command's stderr is for problems
	}
	log, err := c.logger(e)
	if err != nil {
		return nil, err
	}
	cfg, err := c.loadExplained(e)
	if err != nil {
		return nil, err
	}
	state, err := c.state(e)
	if err != nil {
		return nil, err
	}
	p, err := proxy.New(cfg, proxy.Options{Logger: log, StateDir: state})
	if err != nil {
		return nil, err
	}
	p.Start(ctx)
	select {
	case <-p.Ready():
	case <-time.After(c.wait):
	case <-ctx.Done():
	}
	return p, nil
}

func searchCmd() *command {
	return &command{
		summary: "search the configured servers' tools as search_tools would",
		usage:   "search [--kind KIND] [--limit N] [--config PATH] QUERY...",
		help: `
Starts the configured servers, runs the query through the same search the
model gets (search_tools), and prints the answer.

Flags:
  --kind KIND   any (default), tool, core, mcp, skill or reference
  --limit N     hits to show, 1 to 10 (default 5)
  --wait D      how long to wait for servers to start (default 30s)
  --json        print the structured answer instead of the text`,
		run: func(ctx context.Context, e *env, args []string) error {
			var c common
			var kind string
			var limit int
			var asJSON bool
			fs := newFlags("search")
			c.register(fs)
			fs.StringVar(&kind, "kind", "any", "kind")
			fs.IntVar(&limit, "limit", 0, "hits")
			c.registerWait(fs)
			fs.BoolVar(&asJSON, "json", false, "structured output")
			if err := parse(fs, args); err != nil {
				return err
			}
			if _, ok := builtin.KindsFor(kind); !ok {
				return fmt.Errorf("%w: --kind %q: use any, tool, core, mcp, skill or reference", errUsage, kind)
			}
			if limit < 0 || limit > 10 {
				return fmt.Errorf("%w: --limit %d: use 1 to 10", errUsage, limit)
			}
			query := strings.Join(fs.Args(), " ")
			if strings.TrimSpace(query) == "" {
				return fmt.Errorf("%w: say what to search for, e.g. quiver search \"take a note\"", errUsage)
			}
			p, err := c.start(ctx, e)
			if err != nil {
				return err
			}
			defer p.Close()
			q, _ := json.Marshal(map[string]any{"query": query, "kind": kind, "limit": limit})
			res := p.Search(ctx, q)
			if asJSON {
				b, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
				fmt.Fprintln(e.stdout, string(b))
			} else {
				fmt.Fprintln(e.stdout, toolresult.Text(res))
			}
			if res.IsError {
				return fmt.Errorf("search refused")
			}
			return nil
		},
	}
}

func doctorCmd() *command {
	return &command{
		summary: "check every server and weigh the surface",
		usage:   "doctor [--config PATH] [--wait D] [--json]",
		help: `
Loads the configuration (reporting any error with its file, line and key,
and whether a running quiver keeps its last good configuration meanwhile),
starts every server, and prints each one's state, tool count and last error; then the size
of what a model reads first (the lean surface) against listing every tool,
in bytes and estimated tokens (4 bytes a token). Exits 1 if any server is
down or the catalog has a problem (two tools under one name, a tool name in
the configuration that its server does not offer).

Flags:
  --wait D   how long to wait for servers to start (default 30s)
  --json     one JSON object: config, servers (name, transport, state,
             tools, last_error, last_words), problems, surface; the exit
             code is the same`,
		run: func(ctx context.Context, e *env, args []string) error {
			c := &common{}
			var asJSON bool
			fs := newFlags("doctor")
			c.register(fs)
			c.registerWait(fs)
			fs.BoolVar(&asJSON, "json", false, "JSON")
			if err := parseFlagsOnly(fs, args); err != nil {
				return err
			}
			p, err := c.start(ctx, e)
			if err != nil {
				return err
			}
			defer p.Close()
			running := ""
			if state, err := c.state(e); err == nil {
				if st, ok := runningStatus(state, c.serversPath(e)); ok {
					running = describeRunning(st)
				}
			}
			if asJSON {
				return writeDoctorJSON(e.stdout, running, p)
			}
			if running != "" {
				fmt.Fprintf(e.stdout, "config: %s\n\n", running)
			}
			cat := p.Catalog()
			tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tTRANSPORT\tSTATE\tTOOLS\tLAST ERROR")
			for _, s := range cat.Servers {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.Name, s.Transport, s.State, s.Tools, s.Why())
			}
			_ = tw.Flush()
			for _, prob := range cat.Problems {
				fmt.Fprintf(e.stdout, "problem: %s\n", prob)
			}
			w := weigh(p)
			fmt.Fprintf(e.stdout, "\nsurface: %s\n", w.total.summary())
			return doctorVerdict(cat, "listed above")
		},
	}
}

// doctorVerdict is doctor's exit: an error when a server is not up or the
// catalog has problems.
func doctorVerdict(cat *registry.Catalog, where string) error {
	down := 0
	for _, s := range cat.Servers {
		if s.State != registry.StateUp {
			down++
		}
	}
	var errs []error
	if down > 0 {
		errs = append(errs, fmt.Errorf("%d of %d servers are not up", down, len(cat.Servers)))
	}
	if n := len(cat.Problems); n > 0 {
		errs = append(errs, fmt.Errorf("the catalog has %d problem(s), %s", n, where))
	}
	return errors.Join(errs...)
}

// doctorJSON is doctor --json: what the table says, for a script.
type doctorJSON struct {
	Config   string         `json:"config,omitempty"`
	Servers  []doctorServer `json:"servers"`
	Problems []string       `json:"problems"`
	Surface  doctorSurface  `json:"surface"`
	OK       bool           `json:"ok"`
}

type doctorServer struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	State     string `json:"state"`
	Tools     int    `json:"tools"`
	LastError string `json:"last_error,omitempty"`
	// LastWords is the server's own last words on stderr: its text, not
	// quiver's.
	LastWords string `json:"last_words,omitempty"`
	// WordsFrom says where LastWords came from: "" for stderr, "answer"
	// for the message of a JSON-RPC error it answered with.
	WordsFrom string `json:"last_words_from,omitempty"`
}

type doctorSurface struct {
	LeanTools  int `json:"lean_tools"`
	LeanBytes  int `json:"lean_bytes"`
	LeanTokens int `json:"lean_tokens"`
	AllTools   int `json:"all_tools"`
	AllBytes   int `json:"all_bytes"`
	AllTokens  int `json:"all_tokens"`
}

func writeDoctorJSON(w io.Writer, running string, p *proxy.Server) error {
	cat := p.Catalog()
	out := doctorJSON{Config: running, Servers: []doctorServer{}, Problems: append([]string{}, cat.Problems...)}
	for _, s := range cat.Servers {
		out.Servers = append(out.Servers, doctorServer{Name: s.Name, Transport: s.Transport, State: string(s.State), Tools: s.Tools,
			LastError: s.LastError, LastWords: s.LastWords, WordsFrom: s.WordsFrom})
	}
	t := weigh(p).total
	out.Surface = doctorSurface{LeanTools: t.leanTools, LeanBytes: t.leanBytes, LeanTokens: t.leanBytes / 4,
		AllTools: t.allTools, AllBytes: t.allBytes, AllTokens: t.allBytes / 4}
	verdict := doctorVerdict(cat, "in problems")
	out.OK = verdict == nil
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintln(w, string(b))
	return verdict
}

func tokensCmd() *command {
	return &command{
		summary: "weigh the lean surface against listing every tool",
		usage:   "tokens [--config PATH] [--wait D]",
		help: `
Loads the configuration, starts every server, and prints what a model reads
first (the lean surface: quiver's own tools and the always-on ones) against
what listing every enabled tool would cost, per server and in total, in
bytes of tools/list JSON and estimated tokens (4 bytes a token). quiver's
own tools are the row "quiver". A server's row counts its tools' JSON; the
total is the whole tools/list result.

Flags:
  --wait D   how long to wait for servers to start (default 30s)`,
		run: func(ctx context.Context, e *env, args []string) error {
			p, _, err := startWithCommonFlags(ctx, e, "tokens", args)
			if err != nil {
				return err
			}
			defer p.Close()
			w := weigh(p)
			tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tLEAN TOOLS\tLEAN BYTES\tLEAN TOKENS\tALL TOOLS\tALL BYTES\tALL TOKENS")
			row := func(name string, x weight) {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", name, x.leanTools, x.leanBytes, x.leanBytes/4, x.allTools, x.allBytes, x.allBytes/4)
			}
			for _, name := range w.order {
				row(name, w.servers[name])
			}
			row("total", w.total)
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "\n%s\n", w.total.summary())
			return nil
		},
	}
}

// weight is the size of a set of tool definitions, lean and all.
type weight struct {
	leanTools, leanBytes, allTools, allBytes int
}

func (x weight) summary() string {
	s := fmt.Sprintf("%d tools, %d bytes (~%d tokens) listed first; all %d tools would be %d bytes (~%d tokens)",
		x.leanTools, x.leanBytes, x.leanBytes/4, x.allTools, x.allBytes, x.allBytes/4)
	if x.allBytes > 0 {
		s += fmt.Sprintf(": %.0f%% saved", 100*(1-float64(x.leanBytes)/float64(x.allBytes)))
	}
	return s
}

// weights are a proxy's surface weighed per server ("quiver" for the
// builtins) and in total, for doctor and tokens.
type weights struct {
	order   []string
	servers map[string]weight
	total   weight
}

func weigh(p *proxy.Server) weights {
	lean, full := p.Surface()
	cat := p.Catalog()
	w := weights{servers: map[string]weight{}}
	owner := func(name string) string {
		if t, ok := cat.Lookup(name); ok {
			return t.Server
		}
		return "quiver"
	}
	add := func(tools []mcp.Tool, isLean bool) {
		for _, t := range tools {
			srv := owner(t.Name)
			if _, ok := w.servers[srv]; !ok {
				w.order = append(w.order, srv)
			}
			x := w.servers[srv]
			b, _ := json.Marshal(t)
			if isLean {
				x.leanTools++
				x.leanBytes += len(b)
			} else {
				x.allTools++
				x.allBytes += len(b)
			}
			w.servers[srv] = x
		}
	}
	add(full, false)
	add(lean, true)
	w.total = weight{leanTools: len(lean), leanBytes: size(lean), allTools: len(full), allBytes: size(full)}
	return w
}

func size(tools []mcp.Tool) int {
	b, _ := json.Marshal(mcp.ListToolsResult{Tools: tools})
	return len(b)
}

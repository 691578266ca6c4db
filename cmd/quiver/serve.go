package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/quiver-mcp/quiver/proxy"
)

func serveCmd() *command {
	return &command{
		summary: "run the proxy (stdio for desktop hosts, or streamable HTTP)",
		usage:   "serve [--config PATH] [--http 127.0.0.1:PORT] [--state-dir DIR] [--log-level LEVEL]",
		help: `
Runs quiver as an MCP server. By default it speaks stdio, which is what
Claude Desktop, Claude Code and most hosts launch. With --http it serves
streamable HTTP at http://ADDR/mcp with stateful sessions and DNS-rebinding
protection (a request with a non-localhost Host header over loopback is
refused).

quiver answers initialize and tools/list at once; the servers in servers.yaml
start in parallel in the background and their tools join as they come up.
Logs go to stderr, never to stdout.

Flags:
  --config PATH      servers.yaml to use (default: ./servers.yaml, else
                     $XDG_CONFIG_HOME/quiver/servers.yaml, else built in)
  --http ADDR        serve streamable HTTP on ADDR (e.g. 127.0.0.1:8765)
  --state-dir DIR    quiver's state (default: $XDG_STATE_HOME/quiver)
  --log-level LEVEL  debug, info, warn or error (default info)`,
		run: runServe,
	}
}

func runServe(ctx context.Context, e *env, args []string) error {
	var c common
	var addr string
	fs := newFlags("serve")
	c.register(fs)
	fs.StringVar(&addr, "http", "", "serve streamable HTTP on this address")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	log, err := c.logger(e)
	if err != nil {
		return err
	}
	cfg, err := c.load(e)
	if err != nil {
		return err
	}
	state, err := c.state(e)
	if err != nil {
		return err
	}
	p, err := proxy.New(cfg, proxy.Options{Logger: log, StateDir: state})
	if err != nil {
		return err
	}
	p.Start(ctx)
	defer p.Close()
	log.Info("quiver started", "config", cfg.Path, "servers", len(cfg.Servers), "reveal", cfg.Surface.Reveal, "state_dir", state)

	if addr == "" {
		err := p.ServeStdio(ctx, e.stdin, e.stdout)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", p.HTTPHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("serving streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp")
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

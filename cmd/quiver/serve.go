package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/quiver-mcp/quiver/proxy"
	"github.com/quiver-mcp/quiver/registry"
)

func serveCmd() *command {
	return &command{
		summary: "run the proxy (stdio for desktop hosts, or streamable HTTP)",
		usage:   "serve [--config PATH] [--toggles PATH] [--http 127.0.0.1:PORT] [--state-dir DIR] [--log-level LEVEL]",
		help: `
Runs quiver as an MCP server. By default it speaks stdio, which is what
Claude Desktop, Claude Code and most hosts launch. With --http it serves
streamable HTTP at http://ADDR/mcp with stateful sessions and DNS-rebinding
protection (a request with a non-localhost Host header over loopback is
refused).

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

Flags:
  --config PATH      servers.yaml to use (default: ./servers.yaml, else
                     $XDG_CONFIG_HOME/quiver/servers.yaml, else built in)
  --toggles PATH     the tool toggles file (default: tools.yaml beside
                     servers.yaml; see "quiver help tools")
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
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
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
	servers := c.serversPath(e)
	// A status left by an earlier run would be wrong about this one.
	writeReloadStatus(state, servers, registry.ReloadStatus{Servers: servers, Toggles: c.togglesPath(e), ServersHash: cfg.Hash}, log)
	w, err := registry.Watch(ctx, cfg, registry.WatchOptions{
		Servers: servers, Toggles: c.togglesPath(e), Logger: log, Apply: p.Reload,
		OnStatus: func(st registry.ReloadStatus) { writeReloadStatus(state, servers, st, log) },
	})
	if err != nil {
		log.Warn("config files are not watched; changes need a restart", "err", err)
	} else {
		defer w.Close()
	}

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

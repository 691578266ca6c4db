package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/quiver-mcp/quiver/registry"
)

// A running quiver serve writes the names of its tools and the state of
// its servers to <state>/catalog/<hash of the servers.yaml path>.json at
// every catalog change, so that "quiver tools enable/disable", in another
// process, checks names against what that quiver really offers without
// starting every server again.
type catalogSnapshot struct {
	PID     int             `json:"pid"`
	Tools   []snapshotTool  `json:"tools"`
	Servers []snapshotState `json:"servers"`
}

type snapshotTool struct {
	Name   string `json:"name"`
	Server string `json:"server"`
}

type snapshotState struct {
	Name  string         `json:"name"`
	State registry.State `json:"state"`
}

func writeCatalogSnapshot(stateDir, servers string, cat *registry.Catalog, log *slog.Logger) {
	snap := catalogSnapshot{PID: os.Getpid(), Tools: []snapshotTool{}}
	for _, t := range cat.Tools {
		snap.Tools = append(snap.Tools, snapshotTool{Name: t.Exposed, Server: t.Server})
	}
	for _, s := range cat.Servers {
		snap.Servers = append(snap.Servers, snapshotState{Name: s.Name, State: s.State})
	}
	b, _ := json.Marshal(snap)
	p := stateFileFor(stateDir, "catalog", servers)
	err := os.MkdirAll(filepath.Dir(p), 0o700)
	if err == nil {
		err = writeFileAtomic(p, append(b, '\n'), 0o600)
	}
	if err != nil {
		log.Debug("catalog snapshot not written", "err", err)
	}
}

// runningCatalog is the catalog a live quiver serve on this servers.yaml
// last wrote down; nil when none runs.
func runningCatalog(stateDir, servers string) *registry.Catalog {
	b, err := os.ReadFile(stateFileFor(stateDir, "catalog", servers))
	if err != nil {
		return nil
	}
	var snap catalogSnapshot
	if json.Unmarshal(b, &snap) != nil || snap.PID <= 0 || !processAlive(snap.PID) {
		return nil
	}
	tools := make([]registry.Tool, 0, len(snap.Tools))
	for _, t := range snap.Tools {
		tools = append(tools, registry.Tool{Exposed: t.Name, Server: t.Server})
	}
	cat := registry.NewCatalog(0, tools...)
	for _, s := range snap.Servers {
		cat.Servers = append(cat.Servers, registry.ServerStatus{Name: s.Name, State: s.State})
	}
	return cat
}

// checkToolNames checks names (exact names or globs) given on the command
// line against the catalog: a running quiver's on the same servers.yaml,
// else the configured servers', started for the purpose. A name no
// server offers is a usage error, with a "did you mean" when a tool's
// name is close; a name whose server is not up cannot be checked, and
// stderr says so.
func (c *common) checkToolNames(ctx context.Context, e *env, names []string) error {
	cfg, err := c.load(e)
	if err != nil {
		if errors.Is(err, registry.ErrInvalidConfig) {
			fmt.Fprintf(e.stderr, "warning: the names were not checked: the configuration does not load\n")
			return nil
		}
		return err
	}
	var cat *registry.Catalog
	if state, err := c.state(e); err == nil {
		cat = runningCatalog(state, c.serversPath(e))
	}
	if cat == nil {
		p, err := c.start(ctx, e)
		if err != nil {
			return err
		}
		cat = p.Catalog()
		p.Close()
	}
	var problems []string
	waiting := map[string][]string{}
	for _, n := range names {
		chk := registry.CheckToolName(cfg, cat, n)
		switch {
		case chk.Problem != "":
			problems = append(problems, fmt.Sprintf("%s: %s", n, chk.Problem))
		case chk.Waiting != "":
			waiting[chk.Waiting] = append(waiting[chk.Waiting], n)
		}
	}
	for srv, ns := range waiting {
		fmt.Fprintf(e.stderr, "warning: server %q is not up, so %s could not be checked against its tools\n", srv, strings.Join(ns, ", "))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s\n(quiver tools list shows every tool; --force writes the names anyway)", errUsage, strings.Join(problems, "\n"))
	}
	return nil
}

// completeToolNames offers, after "tools enable" or "tools disable", the
// names of the running quiver's tools (none when none runs: completion
// never starts servers).
func completeToolNames(e *env, args []string, toComplete string) []string {
	if len(args) == 0 || (args[0] != "enable" && args[0] != "disable") {
		return nil
	}
	var c common
	fs := newFlags("complete")
	fs.ParseErrorsAllowlist.UnknownFlags = true
	c.register(fs)
	_ = fs.Parse(args[1:])
	state := c.stateDir
	if state == "" {
		state = defaultStateDir(e)
	}
	cat := runningCatalog(state, c.serversPath(e))
	if cat == nil {
		return nil
	}
	var out []string
	for _, t := range cat.Tools {
		if strings.HasPrefix(t.Exposed, toComplete) && !slices.Contains(fs.Args(), t.Exposed) {
			out = append(out, t.Exposed)
		}
	}
	return out
}

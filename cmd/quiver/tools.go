package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/quiver-mcp/quiver/registry"
)

func toolsCmd() *command {
	return &command{
		summary: "list tools, switch them on and off, review changed definitions",
		usage:   "tools list [--server S] [--enabled|--disabled] [--json] | tools enable NAME|GLOB... | tools disable NAME|GLOB... | tools changes | tools accept NAME|--server S|--all | tools reject NAME | tools history NAME",
		help: `
quiver tools list [--server S] [--enabled|--disabled] [--json] [--wait D]
  Starts the configured servers and lists every tool: its exposed name, its
  server, whether it is enabled, its action class (read, write,
  destructive, network) as its annotations describe it, and which line of
  the toggles file (or which tools_default: off) decided when one did.

quiver tools enable [--force] NAME|GLOB...
quiver tools disable [--force] NAME|GLOB...
  Switch tools on or off in the toggles file (tools.yaml beside servers.yaml
  unless --toggles). NAME is an exposed name (github__create_issue), GLOB a
  pattern (slack__*, github__get_?). Each is checked against the tools of
  the running quiver (or, when none runs, of the configured servers,
  started for it): a name no server offers is refused with the closest
  tool's name; --force writes it anyway. A name whose server is not up is
  written with a warning. The file is edited in place, comments
  kept, and replaced atomically; a running quiver picks the change up at
  once: a switched-off tool is no longer listed, found, bound or callable
  (deny.withheld), in every session.

The toggles file:

  enabled:            # switch these on
    - github__*
  disabled:           # switch these off
    - github__delete_*

A tool starts on, or off when its server says tools_default: off in
servers.yaml; every entry that matches it then switches it, and the later
line in the file wins. A missing file switches nothing.

Flags:
  --config PATH    servers.yaml (its folder holds tools.yaml)
  --toggles PATH   the toggles file
  --server S       list only server S's tools
  --enabled        list only enabled tools; --disabled only disabled ones
  --json           one JSON object per tool
  --force          enable/disable: write names no server offers
  --wait D         how long to wait for servers to start (default 30s)
` + pinsHelp,
		subcommands: []string{"list", "enable", "disable", "changes", "accept", "reject", "history"},
		complete:    completeToolNames,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("%w: the tools command takes a subcommand: list, enable, disable, changes, accept, reject or history", errUsage)
			}
			switch args[0] {
			case "list":
				return toolsList(ctx, e, args[1:])
			case "enable", "disable":
				return toolsSwitch(ctx, e, args[0] == "enable", args[1:])
			case "changes":
				return toolsChanges(ctx, e, args[1:])
			case "accept":
				return toolsAccept(ctx, e, args[1:])
			case "reject":
				return toolsReject(ctx, e, args[1:])
			case "history":
				return toolsHistory(ctx, e, args[1:])
			}
			return fmt.Errorf("%w: no tools subcommand %q; use list, enable, disable, changes, accept, reject or history", errUsage, args[0])
		},
	}
}

func toolsList(ctx context.Context, e *env, args []string) error {
	var c common
	var asJSON, onlyOn, onlyOff bool
	var srv string
	fs := newFlags("tools list")
	c.register(fs)
	c.registerWait(fs)
	fs.BoolVar(&asJSON, "json", false, "JSON lines")
	fs.BoolVar(&onlyOn, "enabled", false, "only enabled tools")
	fs.BoolVar(&onlyOff, "disabled", false, "only disabled tools")
	fs.StringVar(&srv, "server", "", "only this server's tools")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if onlyOn && onlyOff {
		return fmt.Errorf("%w: --enabled and --disabled exclude each other", errUsage)
	}
	p, err := c.start(ctx, e)
	if err != nil {
		return err
	}
	defer p.Close()
	if srv != "" {
		if _, ok := p.Config().Server(srv); !ok {
			return fmt.Errorf("%w: no server %q in %s", errUsage, srv, p.Config().Path)
		}
	}
	cat := p.Catalog()
	tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(tw, "TOOL\tSERVER\tENABLED\tCLASS\tBY")
	}
	for _, t := range cat.Tools {
		if (srv != "" && t.Server != srv) || (onlyOn && t.Off) || (onlyOff && !t.Off) {
			continue
		}
		if asJSON {
			b, _ := json.Marshal(map[string]any{"name": t.Exposed, "server": t.Server, "tool": t.Name,
				"enabled": !t.Off, "class": p.Class(t), "by": t.Toggle, "held": t.Held != nil})
			fmt.Fprintln(e.stdout, string(b))
			continue
		}
		on := "yes"
		if t.Off {
			on = "no"
		}
		if t.Held != nil {
			on += " (held: definition changed)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Exposed, t.Server, on, p.Class(t), t.Toggle)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// A server that is not up lists no tools: say so, and why, on stderr
	// so that the list itself (and --json) stays clean.
	for _, s := range cat.Servers {
		if s.State != registry.StateUp && (srv == "" || s.Name == srv) {
			fmt.Fprintf(e.stderr, "server %s is %s: %s\n", s.Name, s.State, cmp.Or(s.Why(), "no tools yet"))
		}
	}
	return nil
}

func toolsSwitch(ctx context.Context, e *env, on bool, args []string) error {
	verb := map[bool]string{true: "enable", false: "disable"}[on]
	var c common
	var force bool
	fs := newFlags("tools " + verb)
	c.register(fs)
	c.registerWait(fs)
	fs.BoolVar(&force, "force", false, "write names no server offers")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: say which tools, e.g. quiver tools %s slack__*", errUsage, verb)
	}
	if !force {
		if err := c.checkToolNames(ctx, e, fs.Args()); err != nil {
			return err
		}
	}
	path := c.togglesPath(e)
	moved, err := registry.SwitchTools(path, on, fs.Args())
	var bad *registry.PatternError
	switch {
	case errors.As(err, &bad):
		return fmt.Errorf("%w: %v", errUsage, err)
	case err != nil:
		return err
	}
	fmt.Fprintf(e.stdout, "%sd %v in %s.\n", verb, fs.Args(), path)
	// Say what a running quiver will do with it: nothing, while
	// servers.yaml does not load.
	if _, err := c.load(e); errors.Is(err, registry.ErrInvalidConfig) {
		fmt.Fprintf(e.stderr, "warning: a running quiver keeps its last good configuration, and applies this only once the configuration loads again:\n%v\n", err)
	} else if state, err := c.state(e); err == nil {
		if st, ok := runningStatus(state, c.serversPath(e)); ok {
			fmt.Fprintf(e.stdout, "The running quiver (pid %d) applies it within a second.\n", st.PID)
		}
	}
	if moved {
		fmt.Fprintf(e.stdout, "note: the %s: list was moved to the end of the file so that it wins (the later line wins); check the order of your other entries.\n", verb+"d")
	}
	return nil
}

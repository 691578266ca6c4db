package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/proxy"
	"github.com/quiver-mcp/quiver/registry"
)

// pinsHelp is the part of `quiver help tools` about pinned definitions.
const pinsHelp = `
quiver tools changes [--server S] [--json]
  Lists the tools held because their server changed their definition
  since it was pinned, with what changed: the old and new description,
  input and output fields added, removed or changed, annotation changes.
  A line marked ! is a change that matters most: a new argument the fence
  reads as a path, a change of the tool's class (readOnlyHint dropped,
  destructiveHint added), text that addresses the model ("ignore previous
  instructions", "you must", hidden Unicode). It reads the ledger: what
  every quiver on this state dir has seen.

quiver tools accept NAME [--digest D] | NAME... | --server S | --all
  Pins the held definitions: the tools are offered again, in every running
  quiver within a second. The ledger keeps every accepted definition.
  --digest D (the digest tools changes printed, or its first 12 or more
  characters) pins only that definition: if the server changed it again
  since you looked, nothing is pinned and you are told to look again.

quiver tools reject NAME...
  Keeps the held definitions held and switches the tools off in the
  toggles file; tools changes shows them as rejected.

quiver tools history NAME
  Every definition of the tool that was ever pinned, oldest first, each
  as the diff from the one before.

A tool's definition (name, title, description, input and output schema,
annotations) is pinned the first time quiver sees it: adding a server is
consent to its tools as they are then. policy.pinning (or a server's
pinning:) is strict (the default: a change is held), warn (a change is
accepted and logged) or off.`

// heldEntry is a held definition with its names and its diff.
type heldEntry struct {
	gate.HeldTool
	Name string // exposed
	Diff registry.Diff
}

// heldTools reads the held definitions and diffs each against its pin.
func heldTools(ctx context.Context, l *gate.Ledger, cfg *registry.Config, server string) ([]heldEntry, error) {
	held, err := l.HeldTools(ctx, server)
	if err != nil {
		return nil, err
	}
	def := func(digest string) (registry.Definition, error) {
		b, err := l.ToolDefinition(ctx, digest)
		if err != nil {
			return registry.Definition{}, err
		}
		return registry.ParseDefinition(b)
	}
	var out []heldEntry
	for _, h := range held {
		if _, ok := cfg.Server(h.Server); !ok {
			continue // a server no longer configured offers nothing to accept
		}
		var was registry.Definition // a new tool: nothing pinned, every part of it shown
		if h.Pinned != "" {
			if was, err = def(h.Pinned); err != nil {
				return nil, err
			}
		}
		now, err := def(h.Digest)
		if err != nil {
			return nil, err
		}
		out = append(out, heldEntry{HeldTool: h, Name: exposedName(cfg, h.Server, h.Tool),
			Diff: registry.DiffDefinitions(was, now, proxy.PinJudge())})
	}
	return out, nil
}

// exposedName is the name the model sees for server's tool, as the
// configuration names it (a server no longer configured: its key).
func exposedName(cfg *registry.Config, server, tool string) string {
	prefix := server
	if srv, ok := cfg.Server(server); ok {
		prefix = srv.Prefix
	}
	return registry.ExposedName(prefix, tool, cfg.Surface.MaxNameLen)
}

// openPins opens the ledger and the configuration (for exposed names and redaction).
func openPins(ctx context.Context, e *env, c *common) (*gate.Ledger, *registry.Config, error) {
	cfg, err := c.load(e)
	if err != nil {
		return nil, nil, err
	}
	l, err := openLedger(ctx, e, c)
	if err != nil {
		return nil, nil, err
	}
	return l, cfg, nil
}

// openHeld opens the ledger and reads the held definitions of server
// (every server's if ""), named as the configuration names them. The
// caller closes the ledger.
func openHeld(ctx context.Context, e *env, c *common, server string) (*gate.Ledger, []heldEntry, error) {
	l, cfg, err := openPins(ctx, e, c)
	if err != nil {
		return nil, nil, err
	}
	held, err := heldTools(ctx, l, cfg, server)
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	return l, held, nil
}

func toolsChanges(ctx context.Context, e *env, args []string) error {
	var c common
	var asJSON bool
	var srv string
	fs := newFlags("tools changes")
	c.register(fs)
	fs.BoolVar(&asJSON, "json", false, "one JSON object per held tool")
	fs.StringVar(&srv, "server", "", "only this server's tools")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	l, held, err := openHeld(ctx, e, &c, srv)
	if err != nil {
		return err
	}
	defer l.Close()
	redact := redactor(e, &c)
	if asJSON {
		for _, h := range held {
			b, _ := json.Marshal(map[string]any{"name": h.Name, "server": h.Server, "tool": h.Tool, "state": h.State,
				"seen": h.Seen.UTC().Format(time.RFC3339), "pinned": h.Pinned, "digest": h.Digest,
				"changes": h.Diff, "flags": len(h.Diff.Flags())})
			fmt.Fprintln(e.stdout, redact(string(b)))
		}
		return nil
	}
	if len(held) == 0 {
		fmt.Fprintln(e.stdout, "No tool is held: every tool offers the definition pinned for it.")
		return nil
	}
	for _, h := range held {
		state := "held"
		if h.State == gate.HoldRejected {
			state = "rejected (held, switched off)"
		}
		fmt.Fprintf(e.stdout, "%s (server %s, tool %s): %s since %s; %d flagged; digest %s\n", h.Name, h.Server, printable(h.Tool),
			state, h.Seen.Local().Format("2006-01-02 15:04:05"), len(h.Diff.Flags()), shortDigest(h.Digest))
		fmt.Fprint(e.stdout, redact(h.Diff.Text("  ")))
		fmt.Fprintln(e.stdout)
	}
	fmt.Fprintln(e.stdout, "Accept exactly what is shown: quiver tools accept NAME --digest D (or --server S, --all). Keep it held and switch the tool off: quiver tools reject NAME.")
	return nil
}

// shortDigest is as much of a digest as a person reads and types:
// 12 hex digits, enough that a server cannot make another definition
// with the same ones.
func shortDigest(d string) string {
	if hex := strings.TrimPrefix(d, "sha256:"); len(hex) > 12 {
		return hex[:12]
	}
	return d
}

// digestMatches reports whether what a person typed (a whole digest, or
// at least its first 12 hex digits) names held.
func digestMatches(typed, held string) bool {
	typed = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(typed)), "sha256:")
	return len(typed) >= 12 && strings.HasPrefix(strings.TrimPrefix(held, "sha256:"), typed)
}

// pickHeld finds the held entries the names (exposed names) say.
func pickHeld(held []heldEntry, names []string) ([]heldEntry, error) {
	var out []heldEntry
	for _, n := range names {
		i := slices.IndexFunc(held, func(h heldEntry) bool { return h.Name == n })
		if i < 0 {
			var all []string
			for _, h := range held {
				all = append(all, h.Name)
			}
			if len(all) == 0 {
				return nil, fmt.Errorf("%w: %s is not held; no tool is (quiver tools changes)", errUsage, n)
			}
			return nil, fmt.Errorf("%w: %s is not held; held are: %s", errUsage, n, strings.Join(all, ", "))
		}
		out = append(out, held[i])
	}
	return out, nil
}

func toolsAccept(ctx context.Context, e *env, args []string) error {
	var c common
	var all bool
	var srv, digest string
	fs := newFlags("tools accept")
	c.register(fs)
	fs.BoolVar(&all, "all", false, "accept every held definition")
	fs.StringVar(&srv, "server", "", "accept every held definition of this server")
	fs.StringVar(&digest, "digest", "", "accept NAME only if it is held with this definition (as tools changes printed it)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if n := btoi(all) + btoi(srv != "") + btoi(fs.NArg() > 0); n != 1 {
		return fmt.Errorf("%w: say which held tools to accept: NAME..., --server S or --all (one of them)", errUsage)
	}
	if digest != "" && fs.NArg() != 1 {
		return fmt.Errorf("%w: --digest names one definition: give one NAME with it, e.g. quiver tools accept notes__list_notes --digest 3f2a9c01b7e4", errUsage)
	}
	l, held, err := openHeld(ctx, e, &c, srv)
	if err != nil {
		return err
	}
	defer l.Close()
	if fs.NArg() > 0 {
		if held, err = pickHeld(held, fs.Args()); err != nil {
			return err
		}
	} else if len(held) == 0 {
		fmt.Fprintln(e.stdout, "No tool is held; nothing to accept.")
		return nil
	}
	if digest != "" && !digestMatches(digest, held[0].Digest) {
		return fmt.Errorf("%w: %s is held with definition %s now, not %s: its server changed it since it was shown; look again (quiver tools changes) and accept what you see",
			errUsage, held[0].Name, shortDigest(held[0].Digest), digest)
	}
	for _, h := range held {
		// h.Digest is what this command read, and so what it prints:
		// AcceptHeld pins exactly it, or nothing if it changed meanwhile.
		if _, err := l.AcceptHeld(ctx, h.Server, h.Tool, h.Digest); err != nil {
			if errors.Is(err, gate.ErrNotFound) {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			return err
		}
		fmt.Fprintf(e.stdout, "accepted %s: its definition %s is pinned (%s).\n", h.Name, shortDigest(h.Digest), h.Diff.Summary())
		if h.State == gate.HoldRejected {
			fmt.Fprintf(e.stdout, "note: %s was rejected before and is switched off; quiver tools enable %s switches it on.\n", h.Name, h.Name)
		}
	}
	fmt.Fprintln(e.stdout, "A running quiver offers the accepted tools within a second.")
	return nil
}

func toolsReject(ctx context.Context, e *env, args []string) error {
	var c common
	fs := newFlags("tools reject")
	c.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: say which held tools to reject, e.g. quiver tools reject notes__list_notes", errUsage)
	}
	l, held, err := openHeld(ctx, e, &c, "")
	if err != nil {
		return err
	}
	defer l.Close()
	picked, err := pickHeld(held, fs.Args())
	if err != nil {
		return err
	}
	var names []string
	for _, h := range picked {
		if err := l.RejectTool(ctx, h.Server, h.Tool); err != nil {
			return err
		}
		names = append(names, h.Name)
		fmt.Fprintf(e.stdout, "rejected %s: it stays held.\n", h.Name)
	}
	// Switched off too, so that it stays off should its server offer the
	// old definition again: the person said no to what this server does.
	// The names are the ledger's, not typed: --force spares the check
	// (and the servers' start it may take).
	return toolsSwitch(ctx, e, false, append(append(c.flagArgs(), "--force"), names...))
}

// flagArgs are c's file flags as given, to hand on to another command.
func (c *common) flagArgs() []string {
	var out []string
	for _, f := range [][2]string{{"--config", c.config}, {"--toggles", c.toggles}, {"--state-dir", c.stateDir}} {
		if f[1] != "" {
			out = append(out, f[0], f[1])
		}
	}
	return out
}

func toolsHistory(ctx context.Context, e *env, args []string) error {
	var c common
	fs := newFlags("tools history")
	c.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: name one tool, e.g. quiver tools history notes__list_notes", errUsage)
	}
	l, cfg, err := openPins(ctx, e, &c)
	if err != nil {
		return err
	}
	defer l.Close()
	name := fs.Arg(0)
	srv, ok := cfg.ServerFor(name)
	if !ok {
		return fmt.Errorf("%w: %s names no configured server's tool", errUsage, name)
	}
	tool := strings.TrimPrefix(name, srv.Prefix+"__")
	if srv.Prefix == "" {
		tool = name
	}
	hist, err := l.PinHistory(ctx, srv.Name, tool)
	if err != nil {
		return err
	}
	if len(hist) == 0 {
		return fmt.Errorf("%w: nothing is pinned for %s yet (quiver pins a tool when it first sees it)", errUsage, name)
	}
	redact := redactor(e, &c)
	var prev registry.Definition
	for i, p := range hist {
		b, err := l.ToolDefinition(ctx, p.Digest)
		if err != nil {
			return err
		}
		d, err := registry.ParseDefinition(b)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%d. %s %s (%s)\n", i+1, p.Time.Local().Format("2006-01-02 15:04:05"), p.How, p.Digest)
		if i == 0 {
			fmt.Fprintln(e.stdout, "  "+redact(string(b)))
		} else {
			fmt.Fprint(e.stdout, redact(registry.DiffDefinitions(prev, d, proxy.PinJudge()).Text("  ")))
		}
		prev = d
	}
	return nil
}

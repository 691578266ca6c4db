package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/registry"
)

// slashPrompts are the slash commands of servers.yaml as MCP prompts
// (Claude Code shows them as /mcp__quiver__NAME). They are not the only
// prompts quiver offers: downstream prompts, prefixed, join them.
func (s *Server) slashPrompts() []server.ServerPrompt {
	var out []server.ServerPrompt
	cfg := s.cfg()
	for i := range cfg.Slash {
		sl := &cfg.Slash[i]
		opts := []mcp.PromptOption{mcp.WithPromptDescription(sl.Description)}
		for _, a := range sl.Arguments {
			aopts := []mcp.ArgumentOption{mcp.ArgumentDescription(a.Description)}
			if a.Required {
				aopts = append(aopts, mcp.RequiredArgument())
			}
			opts = append(opts, mcp.WithArgument(a.Name, aopts...))
		}
		out = append(out, server.ServerPrompt{Prompt: mcp.NewPrompt(sl.Name, opts...), Handler: s.runSlash(sl)})
	}
	return out
}

// syncSlashPrompts registers the slash commands of the config in force and
// drops those a reload removed. Downstream prompts are not touched: they
// are registered by their own path.
func (s *Server) syncSlashPrompts() {
	prompts := s.slashPrompts()
	names := make([]string, 0, len(prompts))
	for _, p := range prompts {
		names = append(names, p.Prompt.Name)
	}
	s.slashMu.Lock()
	defer s.slashMu.Unlock()
	var gone []string
	for _, n := range s.slashNames {
		if !slices.Contains(names, n) {
			gone = append(gone, n)
		}
	}
	if len(gone) > 0 {
		s.mcp.DeletePrompts(gone...)
	}
	if len(prompts) > 0 {
		s.mcp.AddPrompts(prompts...)
	}
	s.slashNames = names
}

// runSlash serves prompts/get for one slash command. The turn clock has
// already started a new turn (a prompts/get is the user acting); this puts
// the command in effect for that turn: its tools forced, its activity and
// pins applied by the gate, its allow list narrowing the catalog. The
// answer tells the model what it now has, so that a host that ignores
// list_changed can still work through call_tool.
func (s *Server) runSlash(sl *registry.Slash) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		for _, a := range sl.Arguments {
			if a.Required && strings.TrimSpace(req.Params.Arguments[a.Name]) == "" {
				return nil, fmt.Errorf("/%s needs the argument %q (%s)", sl.Name, a.Name, a.Description)
			}
		}
		for name := range req.Params.Arguments {
			if !slices.ContainsFunc(sl.Arguments, func(a registry.SlashArgument) bool { return a.Name == name }) {
				return nil, fmt.Errorf("/%s takes no argument %q", sl.Name, name)
			}
		}
		ss := s.session(ctx)
		ss.startSlash(sl)
		s.notify(ss)
		v := s.viewOf(ss)
		defer v.release()
		return mcp.NewGetPromptResult(sl.Description, []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(v.slashText(sl, req.Params.Arguments))),
		}), nil
	}
}

// slashText is the prompt's message: the command, the user's arguments,
// the tools it forced (one line each), the activity's limits and the pins.
func (v reqView) slashText(sl *registry.Slash, args map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "/%s: %s\n", sl.Name, sl.Description)
	if len(args) > 0 {
		b.WriteString("Arguments:")
		for _, k := range slices.Sorted(maps.Keys(args)) {
			fmt.Fprintf(&b, " %s=%q", k, args[k])
		}
		b.WriteByte('\n')
	}
	if len(sl.Tools) > 0 {
		how := "call them by name"
		if v.cfg.Surface.Reveal != registry.RevealList {
			how += `, or with call_tool {"name": ..., "arguments": {...}} if they are not in your tool list`
		}
		fmt.Fprintf(&b, "For this turn you have these tools (%s):\n", how)
		for _, n := range sl.Tools {
			t, ok := v.cat.Lookup(n)
			switch {
			case !ok:
				fmt.Fprintf(&b, "- %s — not available now (its server is not up); tell the user if you need it\n", n)
			case v.withheld(n):
				fmt.Fprintf(&b, "- %s — switched off here; do not call it\n", n)
			default:
				fmt.Fprintf(&b, "- %s — %s\n", n, oneLine(t.Description))
			}
		}
	}
	switch {
	case sl.Activity == "":
	case sl.ReadOnly:
		fmt.Fprintf(&b, "Activity: %s, read-only: only tools that read run this turn; anything that writes, deletes, runs commands or reaches the network is refused.\n", sl.Activity)
	default:
		fmt.Fprintf(&b, "Activity: %s: tools run as usual, each call still checked by quiver's policy.\n", sl.Activity)
	}
	if len(sl.Allow) > 0 {
		fmt.Fprintf(&b, "Only tools matching %s (and quiver's own) are offered this turn.\n", strings.Join(sl.Allow, ", "))
	}
	if len(sl.Pins) > 0 {
		b.WriteString("Pinned arguments (quiver sets these whatever you pass):")
		for _, t := range slices.Sorted(maps.Keys(sl.Pins)) {
			pins, _ := json.Marshal(sl.Pins[t]) // map keys come out sorted
			fmt.Fprintf(&b, " %s %s;", t, pins)
		}
		b.WriteByte('\n')
	}
	b.WriteString("This lasts for this turn only.")
	return b.String()
}

// oneLine is a description's first sentence, on one line.
func oneLine(desc string) string {
	desc = strings.Join(strings.Fields(desc), " ")
	if i := strings.Index(desc, ". "); i >= 10 {
		desc = desc[:i+1]
	}
	if len(desc) > 160 {
		cut := 157
		for cut > 0 && !utf8.RuneStart(desc[cut]) {
			cut--
		}
		desc = strings.TrimRight(desc[:cut], " ") + "…"
	}
	return desc
}

package registry

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// slash validates the slash: section and the top-level slash_gated list.
func (p *parser) slash(in map[string]*fileSlash, gatedNames []string) ([]Slash, []string) {
	var out []Slash
	var gated []string
	for _, name := range mappingKeys(p.root, "slash") {
		line := lineOf(p.root, "slash", name)
		key := func(k string) int {
			if l := lineOf(p.root, "slash", name, k); l > 0 {
				return l
			}
			return line
		}
		fs := in[name]
		if fs == nil {
			p.fail(line, "slash.%s: the entry is empty; give it at least a description", name)
			continue
		}
		switch {
		case !nameRE.MatchString(name):
			p.fail(line, "slash.%s: a slash command's name may only use letters, digits, '_' and '-'", name)
		case strings.Contains(name, "__"):
			// "__" separates a server's prefix: downstream prompts use it.
			p.fail(line, "slash.%s: a slash command's name may not contain \"__\" (it marks a server's prompts)", name)
		}
		sl := Slash{Name: name, Description: fs.Description, Tools: fs.Tools, Activity: fs.Activity,
			Allow: fs.Allow, Pins: fs.Pins, Gated: fs.Gated, Line: line}
		if fs.Description == "" {
			p.fail(line, "slash.%s: give it a description (hosts show it in their slash menu)", name)
		}
		seen := map[string]bool{}
		for i, a := range fs.Arguments {
			l := seqLine(p.root, i, "slash", name, "arguments")
			switch {
			case a.Name == "":
				p.fail(l, "slash.%s.arguments[%d]: give the argument a name", name, i)
			case !nameRE.MatchString(a.Name):
				p.fail(l, "slash.%s.arguments[%d]: the name %q may only use letters, digits, '_' and '-'", name, i, a.Name)
			case seen[a.Name]:
				p.fail(l, "slash.%s.arguments: %q is listed twice", name, a.Name)
			}
			seen[a.Name] = true
			sl.Arguments = append(sl.Arguments, SlashArgument(a))
		}
		for i, t := range fs.Tools {
			l := seqLine(p.root, i, "slash", name, "tools")
			switch {
			case slices.Contains(p.reserved, t):
				p.fail(l, "slash.%s.tools: %s is always on; list downstream tools (server__tool) here", name, t)
			case !nameRE.MatchString(t):
				p.fail(l, "slash.%s.tools: %q is not a tool name; use the exposed name, like server__tool", name, t)
			case slices.Index(fs.Tools, t) != i:
				p.fail(l, "slash.%s.tools: %s is listed twice", name, t)
			}
		}
		switch fs.Activity {
		case ActivityReview, ActivityPlan, ActivityResearch:
			sl.ReadOnly = true
		case "", ActivityRun:
		default:
			if fs.ReadOnly == nil {
				p.fail(key("activity"), "slash.%s.activity: quiver does not know %q; use review, plan, research (read-only) or run, or say read_only: true or false", name, fs.Activity)
			}
		}
		if fs.ReadOnly != nil {
			if fs.Activity == "" {
				p.fail(key("read_only"), "slash.%s.read_only: name the activity it describes (activity: ...)", name)
			}
			sl.ReadOnly = *fs.ReadOnly
		}
		for i, g := range fs.Allow {
			if _, err := path.Match(g, ""); err != nil {
				p.fail(seqLine(p.root, i, "slash", name, "allow"), "slash.%s.allow: %q is not a valid pattern: %v", name, g, err)
			}
		}
		if len(fs.Allow) > 0 {
			// An activity narrows the catalog; nothing widens it: a tool the
			// command forces must be one its own allowlist lets through.
			for i, t := range fs.Tools {
				if !MatchAny(fs.Allow, t) {
					p.fail(seqLine(p.root, i, "slash", name, "tools"), "slash.%s.tools: %s is outside the command's allow list, so it could never be offered; add it to allow or remove it", name, t)
				}
			}
		}
		for t, args := range fs.Pins {
			if len(args) == 0 {
				p.fail(key("pins"), "slash.%s.pins.%s: pin at least one argument, like {mode: report_only}", name, t)
			}
		}
		if fs.Gated {
			if len(fs.Tools) == 0 {
				p.fail(key("gated"), "slash.%s.gated: the command forces no tools, so there is nothing to gate; list them under tools", name)
			}
			for _, t := range fs.Tools {
				if !slices.Contains(gated, t) {
					gated = append(gated, t)
				}
			}
		}
		out = append(out, sl)
	}
	for i, t := range gatedNames {
		l := seqLine(p.root, i, "slash_gated")
		forced := slices.ContainsFunc(out, func(sl Slash) bool { return slices.Contains(sl.Tools, t) })
		switch {
		case slices.Contains(p.reserved, t):
			p.fail(l, "slash_gated: %s is one of quiver's own tools and cannot be gated", t)
		case !forced:
			p.fail(l, "slash_gated: no slash command forces %s, so it could never run; add it to a slash entry's tools", t)
		case !slices.Contains(gated, t):
			gated = append(gated, t)
		}
	}
	return out, gated
}

// MatchAny reports whether name matches one of the globs (path.Match).
func MatchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// shortened matches an exposed name ExposedName cut to fit: it ends in
// '_' and eight hex digits of a hash.
var shortened = regexp.MustCompile(`_[0-9a-f]{8}$`)

// toolNames checks the tool names the configuration gives outside servers:
// each must be one a configured server could offer (its prefix, then "__"),
// and a slash-gated tool cannot be always on. A name whose server is there
// but lacks the tool can only be told once the server is up: see
// Catalog.Problems.
func (p *parser) toolNames(cfg *Config, gated []string) {
	check := func(where string, line int, name string) {
		if slices.Contains(p.reserved, name) || shortened.MatchString(name) {
			return // reserved names are always there; a shortened name may have lost its prefix
		}
		if _, ok := cfg.ServerFor(name); !ok {
			p.fail(line, "%s: %q names no configured server; use the exposed name, server__tool, with the server's key or prefix", where, name)
		}
	}
	for i, name := range cfg.Surface.AlwaysOn {
		line := seqLine(p.root, i, "surface", "always_on")
		check("surface.always_on", line, name)
		if sl, gated := cfg.SlashFor(name); gated {
			p.fail(line, "surface.always_on: %s is slash-gated (it runs only in a /%s turn); it cannot be always on too", name, sl)
		}
	}
	for _, sl := range cfg.Slash {
		for i, name := range sl.Tools {
			check("slash."+sl.Name+".tools", seqLine(p.root, i, "slash", sl.Name, "tools"), name)
		}
	}
	for i, name := range gated {
		check("slash_gated", seqLine(p.root, i, "slash_gated"), name)
	}
}

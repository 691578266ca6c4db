package registry

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/quiver-mcp/quiver/internal/textdist"
)

// A NameCheck is what the catalog says about a tool name (or glob) that a
// person wrote: in surface.always_on, a slash command, the toggles file or
// "quiver tools enable/disable".
type NameCheck struct {
	// Problem says why no server offers the name, as the end of "NAME
	// is named, but ...", with a "did you mean" when a tool's name is
	// close; "" when a server offers it or it is not known yet.
	Problem string
	// Waiting names the server the name belongs to when that server is
	// not up, so that its tools are not known yet.
	Waiting string
}

// CheckToolName checks name, an exposed tool name or a glob (path.Match
// syntax), against cat. A typo would otherwise switch, force or pin
// nothing, without a word: the tool the person meant stays as it was.
func CheckToolName(cfg *Config, cat *Catalog, name string) NameCheck {
	if slices.Contains(cfg.opts.Reserved, name) {
		return NameCheck{}
	}
	if _, ok := cat.Lookup(name); ok {
		return NameCheck{}
	}
	for _, t := range cat.Tools {
		if ok, _ := path.Match(name, t.Exposed); ok {
			return NameCheck{}
		}
	}
	if strings.ContainsAny(name, `*?[\`) {
		// A glob may reach any server's tools; it matches none only once
		// every server is up.
		for _, s := range cfg.Servers {
			if st, _ := cat.Status(s.Name); st.State != StateUp {
				return NameCheck{Waiting: s.Name}
			}
		}
		if _, err := path.Match(name, ""); err != nil {
			return NameCheck{Problem: fmt.Sprintf("it is not a valid pattern: %v", err)}
		}
		return NameCheck{Problem: "it matches no tool of any server"}
	}
	srv, ok := cfg.ServerFor(name)
	if !ok {
		return NameCheck{Problem: "no server offers such a tool (no server's prefix begins the name)" + didYouMean(name, cat, "")}
	}
	if st, _ := cat.Status(srv.Name); st.State != StateUp {
		return NameCheck{Waiting: srv.Name}
	}
	return NameCheck{Problem: fmt.Sprintf("server %q offers no such tool", srv.Name) + didYouMean(name, cat, srv.Name)}
}

// didYouMean is "; did you mean NAME?" for the tool name in cat closest to
// name (of server srv, unless srv is ""), when one is close enough to be
// a typo, else "".
func didYouMean(name string, cat *Catalog, srv string) string {
	// A tool's own name, as its server calls it, without the prefix quiver
	// gives it ("write_file" for files__write_file): every server's tool
	// of that name.
	var own []string
	for _, t := range cat.Tools {
		if (srv == "" || t.Server == srv) && (t.Name == name || strings.HasSuffix(t.Exposed, "__"+name)) {
			own = append(own, t.Exposed)
		}
	}
	if len(own) > 0 {
		slices.Sort(own)
		return fmt.Sprintf("; did you mean %s? (quiver names each tool with its server's prefix)", strings.Join(own, " or "))
	}
	best, bestD := "", len(name)/3+1
	for _, t := range cat.Tools {
		if srv != "" && t.Server != srv {
			continue
		}
		if d := textdist.Levenshtein(name, t.Exposed); d < bestD {
			best, bestD = t.Exposed, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %s?", best)
}

// missingTools are the problems of tool names in the configuration that
// no server offers: a typo in always_on, a slash command's tools or the
// toggles file would otherwise leave the tool silently as it was.
func missingTools(cfg *Config, cat *Catalog) []string {
	var out []string
	check := func(where, name string) {
		if c := CheckToolName(cfg, cat, name); c.Problem != "" {
			out = append(out, fmt.Sprintf("%s names %s, but %s", where, name, c.Problem))
		}
	}
	for _, n := range cfg.Surface.AlwaysOn {
		check("surface.always_on", n)
	}
	for _, sl := range cfg.Slash {
		for _, n := range sl.Tools {
			check("slash."+sl.Name+".tools", n)
		}
		for _, n := range sl.Allow {
			check("slash."+sl.Name+".allow", n)
		}
		for _, n := range slices.Sorted(maps.Keys(sl.Pins)) {
			check("slash."+sl.Name+".pins", n)
		}
	}
	if cfg.Toggles != nil {
		for _, r := range cfg.Toggles.Rules {
			list := "disabled"
			if r.On {
				list = "enabled"
			}
			check(fmt.Sprintf("%s:%d %s", configName(cfg.Toggles.Path), r.Line, list), r.Pattern)
		}
	}
	return out
}

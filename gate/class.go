package gate

import (
	"path"
	"sort"
	"strings"
)

// A Class is what a tool does to the world, from its (untrusted)
// annotations and the policy's overrides. The class picks the default
// verdict and whether a read-only activity may run the tool.
type Class string

// The action classes.
const (
	ClassRead        Class = "read"
	ClassWrite       Class = "write"
	ClassDestructive Class = "destructive"
	ClassExecute     Class = "execute"
	ClassNetwork     Class = "network"
	ClassAdmin       Class = "admin"
)

func (c Class) valid() bool {
	switch c {
	case ClassRead, ClassWrite, ClassDestructive, ClassExecute, ClassNetwork, ClassAdmin:
		return true
	}
	return false
}

// Hints are a tool's MCP annotations. They come from the downstream server
// and are only hints: the policy's Classes override them. A nil field means
// the server did not say.
type Hints struct {
	ReadOnly    *bool `json:"readOnlyHint,omitempty"`
	Destructive *bool `json:"destructiveHint,omitempty"`
	Idempotent  *bool `json:"idempotentHint,omitempty"`
	OpenWorld   *bool `json:"openWorldHint,omitempty"`
}

// ClassOf returns the class of the tool called name: the most specific
// glob in overrides that matches the name wins (an exact name beats any
// glob, a longer glob beats a shorter one); otherwise the annotations
// decide: readOnlyHint → read, destructiveHint → destructive,
// openWorldHint → network, and write when the server said nothing.
//
// MCP's spec defaults destructiveHint and openWorldHint to true when
// absent; ClassOf reads only what the server actually said, so an
// unannotated tool is write (allowed inside the fence), not destructive.
// Malformed globs never match; New reports them.
func ClassOf(name string, h Hints, overrides map[string]Class) Class {
	if c, ok := matchClass(name, sortedOverrides(overrides)); ok {
		return c
	}
	return classFromHints(h)
}

func classFromHints(h Hints) Class {
	switch {
	case h.ReadOnly != nil && *h.ReadOnly:
		return ClassRead
	case h.Destructive != nil && *h.Destructive:
		return ClassDestructive
	case h.OpenWorld != nil && *h.OpenWorld:
		return ClassNetwork
	}
	return ClassWrite
}

type classOverride struct {
	glob  string
	class Class
}

// sortedOverrides orders globs from most to least specific so that a map
// (which YAML gives us, in no order) still decides deterministically.
func sortedOverrides(m map[string]Class) []classOverride {
	out := make([]classOverride, 0, len(m))
	for g, c := range m {
		out = append(out, classOverride{g, c})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].glob, out[j].glob
		am, bm := hasMeta(a), hasMeta(b)
		if am != bm {
			return !am
		}
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a < b
	})
	return out
}

func matchClass(name string, ov []classOverride) (Class, bool) {
	for _, o := range ov {
		if ok, _ := path.Match(o.glob, name); ok {
			return o.class, true
		}
	}
	return "", false
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// ClassOf returns the class the gate gives a tool: the policy's overrides
// first, then the tool's own Class, then its annotations.
func (g *Gate) ClassOf(t *Tool) Class {
	if c, ok := matchClass(t.Name, g.p.classes); ok {
		return c
	}
	if t.Class.valid() {
		return t.Class
	}
	return classFromHints(t.Hints)
}

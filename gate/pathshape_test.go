package gate

import (
	"slices"
	"testing"
)

// TestPathShapeByBeginningNotContent: what exempts a one-line string from
// being a path is how it begins (a URI of another scheme), never white
// space or "://" somewhere inside it (red team 2: "outside/canary
// file.txt" and "fenced/x://../../outside/canary.txt" were read from the
// server's folder because they were taken for prose and a URI).
func TestPathShapeByBeginningNotContent(t *testing.T) {
	for s, want := range map[string]bool{
		"outside/canary.txt":                  true,
		"outside/canary file.txt":             true,
		"outside/My Documents/canary.txt":     true,
		"My Documents\\x":                     true,
		"fenced/x://../../outside/canary.txt": true,
		"a b://../c":                          true,
		"x://../../outside":                   true, // a ".." part: a path whatever begins it
		"https://example.com/../../outside":   true,
		"see https://example.com/a for more":  true, // prose with a slash: asks where no path_base
		" outside/canary file.txt\t":          true,
		"https://example.com/a/b":             false,
		"test://static/resource/1":            false,
		"git+ssh://host/repo.git":             false,
		"hello world":                         false,
		"1/2":                                 true, // digits name folders too (red team 3)
		"2024/01/02":                          true,
		"line one/a\nline two/b":              false, // several lines: content
		"/":                                   false,
	} {
		if got := hasPathShape(s); got != want {
			t.Errorf("hasPathShape(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestBraceAlternatives: a glob's brace group is read as each of its
// choices; a brace with no comma, or unbalanced, is a name.
func TestBraceAlternatives(t *testing.T) {
	for s, want := range map[string][]string{
		"{ok.txt,../secret.txt}": {"ok.txt", "../secret.txt"},
		"a/{b,c/d}/e":            {"a/b/e", "a/c/d/e"},
		"{x}/{y,/etc/passwd}":    {"{x}/y", "{x}//etc/passwd"},
		"a/{b,{c,d}}":            {"a/b", "a/{c,d}"},
		"{a,}":                   {"a", ""},
		"{x}":                    nil,
		"a{b,c":                  nil,
		"plain/path":             nil,
	} {
		if got := braceAlternatives(s); !slices.Equal(got, want) {
			t.Errorf("braceAlternatives(%q) = %q, want %q", s, got, want)
		}
	}
}

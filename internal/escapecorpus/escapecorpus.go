// Package escapecorpus reads gate/testdata/escapes.json, the path-escape
// attempts that the gate's own tests and the end-to-end test through a
// real filesystem server both run, and lays out the folders, files and
// links the attempts need. The corpus is data, not Go, so that one list
// serves both; this package is its one reader.
package escapecorpus

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// Corpus is the file: its fixtures, controls (inside paths, which must
// pass) and attempts (which must all be refused).
type Corpus struct {
	Fixtures struct {
		Dirs  []string `json:"dirs"`
		Files []string `json:"files"`
		Links []struct {
			Link   string `json:"link"`
			Target string `json:"target"`
		} `json:"links"`
	} `json:"fixtures"`
	Controls []Attempt `json:"controls"`
	Attempts []Attempt `json:"attempts"`
}

// Attempt is one call's arguments, with placeholders for the folders.
type Attempt struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	// Raw is arguments JSON cannot hold as a value (a key given twice,
	// say), sent as written; it wins over Args.
	Raw      string   `json:"raw"`
	Expect   string   `json:"expect"`    // the gate's verdict, if the corpus says
	PathArgs []string `json:"path_args"` // the tool's declared path arguments
}

// Arguments is a's arguments as sent, placeholders replaced by sub.
func (a Attempt) Arguments(sub func(string) string) string {
	if a.Raw != "" {
		return sub(a.Raw)
	}
	return sub(string(a.Args))
}

// Load reads the corpus at path and lays out its fixtures for root, the
// fenced folder (made if missing), and outside, where the attempts aim
// and where "~" points. It returns the corpus and sub, which puts those
// folders in place of the placeholders ({{ROOT}}, {{ROOTNAME}},
// {{ROOT_UPPER}}, {{OUTSIDE}}, {{HOME}}).
func Load(path, root, outside string) (Corpus, func(string) string, error) {
	var c Corpus
	b, err := os.ReadFile(path)
	if err != nil {
		return c, nil, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, nil, err
	}
	sub := strings.NewReplacer(
		"{{ROOT_UPPER}}", strings.ToUpper(root),
		"{{ROOTNAME}}", filepath.Base(root),
		"{{ROOT}}", root,
		"{{OUTSIDE}}", outside,
		"{{HOME}}", outside,
	).Replace
	for _, d := range append([]string{root}, c.Fixtures.Dirs...) {
		if err := os.MkdirAll(sub(d), 0o755); err != nil {
			return c, nil, err
		}
	}
	for _, f := range c.Fixtures.Files {
		if err := os.WriteFile(sub(f), []byte("inside\n"), 0o644); err != nil {
			return c, nil, err
		}
	}
	for _, l := range c.Fixtures.Links {
		if err := os.Symlink(sub(l.Target), sub(l.Link)); err != nil {
			return c, nil, err
		}
	}
	return c, sub, nil
}

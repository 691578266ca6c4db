package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"
)

// TogglesFile is the toggles file's name beside servers.yaml.
const TogglesFile = "tools.yaml"

// Toggles are the tool switches of the toggles file (tools.yaml):
//
//	enabled:
//	  - github__*
//	disabled:
//	  - github__delete_*
//
// Each entry is an exposed name or a glob (path.Match syntax: *, ?, [...]).
// A tool starts on, or off when its server says tools_default: off; then
// every entry that matches it, in the order of the lines in the file,
// switches it on or off: the later line wins. A missing file has no
// entries.
type Toggles struct {
	// Path is the file the switches came from ("" when none).
	Path string
	// Hash is the SHA-256 of the file as read (hex); of nothing when the
	// file does not exist.
	Hash  string
	Rules []ToggleRule
}

// A ToggleRule is one entry of the toggles file.
type ToggleRule struct {
	Pattern string
	On      bool
	Line    int
}

// emptyHash is what a missing toggles file hashes to.
var emptyHash = contentHash(nil)

func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// LoadToggles reads the toggles file at p; a file that does not exist is
// empty, not an error.
func LoadToggles(p string) (*Toggles, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &Toggles{Path: p, Hash: emptyHash}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read toggles: %w", err)
	}
	return ParseToggles(p, b)
}

// ParseToggles validates a toggles file held in memory. Errors wrap
// ErrInvalidConfig and name the file and line.
func ParseToggles(p string, b []byte) (*Toggles, error) {
	t, _, err := parseToggles(p, b)
	return t, err
}

// parseToggles is ParseToggles that also returns the file's node tree, for
// EditToggles to edit.
func parseToggles(p string, b []byte) (*Toggles, *yaml.Node, error) {
	t := &Toggles{Path: p, Hash: contentHash(b)}
	name := filepath.Base(p)
	if p == "" {
		name = TogglesFile
	}
	var doc struct {
		Enabled  []string `yaml:"enabled"`
		Disabled []string `yaml:"disabled"`
	}
	root, _, err := parseYAML(name, b)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if errs := decodeNode(name, root, &doc); len(errs) > 0 {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	var errs []error
	for _, list := range []struct {
		key string
		on  bool
	}{{"enabled", true}, {"disabled", false}} {
		_, n := nodeAt(root, list.key)
		if n == nil || n.Kind != yaml.SequenceNode {
			continue
		}
		for _, item := range n.Content {
			pat := item.Value
			if _, err := path.Match(pat, ""); err != nil || pat == "" || item.Kind != yaml.ScalarNode {
				errs = append(errs, &ConfigError{File: name, Line: item.Line,
					Msg: fmt.Sprintf("%s: %q is not a tool name or glob (like slack__* or github__get_?)", list.key, pat)})
				continue
			}
			t.Rules = append(t.Rules, ToggleRule{Pattern: pat, On: list.on, Line: item.Line})
		}
	}
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	slices.SortStableFunc(t.Rules, func(a, b ToggleRule) int { return a.Line - b.Line })
	return t, root, nil
}

// Decide says whether the tool exposed as name is switched on, starting
// from on (its server's tools_default), and why, in words for people:
// "" when no switch touched it.
func (t *Toggles) Decide(name string, on bool) (bool, string) {
	why := ""
	if t == nil {
		return on, why
	}
	file := filepath.Base(t.Path)
	if t.Path == "" {
		file = TogglesFile
	}
	for _, r := range t.Rules {
		if ok, _ := path.Match(r.Pattern, name); !ok {
			continue
		}
		on = r.On
		list := "disabled"
		if r.On {
			list = "enabled"
		}
		why = fmt.Sprintf("%s:%d %s %s", file, r.Line, list, r.Pattern)
	}
	return on, why
}

// SwitchedOff says whether the tool (or pass-through operation) exposed as
// name on server srv is switched off, by tools.yaml or the server's
// tools_default: off, and why, in words for people ("" when nothing
// switched it).
func (c *Config) SwitchedOff(srv Server, name string) (off bool, why string) {
	on, why := c.Toggles.Decide(name, !srv.ToolsOff)
	if why == "" && srv.ToolsOff {
		why = fmt.Sprintf("%s:%d tools_default: off", configName(c.Path), srv.Line)
	}
	return !on, why
}

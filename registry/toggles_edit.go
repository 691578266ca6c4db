package registry

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// EditToggles returns the toggles file src with every pattern switched on
// (on) or off, keeping its comments. For each pattern it removes the same
// entry from both lists and, from the other list, the plain names the
// pattern covers, then appends the pattern to its list. Since the later
// line wins, when a broader entry of the other list would still come after
// it, the pattern's list is moved below the other one (moved reports it).
func EditToggles(src []byte, on bool, patterns []string) (out []byte, moved bool, err error) {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			return nil, false, fmt.Errorf("%q is not a tool name or glob (like slack__* or github__get_?)", p)
		}
	}
	_, parsed, err := parseToggles(TogglesFile, src)
	if err != nil {
		return nil, false, err
	}
	doc := *parsed
	if doc.Kind == 0 {
		// Empty, or only comments, which the decoder drops: keep them on top.
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}},
			HeadComment: strings.TrimSpace(string(src))}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			*root = yaml.Node{Kind: yaml.MappingNode, HeadComment: root.HeadComment}
		} else {
			return nil, false, fmt.Errorf("%w: %s: the file must be a mapping with enabled: and disabled: lists", ErrInvalidConfig, TogglesFile)
		}
	}
	target, other := "disabled", "enabled"
	if on {
		target, other = other, target
	}
	list := func(key string, create bool) *yaml.Node {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == key {
				v := root.Content[i+1]
				if v.Kind != yaml.SequenceNode {
					*v = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", LineComment: v.LineComment}
				}
				return v
			}
		}
		if !create {
			return &yaml.Node{Kind: yaml.SequenceNode} // not in the file: nothing to remove
		}
		v := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
		return v
	}
	tl, ol := list(target, true), list(other, false)
	var probes []string
	for _, p := range patterns {
		tl.Content = slices.DeleteFunc(tl.Content, func(n *yaml.Node) bool { return n.Value == p })
		ol.Content = slices.DeleteFunc(ol.Content, func(n *yaml.Node) bool {
			covered, _ := path.Match(p, n.Value)
			if n.Value == p || (covered && !strings.ContainsAny(n.Value, "*?[")) {
				probes = append(probes, n.Value)
				return true
			}
			return false
		})
		tl.Content = append(tl.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: p})
		if !strings.Contains(p, "[") {
			probes = append(probes, strings.NewReplacer("*", "x", "?", "x").Replace(p))
		}
	}
	encode := func() ([]byte, error) {
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(&doc); err != nil {
			return nil, err
		}
		return b.Bytes(), enc.Close()
	}
	holds := func(b []byte) (bool, error) {
		t, err := ParseToggles(TogglesFile, b)
		if err != nil {
			return false, err
		}
		for _, p := range probes {
			if got, _ := t.Decide(p, !on); got != on {
				return false, nil
			}
		}
		return true, nil
	}
	if out, err = encode(); err != nil {
		return nil, false, err
	}
	if ok, err := holds(out); err != nil || ok {
		return out, false, err
	}
	// Move the target list (key and value) to the end of the file.
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == target {
			kv := slices.Clone(root.Content[i : i+2])
			root.Content = append(slices.Delete(root.Content, i, i+2), kv...)
			break
		}
	}
	if out, err = encode(); err != nil {
		return nil, false, err
	}
	if ok, err := holds(out); err != nil || !ok {
		return nil, false, errors.Join(err, errors.New("could not place the switch so that it wins; edit tools.yaml by hand"))
	}
	return out, true, nil
}

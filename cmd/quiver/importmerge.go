package main

// This file writes the imported entries: as a servers: block of their
// own, or merged as text into an existing servers.yaml.

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/quiver-mcp/quiver/registry"
)

// fenceYAML is the fence block for the folders the imported servers were
// given, or nil.
func (imp *imported) fenceYAML() []byte {
	dirs := imp.allowedDirs()
	if len(dirs) == 0 {
		return nil
	}
	return []byte("fence:\n  allowed_dirs: " + flowList(dirs) + "\n")
}

// flowList is dirs as a YAML flow sequence, each quoted as YAML needs.
func flowList(dirs []string) string {
	return "[" + strings.Join(flowItems(dirs), ", ") + "]"
}

func flowItems(dirs []string) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		b, _ := yaml.Marshal(&yaml.Node{Kind: yaml.ScalarNode, Value: d, Style: yaml.DoubleQuotedStyle})
		out[i] = strings.TrimSpace(string(b))
	}
	return out
}

// mergeAllowedDirs adds dirs to fence.allowed_dirs as text, changing only
// the line of a flow list ([a, b]) or inserting lines: a fence: block
// made at the end, an allowed_dirs: line under fence:, or items after a
// block list's last one. A folder already listed is not added twice.
func mergeAllowedDirs(src []byte, dirs []string) ([]byte, error) {
	if len(dirs) == 0 {
		return src, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", registry.ErrInvalidConfig, err)
	}
	lines := strings.SplitAfter(string(src), "\n")
	if len(src) > 0 && !bytes.HasSuffix(src, []byte("\n")) {
		lines[len(lines)-1] += "\n"
	}
	join := func() []byte { return []byte(strings.Join(lines, "")) }
	var fence *yaml.Node
	fenceLine := 0
	if len(doc.Content) > 0 && doc.Content[0].Kind == yaml.MappingNode {
		root := doc.Content[0]
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "fence" {
				fence, fenceLine = root.Content[i+1], root.Content[i].Line
			}
		}
	}
	if fence == nil || (fence.Kind == yaml.ScalarNode && fence.Tag == "!!null") {
		if fence != nil {
			lines[fenceLine-1] = strings.TrimRight(lines[fenceLine-1], "\n") + "\n"
			lines = slices.Insert(lines, fenceLine, "  allowed_dirs: "+flowList(dirs)+"\n")
			return join(), nil
		}
		lines = append(lines, "\nfence:\n  allowed_dirs: "+flowList(dirs)+"\n")
		return join(), nil
	}
	if fence.Kind != yaml.MappingNode || fence.Style&yaml.FlowStyle != 0 {
		return nil, errors.New("fence: is not written as a block; write it as one to import server-filesystem's folders into it")
	}
	for i := 0; i+1 < len(fence.Content); i += 2 {
		if fence.Content[i].Value != "allowed_dirs" {
			continue
		}
		list := fence.Content[i+1]
		var have []string
		for _, n := range list.Content {
			have = append(have, n.Value)
		}
		var add []string
		for _, d := range dirs {
			if !slices.Contains(have, d) {
				add = append(add, d)
			}
		}
		if len(add) == 0 {
			return src, nil
		}
		switch {
		case list.Kind == yaml.SequenceNode && list.Style&yaml.FlowStyle != 0:
			last := list.Line
			if n := len(list.Content); n > 0 {
				last = list.Content[n-1].Line
			}
			line := lines[last-1]
			end := strings.LastIndex(line, "]")
			if end < 0 {
				return nil, errors.New("fence.allowed_dirs: its list ends on another line than its last folder; add the folders by hand")
			}
			sep := ", "
			if len(list.Content) == 0 {
				sep = ""
			}
			lines[last-1] = line[:end] + sep + strings.Join(flowItems(add), ", ") + line[end:]
		case list.Kind == yaml.SequenceNode && len(list.Content) > 0:
			lastItem := list.Content[len(list.Content)-1]
			pad := strings.Repeat(" ", max(lastItem.Column-3, 0))
			var ins []string
			for _, it := range flowItems(add) {
				ins = append(ins, pad+"- "+it+"\n")
			}
			lines = slices.Insert(lines, lastItem.Line, ins...)
		case list.Kind == yaml.ScalarNode && list.Tag == "!!null":
			k := fence.Content[i]
			lines[k.Line-1] = strings.Repeat(" ", k.Column-1) + "allowed_dirs: " + flowList(add) + "\n"
		default:
			return nil, errors.New("fence.allowed_dirs is not a list; make it one to import server-filesystem's folders into it")
		}
		return join(), nil
	}
	pad := "  "
	if len(fence.Content) > 0 {
		pad = strings.Repeat(" ", fence.Content[0].Column-1)
	}
	lines = slices.Insert(lines, fenceLine, pad+"allowed_dirs: "+flowList(dirs)+"\n")
	return join(), nil
}

// yaml renders the entries as a servers: block.
func (imp *imported) yaml() []byte {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, n := range imp.names {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: n}, imp.entries[n])
	}
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "servers"}, m}}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	_ = enc.Encode(doc)
	return b.Bytes()
}

// mergeServers adds the imported entries to a servers.yaml, as text, so
// that everything else in the file (comments, blank lines, layout) stays
// byte for byte; the result must parse and hold every new server.
func mergeServers(src []byte, imp *imported) ([]byte, error) {
	src, err := mergeAllowedDirs(src, imp.allowedDirs())
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", registry.ErrInvalidConfig, err)
	}
	var root *yaml.Node
	if len(doc.Content) > 0 && doc.Content[0].Kind == yaml.MappingNode {
		root = doc.Content[0]
	}
	block := imp.yaml()
	block = block[bytes.IndexByte(block, '\n')+1:] // without "servers:"
	lines := strings.SplitAfter(string(src), "\n")
	if len(src) > 0 && !bytes.HasSuffix(src, []byte("\n")) {
		lines[len(lines)-1] += "\n"
	}
	insertAt, indent, found := len(lines), 2, false
	if root != nil {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value != "servers" {
				continue
			}
			found = true
			v := root.Content[i+1]
			var exist []string
			if v.Kind == yaml.MappingNode {
				if v.Style&yaml.FlowStyle != 0 && len(v.Content) > 0 {
					return nil, errors.New("servers: is written in flow style ({...}); write it as a block to import into it")
				}
				for j := 0; j+1 < len(v.Content); j += 2 {
					if slices.Contains(imp.names, v.Content[j].Value) {
						exist = append(exist, v.Content[j].Value)
					}
				}
				if len(v.Content) > 0 {
					indent = v.Content[0].Column - 1
				}
			}
			if len(exist) > 0 {
				return nil, fmt.Errorf("servers %s already exist; nothing was written (--skip leaves them out, --rename imports them under new names)", strings.Join(exist, ", "))
			}
			if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle != 0 {
				// "servers: {}": make it a block.
				line := lines[root.Content[i].Line-1]
				lines[root.Content[i].Line-1] = strings.Replace(line, "{}", "", 1)
			}
			// Before the next top-level key, and before the comments and
			// blank lines just above it, which belong to that key.
			insertAt = len(lines)
			if i+2 < len(root.Content) {
				insertAt = root.Content[i+2].Line - 1
			}
			for insertAt > root.Content[i].Line {
				l := lines[insertAt-1]
				if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
					insertAt--
					continue
				}
				break
			}
		}
	}
	pad := strings.Repeat(" ", max(indent-2, 0))
	var add strings.Builder
	if !found {
		add.WriteString("\nservers:\n")
	}
	for _, l := range strings.SplitAfter(string(block), "\n") {
		if l != "" {
			add.WriteString(pad + l)
		}
	}
	out := strings.Join(lines[:insertAt], "") + add.String() + strings.Join(lines[insertAt:], "")
	// What was written must be a valid config with every new server.
	cfg, err := registry.ParseConfig("servers.yaml", []byte(out), func(string) (string, bool) { return "x", true })
	if err != nil {
		return nil, fmt.Errorf("the merged file would not be valid (nothing was written): %w", err)
	}
	for _, n := range imp.names {
		if _, ok := cfg.Server(n); !ok {
			return nil, fmt.Errorf("the merged file lost server %q (nothing was written)", n)
		}
	}
	return []byte(out), nil
}

// serverNames are the names under servers: in a servers.yaml's text.
func serverNames(src []byte) []string {
	var doc struct {
		Servers map[string]any `yaml:"servers"`
	}
	_ = yaml.Unmarshal(src, &doc)
	return slices.Sorted(maps.Keys(doc.Servers))
}

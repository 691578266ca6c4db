package main

// This file writes the imported entries: as a servers: block of their
// own, or merged as text into an existing servers.yaml.

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/quiver-mcp/quiver/registry"
)

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
				return nil, fmt.Errorf("servers %s already exist; nothing was written (rename or remove them in one of the files)", strings.Join(exist, ", "))
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

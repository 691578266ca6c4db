package registry

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// parseYAML parses the first document of a YAML file into its node tree:
// the one parse everything after it reads (values, lines, key order). An
// empty file is an empty tree (Kind 0), not an error. second is the line
// of a second document that holds something ("---" then keys), 0 when
// there is none; a second document that does not parse is not looked at.
func parseYAML(file string, b []byte) (root *yaml.Node, second int, err error) {
	defer func() {
		if r := recover(); r != nil {
			root, second, err = nil, 0, readerFailed(file, fmt.Sprint(r))
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	root = &yaml.Node{}
	if err := dec.Decode(root); err != nil {
		if errors.Is(err, io.EOF) {
			return &yaml.Node{}, 0, nil
		}
		return nil, 0, syntaxError(file, err)
	}
	var more yaml.Node
	if dec.Decode(&more) == nil && !emptyDocument(&more) {
		second = more.Line
	}
	return root, second, nil
}

// syntaxError is a file that is not YAML. There is no node to point at, so
// the line is the one yaml's own message gives ("yaml: line 3: ..."): where
// the construct it was reading starts (the mapping, the bracket), which
// may be a line or more above the fault.
func syntaxError(file string, err error) error {
	line, m := yamlLine(err.Error())
	return &ConfigError{File: file, Line: line,
		Msg: "this is not valid YAML (" + m + "); check the indentation (spaces, not tabs), the colons, brackets and quotes from this line down"}
}

// yamlLine splits a message of yaml's, "yaml: line 3: msg", into 3 and
// "msg"; 0 when it names no line.
func yamlLine(m string) (int, string) {
	m = strings.TrimPrefix(m, "yaml: ")
	rest, ok := strings.CutPrefix(m, "line ")
	if !ok {
		return 0, m
	}
	num, msg, ok := strings.Cut(rest, ": ")
	n, err := strconv.Atoi(num)
	if !ok || err != nil {
		return 0, m
	}
	return n, msg
}

// readerFailed is the YAML library failing on a file that parsed: it
// refuses (or, in old versions, panics on) some uses of anchors, aliases
// and merge keys. A bad servers.yaml must never take quiver down.
func readerFailed(file, why string) error {
	return &ConfigError{File: file, Msg: fmt.Sprintf("the YAML reader failed on this file (%s); simplify its anchors, aliases and merge keys (<<)",
		strings.TrimPrefix(why, "yaml: "))}
}

// emptyDocument reports whether a YAML document holds nothing (a trailing
// "---" alone).
func emptyDocument(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// lineOf finds the line of the key at path in a YAML document; 0 if absent.
func lineOf(root *yaml.Node, path ...string) int {
	line, _ := nodeAt(root, path...)
	return line
}

// seqLine is the line of item i of the sequence at path; the line of the
// key itself when there is no such item.
func seqLine(root *yaml.Node, i int, path ...string) int {
	line, n := nodeAt(root, path...)
	if n != nil && n.Kind == yaml.SequenceNode && i < len(n.Content) {
		return n.Content[i].Line
	}
	return line
}

// mappingKeys lists the keys of the mapping at path, in file order.
func mappingKeys(root *yaml.Node, path ...string) []string {
	_, n := nodeAt(root, path...)
	if n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var keys []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
	}
	return keys
}

// nodeAt walks mapping keys from the document root and returns the line of
// the last key and the value node under it (nil when a key is absent). A
// key given as "[i]" is item i of a list; its line is the item's.
func nodeAt(root *yaml.Node, path ...string) (int, *yaml.Node) {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, k := range path {
		if n != nil && n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n == nil {
			return 0, nil
		}
		var next *yaml.Node
		if i, ok := seqIndex(k); ok {
			if n.Kind == yaml.SequenceNode && i < len(n.Content) {
				next = n.Content[i]
				line = next.Line
			}
		} else if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					line, next = n.Content[i].Line, n.Content[i+1]
				}
			}
		}
		if next == nil {
			return 0, nil
		}
		n = next
	}
	return line, n
}

// seqIndex reads a path element "[i]".
func seqIndex(k string) (int, bool) {
	num, ok := strings.CutPrefix(k, "[")
	if !ok {
		return 0, false
	}
	if num, ok = strings.CutSuffix(num, "]"); !ok {
		return 0, false
	}
	i, err := strconv.Atoi(num)
	return i, err == nil && i >= 0
}

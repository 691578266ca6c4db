package registry

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/quiver-mcp/quiver/internal/textdist"
)

// yamlErrors turns what yaml.v3 reports about servers.yaml into
// ConfigErrors that say where (the line, the key) and what to write
// instead; yaml.v3's own text names Go types ("cannot unmarshal !!str
// `abc` into time.Duration") that mean nothing to the person editing the
// file. root is the file's node tree, possibly partial.
func yamlErrors(path string, root *yaml.Node, err error) []error {
	var yp yamlPanic
	if errors.As(err, &yp) {
		return []error{&ConfigError{File: path, Msg: yp.Error()}}
	}
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	switch {
	case errors.As(err, &te):
		msgs = te.Errors
	case root != nil && root.Kind != 0:
		// The file parsed, so this is no syntax error: the decoder
		// failed on the anchors, aliases or merge keys (go.yaml.in/yaml/v3
		// returns as an error what gopkg.in/yaml.v3 panicked on).
		return []error{&ConfigError{File: path, Msg: yamlPanic{strings.TrimPrefix(err.Error(), "yaml: ")}.Error()}}
	}
	errs := make([]error, 0, len(msgs))
	for _, m := range msgs {
		line, m := splitYAMLLine(strings.TrimPrefix(m, "yaml: "))
		errs = append(errs, &ConfigError{File: path, Line: line, Msg: explainYAML(root, line, m)})
	}
	return errs
}

// A yamlPanic is a panic inside yaml.v3, which has some: a merge key (<<)
// over a mapping whose key is itself a mapping panics in v3.0.1.
type yamlPanic struct{ v any }

func (p yamlPanic) Error() string {
	return fmt.Sprintf("the YAML reader failed on this file (%v); simplify its anchors, aliases and merge keys (<<)", p.v)
}

// decodeYAML is dec.Decode(v) with yaml.v3's panics turned into a
// yamlPanic error: a bad servers.yaml must never take quiver down.
func decodeYAML(dec *yaml.Decoder, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = yamlPanic{r}
		}
	}()
	return dec.Decode(v)
}

// splitYAMLLine splits "line 3: msg" into 3 and "msg".
func splitYAMLLine(m string) (int, string) {
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

var (
	yamlUnknownRE   = regexp.MustCompile(`^field (\S+) not found in type (.+)$`)
	yamlCannotRE    = regexp.MustCompile("^cannot unmarshal (!!\\w+)(?: `(.*)`)? into (.+)$")
	yamlDuplicateRE = regexp.MustCompile(`^mapping key (".*") already defined at line (\d+)$`)
)

// yamlPlaces names the places of servers.yaml by the Go type yaml.v3
// reports, with the keys each takes.
var yamlPlaces = map[string]struct {
	where string
	keys  []string
}{
	"registry.fileConfig": {"the top level", yamlKeys(fileConfig{})},
	"registry.Surface":    {"surface", yamlKeys(Surface{})},
	"registry.fileServer": {"a server entry", yamlKeys(fileServer{})},
	"registry.Skills":     {"skills", yamlKeys(Skills{})},
}

// yamlWants says in the file's words what a Go type needs.
var yamlWants = map[string]string{
	"time.Duration":                   "a duration with a unit, like 30s, 1m30s or 2m",
	"int":                             "a whole number, like 3",
	"bool":                            "true or false",
	"string":                          "a single text value (put it in quotes if in doubt)",
	"[]string":                        "a list of text values, like [a, b]",
	"map[string]string":               "a mapping of names to text values, like {NAME: value}",
	"map[string]*registry.fileServer": "a mapping of server names to their entries",
	"registry.fileServer":             "a server entry: a mapping with command (a local server) or url (a remote one), indented under the server's name",
	"registry.Surface":                "a mapping of surface settings (" + strings.Join(yamlKeys(Surface{}), ", ") + ")",
	"registry.Skills":                 "a mapping with dirs",
	"registry.fileConfig":             "a mapping with " + strings.Join(yamlKeys(fileConfig{}), ", "),
}

func explainYAML(root *yaml.Node, line int, m string) string {
	if sm := yamlUnknownRE.FindStringSubmatch(m); sm != nil {
		key, place := sm[1], yamlPlaces[sm[2]]
		msg := fmt.Sprintf("unknown key %q", key)
		if path := yamlPathAt(root, line, func(k, _ *yaml.Node) bool { return k != nil && k.Value == key }); strings.Contains(path, ".") {
			msg += " in " + path[:strings.LastIndexByte(path, '.')]
		}
		if len(place.keys) == 0 {
			return msg + "; check its spelling and its indentation (README.md lists every key)"
		}
		if s := closestKey(key, place.keys); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return fmt.Sprintf("%s; %s takes %s: check the spelling and the indentation", msg, place.where, strings.Join(place.keys, ", "))
	}
	if sm := yamlCannotRE.FindStringSubmatch(m); sm != nil {
		tag, val, typ := sm[1], sm[2], sm[3]
		var node *yaml.Node
		path := yamlPathAt(root, line, func(_, v *yaml.Node) bool {
			if yamlTagMatches(v, tag) {
				node = v
				return true
			}
			return false
		})
		if path == "" {
			path = "the value"
			if typ == "registry.fileConfig" {
				path = "the file"
			}
		}
		got := tag
		switch {
		case tag == "!!seq":
			got = "a list"
		case tag == "!!map":
			got = "a mapping"
		case node != nil && node.Kind == yaml.ScalarNode:
			got = strconv.Quote(node.Value)
		case val != "":
			got = strconv.Quote(val)
		}
		want, ok := yamlWants[typ]
		if !ok {
			want = "a value of another kind (" + typ + ")"
		}
		return fmt.Sprintf("%s must be %s, not %s", path, want, got)
	}
	if sm := yamlDuplicateRE.FindStringSubmatch(m); sm != nil {
		return fmt.Sprintf("key %s appears twice in the same mapping (first at line %s); keep one of them", sm[1], sm[2])
	}
	// For a syntax error yaml.v3 gives the line where the construct it was
	// reading starts (the mapping, the bracket), which may be a line or
	// more above the fault.
	return "this is not valid YAML (" + m + "); check the indentation (spaces, not tabs), the colons, brackets and quotes from this line down"
}

func yamlTagMatches(v *yaml.Node, tag string) bool {
	switch tag {
	case "!!seq":
		return v.Kind == yaml.SequenceNode
	case "!!map":
		return v.Kind == yaml.MappingNode
	}
	return v.Kind == yaml.ScalarNode
}

// yamlPathAt returns the dotted path ("servers.example.timeout") of the
// last entry, in file order, on line whose key and value satisfy match; a
// list element has a nil key and its index in the path. "" if none.
func yamlPathAt(root *yaml.Node, line int, match func(k, v *yaml.Node) bool) string {
	var found string
	var walk func(n *yaml.Node, path string, depth int)
	walk = func(n *yaml.Node, path string, depth int) {
		if n == nil || depth > 64 {
			return
		}
		join := func(k string) string {
			if path == "" {
				return k
			}
			return path + "." + k
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path, depth+1)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := join(k.Value)
				if (k.Line == line || v.Line == line) && match(k, v) {
					found = p
				}
				walk(v, p, depth+1)
			}
		case yaml.SequenceNode:
			for i, v := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				if v.Line == line && match(nil, v) {
					found = p
				}
				walk(v, p, depth+1)
			}
		}
	}
	walk(root, "", 0)
	return found
}

// yamlKeys lists the yaml keys of a struct type, in declaration order.
func yamlKeys(v any) []string {
	t := reflect.TypeOf(v)
	var keys []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// closestKey returns the known key within two edits of key, if one is.
func closestKey(key string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := textdist.Levenshtein(strings.ToLower(key), k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

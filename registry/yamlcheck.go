package registry

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/quiver-mcp/quiver/internal/textdist"
)

// decodeNode decodes the node tree n into v, a pointer to the struct that
// describes the file (or a section of it). Before decoding it checks n
// against v's type, so that every fault is a ConfigError that points at
// its node: the line, the key path ("servers.gh.timeout") and what to
// write instead, in the file's words. yaml's own messages name Go types
// ("cannot unmarshal !!str `abc` into time.Duration") that mean nothing to
// the person editing the file. No errors means v holds the file.
func decodeNode(file string, n *yaml.Node, v any) (errs []error) {
	if n == nil || n.Kind == 0 {
		return nil // an empty file: nothing to decode
	}
	c := yamlCheck{file: file, seen: map[checked]bool{}}
	defer func() {
		if r := recover(); r != nil {
			errs = append(c.errs, readerFailed(file, fmt.Sprint(r)))
		}
	}()
	c.node(n, reflect.TypeOf(v).Elem(), "")
	err := n.Decode(v)
	var te *yaml.TypeError
	switch {
	case err == nil:
	case c.ownFault:
	case !errors.As(err, &te):
		// Not about a value: the library gave up on the anchors, aliases
		// or merge keys (an alias bomb, a merge of a non-mapping).
		c.errs = append(c.errs, readerFailed(file, err.Error()))
	case len(c.errs) == 0:
		// A fault the check did not foresee: yaml's own words, which are
		// better than none.
		for _, m := range te.Errors {
			line, msg := yamlLine(m)
			c.errs = append(c.errs, &ConfigError{File: file, Line: line, Msg: msg})
		}
	}
	return c.errs
}

// A yamlCheck walks a node tree beside the Go type it decodes into.
type yamlCheck struct {
	file string
	errs []error
	// seen holds the (node, type) pairs checked: a node an alias reaches
	// again is checked once, so a cycle or an alias bomb costs nothing
	// (the decoder refuses them itself).
	seen map[checked]bool
	// ownFault is set when a type that reads its value itself refused
	// one: the decoder then stops with that type's error, which is no
	// fault of the YAML reader.
	ownFault bool
}

type checked struct {
	n *yaml.Node
	t reflect.Type
}

var (
	nodeType            = reflect.TypeFor[yaml.Node]()
	unmarshalerType     = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType            = reflect.TypeFor[time.Time]()
)

func (c *yamlCheck) fail(line int, format string, args ...any) {
	c.errs = append(c.errs, &ConfigError{File: c.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// node checks n, found at path, against t.
func (c *yamlCheck) node(n *yaml.Node, t reflect.Type, path string) {
	for n != nil && (n.Kind == yaml.DocumentNode || n.Kind == yaml.AliasNode) {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		} else if len(n.Content) > 0 {
			n = n.Content[0]
		} else {
			n = nil
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n == nil || t == nodeType || c.seen[checked{n, t}] {
		return
	}
	c.seen[checked{n, t}] = true
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // null is the zero value of any type
	}
	switch {
	case reflect.PointerTo(t).Implements(unmarshalerType), t == timeType,
		n.Kind == yaml.ScalarNode && reflect.PointerTo(t).Implements(textUnmarshalerType):
		c.scalar(n, t, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		c.mapping(n, t, path)
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			c.wrongKind(n, t, path)
			return
		}
		for i, item := range n.Content {
			c.node(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Interface:
		// Anything goes; a mapping within still may not repeat a key.
		if n.Kind == yaml.MappingNode {
			c.mapping(n, t, path)
			return
		}
		for i, item := range n.Content {
			c.node(item, t, fmt.Sprintf("%s[%d]", path, i))
		}
	default:
		c.scalar(n, t, path)
	}
}

// scalar checks a value that is one scalar: whether yaml turns it into a
// t is asked of yaml itself. A type that reads the value itself
// (yaml.Unmarshaler, encoding.TextUnmarshaler) says what is wrong.
func (c *yamlCheck) scalar(n *yaml.Node, t reflect.Type, path string) {
	own := reflect.PointerTo(t).Implements(unmarshalerType)
	if n.Kind != yaml.ScalarNode && !own {
		c.wrongKind(n, t, path)
		return
	}
	err := n.Decode(reflect.New(t).Interface())
	var te *yaml.TypeError
	switch {
	case err == nil:
	case (own || reflect.PointerTo(t).Implements(textUnmarshalerType)) && !errors.As(err, &te):
		c.ownFault = true
		c.fail(n.Line, "%s: %s", orFile(path), strings.TrimPrefix(err.Error(), "yaml: "))
	default:
		c.wrongKind(n, t, path)
	}
}

// mapping checks a mapping decoded into t, a struct, a map or an
// interface: no key twice, every key one t takes, every value of the kind
// its key wants.
func (c *yamlCheck) mapping(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		c.wrongKind(n, t, path)
		return
	}
	dup := false
	for i := 2; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		for j := 0; j < i; j += 2 {
			if first := n.Content[j]; first.Kind == k.Kind && first.Value == k.Value {
				c.fail(k.Line, "key %q appears twice in the same mapping (first at line %d); keep one of them", k.Value, first.Line)
				dup = true
				break
			}
		}
	}
	if dup {
		return // as yaml does: what is under a mapping with a repeated key is not read
	}
	var fields yamlFields
	if t.Kind() == reflect.Struct {
		fields = fieldsOf(t)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge") {
			c.merge(v, t, path)
			continue
		}
		keyType := reflect.TypeFor[string]()
		if t.Kind() == reflect.Map {
			keyType = t.Key()
		}
		key := resolveAlias(k)
		if key == nil || key.Kind != yaml.ScalarNode || keyType.Kind() != reflect.String {
			c.node(k, keyType, "a key in "+orFile(path))
			if key == nil || key.Kind != yaml.ScalarNode {
				continue
			}
		}
		at := joinPath(path, key.Value)
		switch t.Kind() {
		case reflect.Map:
			c.node(v, t.Elem(), at)
		case reflect.Interface:
			c.node(v, t, at)
		default:
			if ft, ok := fields.byKey[key.Value]; ok {
				c.node(v, ft, at)
			} else if fields.rest != nil {
				c.node(v, fields.rest, at)
			} else {
				c.fail(k.Line, "%s", unknownKey(key.Value, t, path))
			}
		}
	}
}

// merge checks the value of a merge key (<<): a mapping, or a list of
// mappings, whose entries count as t's own. Anything else the decoder
// refuses itself.
func (c *yamlCheck) merge(v *yaml.Node, t reflect.Type, path string) {
	v = resolveAlias(v)
	switch {
	case v == nil:
	case v.Kind == yaml.MappingNode:
		c.mapping(v, t, path)
	case v.Kind == yaml.SequenceNode:
		for _, m := range v.Content {
			if m = resolveAlias(m); m != nil && m.Kind == yaml.MappingNode {
				c.mapping(m, t, path)
			}
		}
	}
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orFile(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

// wrongKind is a value of another kind than its place takes: "servers.gh.
// timeout must be a duration with a unit, like 30s, 1m30s or 2m, not
// \"abc\"".
func (c *yamlCheck) wrongKind(n *yaml.Node, t reflect.Type, path string) {
	var got string
	switch n.Kind {
	case yaml.SequenceNode:
		got = "a list"
	case yaml.MappingNode:
		got = "a mapping"
	default:
		got = strconv.Quote(n.Value)
	}
	want, ok := yamlWants[t]
	if !ok {
		want = "a value of another kind (" + t.String() + ")"
	}
	c.fail(n.Line, "%s must be %s, not %s", orFile(path), want, got)
}

// unknownKey says that key is not one of the keys the struct t at path
// takes, with the closest one when it looks like a typo of it.
func unknownKey(key string, t reflect.Type, path string) string {
	msg := fmt.Sprintf("unknown key %q", key)
	if path != "" {
		msg += " in " + path
	}
	place, ok := yamlPlaces[t]
	if !ok {
		return msg + "; check its spelling and its indentation (README.md lists every key)"
	}
	keys := fieldsOf(t).keys
	if s := closestKey(key, keys); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return fmt.Sprintf("%s; %s takes %s: check the spelling and the indentation", msg, place, strings.Join(keys, ", "))
}

// yamlPlaces names the places of servers.yaml by the type they decode
// into, for messages that list the keys a place takes.
var yamlPlaces = map[reflect.Type]string{
	reflect.TypeFor[fileConfig](): "the top level",
	reflect.TypeFor[Surface]():    "surface",
	reflect.TypeFor[fileServer](): "a server entry",
	reflect.TypeFor[Skills]():     "skills",
}

// yamlWants says in the file's words what a value of a type must be.
var yamlWants = map[reflect.Type]string{
	reflect.TypeFor[time.Duration]():          "a duration with a unit, like 30s, 1m30s or 2m",
	reflect.TypeFor[int]():                    "a whole number, like 3",
	reflect.TypeFor[bool]():                   "true or false",
	reflect.TypeFor[string]():                 "a single text value (put it in quotes if in doubt)",
	reflect.TypeFor[[]string]():               "a list of text values, like [a, b]",
	reflect.TypeFor[map[string]string]():      "a mapping of names to text values, like {NAME: value}",
	reflect.TypeFor[map[string]*fileServer](): "a mapping of server names to their entries",
	reflect.TypeFor[fileServer]():             "a server entry: a mapping with command (a local server) or url (a remote one), indented under the server's name",
	reflect.TypeFor[Surface]():                "a mapping of surface settings (" + strings.Join(fieldsOf(reflect.TypeFor[Surface]()).keys, ", ") + ")",
	reflect.TypeFor[Skills]():                 "a mapping with dirs",
	reflect.TypeFor[fileConfig]():             "a mapping with " + strings.Join(fieldsOf(reflect.TypeFor[fileConfig]()).keys, ", "),
}

// yamlFields are the keys a struct takes, as yaml decodes them.
type yamlFields struct {
	keys  []string                // in declaration order
	byKey map[string]reflect.Type // each key's type
	rest  reflect.Type            // the element type of a `yaml:",inline"` map, nil if none
}

// fieldsOf lists the keys of struct t as yaml matches them: the yaml tag's
// name, else the field's name in lower case; an inline struct's keys are
// t's own, an inline map takes every other key.
func fieldsOf(t reflect.Type) yamlFields {
	f := yamlFields{byKey: map[string]reflect.Type{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("yaml")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		name, flags, _ := strings.Cut(tag, ",")
		if strings.Contains(","+flags+",", ",inline,") {
			switch ft := sf.Type; ft.Kind() {
			case reflect.Map:
				f.rest = ft.Elem()
			case reflect.Struct:
				in := fieldsOf(ft)
				f.keys = append(f.keys, in.keys...)
				for k, t := range in.byKey {
					f.byKey[k] = t
				}
				if in.rest != nil {
					f.rest = in.rest
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		f.keys = append(f.keys, name)
		f.byKey[name] = sf.Type
	}
	return f
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

package gate

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// justificationArg is the argument execution-class calls must carry. quiver
// adds it to the schema it shows (WithJustification) and strips it before
// forwarding unless the tool itself declares it.
const justificationArg = "justification"

// maxSchemaCache bounds the compiled-schema cache. A catalog holds at most
// a few thousand tools; past the bound the cache starts over rather than
// growing with every schema a misbehaving server invents.
const maxSchemaCache = 4096

// schemaCache holds compiled schemas per (tool name, sha256(schema)):
// compiling costs ~100 µs, validating ~10 µs, and the same schema comes
// back on every call.
type schemaCache struct {
	strict bool
	mu     sync.Mutex
	m      map[[32]byte]*compiledSchema
}

type compiledSchema struct {
	sch *jsonschema.Schema
	// err is set when the schema does not compile (a downstream bug, or a
	// $ref to a file or URL, which quiver never loads). Such a tool's
	// arguments are then not schema-checked: the schema is a shape hint,
	// not the security boundary — the fence and rules still decide.
	err   error
	props []string // top-level property names, for "known fields"
	// declaresJustification is true when the tool's own schema has a
	// justification property, so quiver must forward it.
	declaresJustification bool
}

func (c *schemaCache) get(name string, schema []byte) *compiledSchema {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(schema)
	var key [32]byte
	h.Sum(key[:0])

	c.mu.Lock()
	cs, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return cs
	}
	// Compile outside the lock: two goroutines may compile the same schema
	// once each, which is cheaper than making every call wait on one.
	cs = compileSchema(name, schema, c.strict)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxSchemaCache {
		c.m = make(map[[32]byte]*compiledSchema)
	}
	c.m[key] = cs
	c.mu.Unlock()
	return cs
}

func compileSchema(name string, schema []byte, strict bool) *compiledSchema {
	cs := &compiledSchema{}
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = []byte(`{"type":"object"}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		cs.err = fmt.Errorf("schema of %q is not JSON: %w", name, err)
		return cs
	}
	if obj, ok := doc.(map[string]any); ok {
		if props, ok := obj["properties"].(map[string]any); ok {
			for p := range props {
				cs.props = append(cs.props, p)
				if p == justificationArg {
					cs.declaresJustification = true
				}
			}
			sort.Strings(cs.props)
		}
	}
	// Validate what can be validated. A schema written for draft 4 without
	// saying so ("exclusiveMinimum": true) is read as draft 4 when 2020-12
	// rejects it; a $ref quiver will not load (a file or a URL) and a
	// pattern Go's regexp cannot compile (a lookahead) are read as
	// "anything" rather than dropping the whole schema: the rest of it,
	// closed objects included, still holds. strict_args closes the objects
	// in the way of the draft each try reads the schema as.
	loc := "mem://quiver/tools/" + url.PathEscape(name) + ".json"
	var firstErr error
	for _, try := range []struct {
		draft *jsonschema.Draft
		doc   any
	}{
		{jsonschema.Draft2020, doc},
		{jsonschema.Draft2020, modernized(doc)},
		{jsonschema.Draft4, doc},
		{jsonschema.Draft2020, loadable(modernized(doc))},
		{jsonschema.Draft4, loadable(doc)},
	} {
		d := try.doc
		if obj, ok := d.(map[string]any); ok && strict {
			d = closeObject(obj, try.draft == jsonschema.Draft2020)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(try.draft)
		// An empty scheme map loads nothing: a $ref to file:// or http(s)://
		// fails to compile instead of reading the disk or the network.
		// Meta-schemas are embedded in the library and still resolve.
		c.UseLoader(jsonschema.SchemeURLLoader{})
		err := c.AddResource(loc, d)
		var sch *jsonschema.Schema
		if err == nil {
			sch, err = c.Compile(loc)
		}
		if err == nil {
			cs.sch = sch
			return cs
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	cs.err = fmt.Errorf("schema of %q: %w", name, firstErr)
	return cs
}

// modernized is doc with draft 4's boolean exclusiveMinimum and
// exclusiveMaximum turned into 2020-12's numbers, the usual reason a
// schema that does not name its draft fails as 2020-12. Read that way it
// keeps const, if and the rest, which reading it as draft 4 would drop.
func modernized(doc any) any {
	switch x := doc.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[k] = modernized(v)
		}
		for _, b := range [][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
			excl, ok := out[b[0]].(bool)
			if !ok {
				continue
			}
			delete(out, b[0])
			if bound, ok := out[b[1]]; ok && excl {
				out[b[0]] = bound
				delete(out, b[1])
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = modernized(v)
		}
		return out
	}
	return doc
}

// loadable is doc without what keeps it from compiling here: every $ref
// that leaves the document (anything but "#...") and every pattern Go's
// regexp cannot compile, so that the subschema holding one accepts
// anything instead of sinking the whole schema.
func loadable(doc any) any {
	switch x := doc.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			if str, ok := v.(string); ok {
				if k == "$ref" && !strings.HasPrefix(str, "#") {
					continue
				}
				if k == "pattern" {
					if _, err := regexp.Compile(str); err != nil {
						continue
					}
				}
			}
			if pp, ok := v.(map[string]any); ok && k == "patternProperties" {
				kept := make(map[string]any, len(pp))
				for re, sub := range pp {
					if _, err := regexp.Compile(re); err == nil {
						kept[re] = loadable(sub)
					}
				}
				out[k] = kept
				continue
			}
			out[k] = loadable(v)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = loadable(v)
		}
		return out
	}
	return doc
}

// closeObject makes a schema refuse unknown arguments, at the top and in
// every object it describes with properties (strict_args: "everywhere").
// For 2019-09 and 2020-12 it adds unevaluatedProperties:false, which sees
// properties declared inside allOf/oneOf/$ref. Older drafts lack it, and
// additionalProperties:false would wrongly refuse properties declared in
// combinators, so there it is added only to a plain schema. An explicit
// "additionalProperties": true gives way; a schema for the extra values
// (a map) does not.
// A schema without $schema is read as 2019-09 or later when modern.
func closeObject(obj map[string]any, modern bool) map[string]any {
	if draft, _ := obj["$schema"].(string); draft != "" {
		modern = strings.Contains(draft, "2019-09") || strings.Contains(draft, "2020-12") || strings.TrimRight(draft, "#") == "https://json-schema.org/schema"
	}
	return closeSchema(obj, modern, 0)
}

func closeSchema(obj map[string]any, modern bool, depth int) map[string]any {
	out := make(map[string]any, len(obj)+1)
	for k, v := range obj {
		out[k] = v
	}
	if depth < maxArgDepth {
		closeMap := func(key string) {
			if m, ok := obj[key].(map[string]any); ok {
				closed := make(map[string]any, len(m))
				for k, v := range m {
					if sub, ok := v.(map[string]any); ok {
						v = closeSchema(sub, modern, depth+1)
					}
					closed[k] = v
				}
				out[key] = closed
			}
		}
		closeList := func(key string) {
			if l, ok := obj[key].([]any); ok {
				closed := make([]any, len(l))
				for i, v := range l {
					if sub, ok := v.(map[string]any); ok {
						v = closeSchema(sub, modern, depth+1)
					}
					closed[i] = v
				}
				out[key] = closed
			}
		}
		// Where objects are described: properties, list items, the
		// definitions $refs point at (pydantic's nested models), and the
		// alternatives of anyOf/oneOf (an optional model is anyOf
		// [model, null]). allOf branches are not closed on their own: the
		// object they make up together is.
		closeMap("properties")
		closeMap("$defs")
		closeMap("definitions")
		closeList("prefixItems")
		closeList("anyOf")
		closeList("oneOf")
		switch items := obj["items"].(type) {
		case map[string]any:
			out["items"] = closeSchema(items, modern, depth+1)
		case []any:
			closeList("items")
		}
	}
	_, hasProps := obj["properties"]
	if depth > 0 && !hasProps {
		return out // not an object with known fields: nothing to close
	}
	if b, ok := obj["additionalProperties"].(bool); ok && b {
		delete(out, "additionalProperties")
	}
	if modern {
		if _, ok := out["unevaluatedProperties"]; !ok {
			if _, ok := out["additionalProperties"]; !ok {
				out["unevaluatedProperties"] = false
			}
		}
		return out
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "$ref", "if", "dependencies", "patternProperties", "additionalProperties"} {
		if _, ok := out[k]; ok {
			return out
		}
	}
	out["additionalProperties"] = false
	return out
}

// WithJustification returns schema with a required string property
// "justification" added, for the schema quiver shows the model for an
// execution-class tool. An unreadable schema is returned unchanged.
func WithJustification(schema json.RawMessage) json.RawMessage {
	raw := bytes.TrimSpace(schema)
	if len(raw) == 0 {
		raw = []byte(`{"type":"object"}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return schema
	}
	props, _ := obj["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	if _, ok := props[justificationArg]; ok {
		return schema
	}
	props[justificationArg] = map[string]any{
		"type":        "string",
		"minLength":   1,
		"maxLength":   maxJustification,
		"description": "Why this command must run, in one or two sentences for the person approving it.",
	}
	obj["properties"] = props
	req, _ := obj["required"].([]any)
	obj["required"] = append(req, justificationArg)
	out, err := canonical(obj)
	if err != nil {
		return schema
	}
	return out
}

// printer renders library messages we pass through; messages are English.
func newPrinter() *message.Printer { return message.NewPrinter(language.English) }

// explain turns a validation error into plain sentences naming each field
// and what was expected. At most three problems are told: a model fixes
// the first ones and comes back.
func explain(err error, props []string) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var lines []string
	seen := map[string]bool{}
	collect(ve, props, &lines, seen, newPrinter())
	if len(lines) == 0 {
		return "the arguments do not match the tool's input schema"
	}
	more := ""
	if len(lines) > 3 {
		more = fmt.Sprintf(" (and %d more problems)", len(lines)-3)
		lines = lines[:3]
	}
	return strings.Join(lines, "; ") + more
}

func collect(e *jsonschema.ValidationError, props []string, out *[]string, seen map[string]bool, p *message.Printer) {
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			*out = append(*out, s)
		}
	}
	loc := fieldName(e.InstanceLocation)
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		if len(e.Causes) == 0 {
			add(fmt.Sprintf("%s matches more than one of the allowed forms", subject(loc)))
			return
		}
		// Name the first form's first problem only: the whole tree of
		// alternatives helps nobody correct a call.
		add(fmt.Sprintf("%s does not match any allowed form (first form: %s)", subject(loc), leafText(e.Causes[0], props, p)))
		return
	}
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			collect(c, props, out, seen, p)
		}
		return
	}
	add(leafText(e, props, p))
}

// leafText describes the first concrete problem under e.
func leafText(e *jsonschema.ValidationError, props []string, p *message.Printer) string {
	for len(e.Causes) > 0 {
		e = e.Causes[0]
	}
	loc := fieldName(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		var parts []string
		for _, m := range k.Missing {
			parts = append(parts, fmt.Sprintf("missing required field %q", join(loc, m)))
		}
		return strings.Join(parts, "; ")
	case *kind.AdditionalProperties:
		var parts []string
		for _, f := range k.Properties {
			parts = append(parts, unknownField(join(loc, f), loc == "", props))
		}
		return strings.Join(parts, "; ")
	case *kind.FalseSchema:
		if strings.HasSuffix(e.SchemaURL, "/unevaluatedProperties") || strings.HasSuffix(e.SchemaURL, "/additionalProperties") {
			return unknownField(loc, len(e.InstanceLocation) == 1, props)
		}
		return fmt.Sprintf("%s is not allowed here", subject(loc))
	case *kind.Type:
		if loc == "" {
			return fmt.Sprintf("the arguments must be %s, not %s", words(k.Want), article(k.Got))
		}
		return fmt.Sprintf("%s must be %s, not %s", subject(loc), words(k.Want), article(k.Got))
	case *kind.MinLength:
		return fmt.Sprintf("%s must be at least %d characters long", subject(loc), k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("%s must be at most %d characters long", subject(loc), k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("%s must have at least %d items", subject(loc), k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("%s must have at most %d items", subject(loc), k.Want)
	case *kind.Minimum:
		return fmt.Sprintf("%s must be at least %s", subject(loc), k.Want.RatString())
	case *kind.Maximum:
		return fmt.Sprintf("%s must be at most %s", subject(loc), k.Want.RatString())
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("%s must be greater than %s", subject(loc), k.Want.RatString())
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("%s must be less than %s", subject(loc), k.Want.RatString())
	case *kind.Pattern:
		return fmt.Sprintf("%s must match the pattern %s", subject(loc), k.Want)
	}
	return fmt.Sprintf("%s: %s", subject(loc), e.ErrorKind.LocalizedString(p))
}

func unknownField(name string, top bool, props []string) string {
	s := fmt.Sprintf("unknown field %q", name)
	if top {
		if len(props) == 0 {
			s += " (this tool takes no arguments)"
		} else {
			s += " (known fields: " + strings.Join(props, ", ") + ")"
		}
	}
	return s
}

func subject(loc string) string {
	if loc == "" {
		return "the arguments"
	}
	return fmt.Sprintf("field %q", loc)
}

func join(loc, field string) string {
	if loc == "" {
		return field
	}
	return loc + "." + field
}

// fieldName renders an instance location as a.b[0].c.
func fieldName(tokens []string) string {
	var sb strings.Builder
	for _, t := range tokens {
		if _, err := strconv.Atoi(t); err == nil && sb.Len() > 0 {
			sb.WriteString("[" + t + "]")
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(t)
	}
	return sb.String()
}

func words(types []string) string {
	var parts []string
	for _, t := range types {
		parts = append(parts, article(t))
	}
	return strings.Join(parts, " or ")
}

func article(t string) string {
	switch t {
	case "object", "array", "integer":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

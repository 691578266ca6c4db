package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// A Judge tells a definition diff what the gate makes of a definition, so
// that the changes that widen what a tool may do are called out. registry
// never imports gate: the caller supplies both.
type Judge struct {
	// PathArg reports whether the fence reads an argument of this name as
	// a path.
	PathArg func(name string) bool
	// Class is the action class the gate gives a tool with these
	// annotations (read, write, destructive, network...).
	Class func(a mcp.ToolAnnotation) string
}

// Kinds of change a Diff lists.
const (
	ChangeTitle        = "title"
	ChangeDescription  = "description"
	ChangeFieldAdded   = "field added"
	ChangeFieldRemoved = "field removed"
	ChangeFieldChanged = "field changed"
	ChangeSchema       = "schema changed" // a keyword of the schema itself, not of a field
	ChangeAnnotation   = "annotation"
	ChangeClass        = "class"
	ChangeName         = "name"     // same exposed name, another raw name ("list_notes" → "list.notes")
	ChangeNewTool      = "new tool" // first offered after its server's tools were pinned
)

// A DefChange is one difference between a pinned definition and a new one.
type DefChange struct {
	Kind string
	// Field names what changed: "input.path", "output.items[].id" for
	// fields (a dot per nesting, [] for an array's items), the keyword
	// for a schema or an annotation change, "" otherwise.
	Field string
	// Old and New are the values as text: descriptions whole, schemas
	// and hints as compact JSON, "" when absent.
	Old, New string
	// Flag says why this change matters most, or is "": a new argument the
	// fence reads as a path, a class change, text that addresses the model.
	Flag string
}

// A Diff lists how a definition changed, in the order the definition
// reads: title, description, input fields, output fields, annotations.
type Diff []DefChange

// Flags are the changes that matter most.
func (d Diff) Flags() []DefChange {
	return slices.DeleteFunc(slices.Clone(d), func(c DefChange) bool { return c.Flag == "" })
}

// Summary says what changed in counts and kinds only ("new tool", "2
// arguments added, description changed"), never a word the server
// chose, not even a field's name: it is what a model is told, and a
// server's text, names included, may address the model. The full diff
// is for a person (Text: quiver tools changes, the page).
func (d Diff) Summary() string {
	type kind struct {
		one, many string // "%d arguments added"
	}
	var order []string
	counts := map[string]int{}
	words := map[string]kind{}
	add := func(key string, k kind) {
		if counts[key] == 0 {
			order = append(order, key)
			words[key] = k
		}
		counts[key]++
	}
	for _, c := range d {
		where := "argument"
		if strings.HasPrefix(c.Field, "output") {
			where = "output field"
		}
		switch c.Kind {
		case ChangeNewTool:
			add(c.Kind, kind{"new tool", "new tool"})
		case ChangeName:
			add(c.Kind, kind{"name changed", "name changed"})
		case ChangeTitle, ChangeDescription:
			add(c.Kind, kind{c.Kind + " changed", c.Kind + " changed"})
		case ChangeFieldAdded, ChangeFieldRemoved, ChangeFieldChanged:
			verb := strings.TrimPrefix(c.Kind, "field ")
			add(where+c.Kind, kind{"1 " + where + " " + verb, "%d " + where + "s " + verb})
		case ChangeSchema:
			s := strings.SplitN(c.Field, ".", 2)[0] + " schema changed"
			add(s, kind{s, s})
		case ChangeAnnotation:
			add(c.Kind, kind{"1 annotation changed", "%d annotations changed"})
		case ChangeClass:
			// The gate's own words (read, write...), not the server's.
			s := fmt.Sprintf("class %s → %s", c.Old, c.New)
			add(s, kind{s, s})
		}
	}
	if len(order) == 0 {
		return "its definition changed"
	}
	parts := make([]string, len(order))
	for i, key := range order {
		k := words[key]
		parts[i] = k.one
		if n := counts[key]; n > 1 && strings.Contains(k.many, "%d") {
			parts[i] = fmt.Sprintf(k.many, n)
		}
	}
	return strings.Join(parts, ", ")
}

// safeName shows a field name a server chose: quoted if it has anything
// but name characters, and short.
func safeName(s string) string {
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	for _, r := range s {
		if !(r == '.' || r == '_' || r == '-' || r == '[' || r == ']' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}

// Short is the diff on one line, texts cut, for the log.
func (d Diff) Short() string {
	var parts []string
	for _, c := range d {
		s := c.Kind
		if c.Field != "" {
			s += " " + safeName(c.Field)
		}
		if c.Old != "" || c.New != "" {
			s += fmt.Sprintf(": %s → %s", c.value(c.Old, 60), c.value(c.New, 60))
		}
		if c.Flag != "" {
			s += " [!" + c.Flag + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// Text is the diff for a person, one change per line with its flag
// beneath, each line indented by indent. Texts are quoted so hidden
// characters show as escapes.
func (d Diff) Text(indent string) string {
	var b strings.Builder
	for _, c := range d {
		b.WriteString(indent + c.Kind)
		if c.Field != "" {
			b.WriteString(" " + safeName(c.Field))
		}
		switch {
		case c.Kind == ChangeDescription || c.Kind == ChangeTitle:
			fmt.Fprintf(&b, "\n%s  was: %s\n%s  now: %s", indent, shown(c.Old, 2000), indent, shown(c.New, 2000))
		case c.Old != "" || c.New != "":
			fmt.Fprintf(&b, ": %s → %s", c.value(c.Old, 200), c.value(c.New, 200))
		}
		b.WriteString("\n")
		if c.Flag != "" {
			b.WriteString(indent + "  ! " + c.Flag + "\n")
		}
	}
	return b.String()
}

// value shows one side of c: prose (a title, a description, an
// annotation's title) quoted, JSON and words as they are; either way
// hidden characters show as escapes and the text is cut to n bytes.
func (c DefChange) value(s string, n int) string {
	if c.Kind == ChangeTitle || c.Kind == ChangeDescription || (c.Kind == ChangeAnnotation && c.Field == "title") {
		return shown(s, n)
	}
	if s == "" {
		return "(none)"
	}
	var b strings.Builder
	for _, r := range cut(s, n) {
		switch {
		case r == '\n' || r == '\t' || !unicode.IsPrint(r) && r != ' ':
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	if len(s) > n {
		b.WriteString("…")
	}
	return b.String()
}

// cut is s cut to at most n bytes, on a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// shown quotes s (escaping hidden characters), cut to n bytes.
func shown(s string, n int) string {
	if s == "" {
		return "(none)"
	}
	if len(s) > n {
		return fmt.Sprintf("%q…", cut(s, n))
	}
	return fmt.Sprintf("%q", s)
}

// DiffDefinitions lists how new differs from old.
func DiffDefinitions(old, new Definition, j Judge) Diff {
	var d Diff
	switch {
	case old.Name == "":
		// Nothing was pinned: every part of it is new to the person.
		d = append(d, DefChange{Kind: ChangeNewTool, New: new.Name})
	case old.Name != new.Name:
		d = append(d, DefChange{Kind: ChangeName, Old: old.Name, New: new.Name,
			Flag: "another tool of the server under the name the model knows"})
	}
	if old.Title != new.Title {
		d = append(d, DefChange{Kind: ChangeTitle, Old: old.Title, New: new.Title, Flag: addressing(old.Title, new.Title)})
	}
	if old.Description != new.Description {
		d = append(d, DefChange{Kind: ChangeDescription, Old: old.Description, New: new.Description,
			Flag: addressing(old.Description, new.Description)})
	}
	d = append(d, diffSchema("input", decodeSchema(old.InputSchema), decodeSchema(new.InputSchema), j, true)...)
	d = append(d, diffSchema("output", decodeSchema(old.OutputSchema), decodeSchema(new.OutputSchema), j, false)...)
	d = append(d, duplicateKeys("input", old.InputSchema, new.InputSchema)...)
	d = append(d, duplicateKeys("output", old.OutputSchema, new.OutputSchema)...)
	oa, na := old.Annotations, new.Annotations
	if oa.Title == old.Title && na.Title == new.Title {
		// The title came from the annotations (a tool without one of its
		// own): its change is listed once, above.
		oa.Title, na.Title = "", ""
	}
	d = append(d, diffAnnotations(oa, na, j)...)
	return d
}

// duplicateKeys shows a schema that gives a key twice whole: the field
// diff reads it as Go does (the last one counts) and so cannot show the
// other reading, which the model is handed too.
func duplicateKeys(at string, old, new json.RawMessage) Diff {
	if !hasDuplicateKeys(new) || string(CanonicalSchema(old)) == string(CanonicalSchema(new)) {
		return nil
	}
	return Diff{{Kind: ChangeSchema, Field: at, Old: string(CanonicalSchema(old)), New: string(CanonicalSchema(new)),
		Flag: "it gives a key twice: readers differ on which one counts, and the model is handed both"}}
}

func decodeSchema(raw json.RawMessage) map[string]any {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// diffSchema compares two object schemas field by field: properties are
// followed into nested objects and array items; every other keyword of a
// field is compared as JSON.
func diffSchema(at string, old, new map[string]any, j Judge, input bool) Diff {
	var d Diff
	oldReq, newReq := required(old), required(new)
	oldProps, _ := old["properties"].(map[string]any)
	newProps, _ := new["properties"].(map[string]any)
	for _, k := range unionKeys(old, new) {
		if k == "properties" || k == "required" || k == "items" {
			continue
		}
		if o, n := jsonText(old[k]), jsonText(new[k]); o != n {
			c := DefChange{Kind: ChangeSchema, Field: at + "." + k, Old: o, New: n}
			if at != "input" && at != "output" {
				c.Kind = ChangeFieldChanged // a keyword of a field: input.limit.type
			}
			if k == "description" {
				c.Flag = addressing(str(old[k]), str(new[k]))
			}
			d = append(d, c)
		}
	}
	for _, k := range unionKeys(oldProps, newProps) {
		field := at + "." + k
		op, oin := oldProps[k].(map[string]any)
		np, nin := newProps[k].(map[string]any)
		_, oany := oldProps[k]
		_, nany := newProps[k]
		switch {
		case !oany:
			c := DefChange{Kind: ChangeFieldAdded, Field: field, New: fieldSummary(np, newReq[k])}
			var flags []string
			if input && j.PathArg != nil && j.PathArg(k) {
				flags = append(flags, "the fence reads this new argument as a path")
			}
			if f := addressing("", str(np["description"])); f != "" {
				flags = append(flags, "its description "+f)
			}
			c.Flag = strings.Join(flags, "; ")
			d = append(d, c)
		case !nany:
			d = append(d, DefChange{Kind: ChangeFieldRemoved, Field: field, Old: fieldSummary(op, oldReq[k])})
		default:
			if !oin || !nin {
				if o, n := jsonText(oldProps[k]), jsonText(newProps[k]); o != n {
					d = append(d, DefChange{Kind: ChangeFieldChanged, Field: field, Old: o, New: n})
				}
				continue
			}
			if oldReq[k] != newReq[k] {
				d = append(d, DefChange{Kind: ChangeFieldChanged, Field: field, Old: reqWord(oldReq[k]), New: reqWord(newReq[k])})
			}
			d = append(d, diffSchema(field, op, np, j, input)...)
			oi, _ := op["items"].(map[string]any)
			ni, _ := np["items"].(map[string]any)
			if oi != nil || ni != nil {
				d = append(d, diffSchema(field+"[]", oi, ni, j, input)...)
			}
		}
	}
	return d
}

func required(s map[string]any) map[string]bool {
	out := map[string]bool{}
	if rs, ok := s["required"].([]any); ok {
		for _, r := range rs {
			if name, ok := r.(string); ok {
				out[name] = true
			}
		}
	}
	return out
}

func reqWord(req bool) string {
	if req {
		return "required"
	}
	return "optional"
}

// fieldSummary is a field's type and whether it is required.
func fieldSummary(s map[string]any, req bool) string {
	t := jsonText(s["type"])
	if t == "" {
		t = "any type"
	}
	return strings.Trim(t, `"`) + ", " + reqWord(req)
}

func unionKeys(a, b map[string]any) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// jsonText is v as compact JSON with sorted keys, "" when v is absent.
func jsonText(v any) string {
	if v == nil {
		return ""
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimRight(buf.String(), "\n")
}

func str(v any) string { s, _ := v.(string); return s }

func diffAnnotations(old, new mcp.ToolAnnotation, j Judge) Diff {
	var d Diff
	hint := func(name string, o, n *bool) {
		if hintText(o) != hintText(n) {
			d = append(d, DefChange{Kind: ChangeAnnotation, Field: name, Old: hintText(o), New: hintText(n)})
		}
	}
	if old.Title != new.Title {
		d = append(d, DefChange{Kind: ChangeAnnotation, Field: "title", Old: old.Title, New: new.Title, Flag: addressing(old.Title, new.Title)})
	}
	hint("readOnlyHint", old.ReadOnlyHint, new.ReadOnlyHint)
	hint("destructiveHint", old.DestructiveHint, new.DestructiveHint)
	hint("idempotentHint", old.IdempotentHint, new.IdempotentHint)
	hint("openWorldHint", old.OpenWorldHint, new.OpenWorldHint)
	if j.Class != nil {
		if oc, nc := j.Class(old), j.Class(new); oc != nc {
			d = append(d, DefChange{Kind: ChangeClass, Old: oc, New: nc,
				Flag: fmt.Sprintf("the gate now treats it as %s, not %s", nc, oc)})
		}
	}
	return d
}

func hintText(b *bool) string {
	if b == nil {
		return "unset"
	}
	return fmt.Sprint(*b)
}

// modelPhrases are words with which a tool's text speaks to the model
// rather than describing the tool: the shape of a prompt injection.
var modelPhrases = []string{
	"ignore previous", "ignore all previous", "ignore the previous", "ignore prior", "ignore any previous",
	"ignore your instructions", "ignore the above", "disregard previous", "disregard all", "disregard the above",
	"forget previous", "forget your instructions", "you must", "you should always", "you are now", "you will now",
	"do not tell the user", "don't tell the user", "do not mention", "without telling", "without informing",
	"the user must not", "system prompt", "<important>", "<system>", "before using this tool", "before using any",
	"before calling any", "always call this tool", "new instructions", "as an ai",
}

// addressing says what in now speaks to the model that was not in was:
// phrases of instruction and hidden Unicode (the tags block, bidi
// controls, zero-width characters), or "".
func addressing(was, now string) string {
	if now == "" {
		return ""
	}
	oldFound := findings(was)
	var out []string
	for _, f := range findings(now) {
		if !slices.Contains(oldFound, f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "addresses the model: " + strings.Join(out, ", ")
}

func findings(s string) []string {
	var out []string
	var tags, bidi, zw int
	var plain strings.Builder
	for _, r := range s {
		switch {
		case r >= 0xE0000 && r <= 0xE007F:
			tags++
			if r >= 0xE0020 && r <= 0xE007E {
				plain.WriteRune(r - 0xE0000) // tag characters spell ASCII text a person cannot see
			}
			continue
		case r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			bidi++
			continue
		case r == 0x200b || r == 0x200c || r == 0x200d || r == 0x2060 || r == 0xfeff || r == 0x180e:
			zw++
			continue
		}
		plain.WriteRune(r)
	}
	text := strings.Join(strings.Fields(strings.ToLower(plain.String())), " ")
	for _, p := range modelPhrases {
		if strings.Contains(text, p) {
			out = append(out, fmt.Sprintf("%q", p))
		}
	}
	if tags > 0 {
		out = append(out, fmt.Sprintf("%d hidden tag characters (U+E0000–E007F)", tags))
	}
	if bidi > 0 {
		out = append(out, fmt.Sprintf("%d bidi control characters", bidi))
	}
	if zw > 0 {
		out = append(out, fmt.Sprintf("%d zero-width characters", zw))
	}
	return out
}

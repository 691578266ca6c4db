package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/gate"
)

// bound makes a downstream result safe to show: known secrets and
// credential shapes are redacted, and a result larger than limit bytes
// (serialized) is cut, with a notice saying how much, and
// _meta["quiver/truncated"] set so hosts can tell. The cut keeps as much
// readable text as fits: it is computed on the text's JSON form, so a
// result full of characters JSON escapes is not cut to nothing.
//
// Structured content is judged as the host will receive it: mcp-go sends
// RawStructuredContent (the downstream's own bytes) when it is set, so
// that is what is decoded, redacted and bounded. When the result is too
// big and the tool declares an output schema (outSchema), its structured
// content is shortened and must still validate, or the call becomes an
// error that says why: never an invalid result. Without a schema, the
// structured copy goes first, so the model keeps the readable part.
func bound(res *mcp.CallToolResult, limit int, redact func(string) string, outSchema json.RawMessage) *mcp.CallToolResult {
	for i, c := range res.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			if c.Meta != nil || c.Annotations != nil {
				res.Content[i] = redactContent(c, redact)
				continue
			}
			c.Text = redact(c.Text) // the common case, without a JSON round trip
			res.Content[i] = c
		default:
			// Links, embedded resources, images: every string in them
			// (a uri, a name, a resource's text) is checked.
			res.Content[i] = redactContent(c, redact)
		}
	}
	res.Content = redactAcross(res.Content, redact)
	if res.Meta != nil && len(res.Meta.AdditionalFields) > 0 {
		if r, changed := redactValue(res.Meta.AdditionalFields, redact); changed {
			res.Meta.AdditionalFields = r.(map[string]any)
		}
	}
	dropped := false
	if raw := res.RawStructuredContent; len(raw) > 0 {
		res.RawStructuredContent = nil
		res.StructuredContent = nil
		switch {
		case limit > 0 && len(raw) > 4*limit && len(outSchema) == 0:
			// It would be dropped below; decoding it first cost about
			// twenty times its size in memory (red team: 16 MiB, 341 MB).
			dropped = true
		case limit > 0 && len(raw) > 64*limit:
			return tooLarge(fmt.Sprintf(
				"the structured result is %d bytes, far over quiver's bound of %d; it is not shown. Ask for less: a narrower query or a range.", len(raw), limit))
		default:
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber() // 2^63-1 stays exact
			var v any
			if dec.Decode(&v) == nil {
				res.StructuredContent = v
			}
		}
	}
	if res.StructuredContent != nil {
		// Redact the decoded strings, not the encoding: JSON escapes
		// (&, <, >, quotes) would hide a secret from a match on the bytes.
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			var v any
			if dec.Decode(&v) == nil {
				r, _ := redactValue(v, redact)
				res.StructuredContent = r
			} else {
				res.StructuredContent = nil // cannot check it: show none of it
			}
		} else {
			res.StructuredContent = nil
		}
	}
	if dropped {
		// Say so, even when what is left fits.
		if res.Meta == nil {
			res.Meta = &mcp.Meta{}
		}
		if res.Meta.AdditionalFields == nil {
			res.Meta.AdditionalFields = map[string]any{}
		}
		res.Meta.AdditionalFields["quiver/truncated"] = true
	}
	if limit <= 0 || fits(res, limit) {
		return res
	}
	total := size(res)
	if total <= limit {
		return res
	}
	if res.StructuredContent != nil {
		if len(outSchema) == 0 {
			res.StructuredContent = nil
		} else if why := shortenStructured(res, limit/2, outSchema); why != "" {
			return tooLarge(fmt.Sprintf(
				"the result is %d bytes, over quiver's bound of %d, and cannot be shortened so that it still fits the tool's output schema (%s); it is not shown. Ask for less: a narrower query or a range.", total, limit, why))
		}
	}
	items := len(res.Content)
	// The longest notice it may become, so that the cut leaves room for it.
	res.Content = append(res.Content, mcp.NewTextContent(cutNote(total, total, items, items)))
	if res.Meta == nil {
		res.Meta = &mcp.Meta{}
	}
	if res.Meta.AdditionalFields == nil {
		res.Meta.AdditionalFields = map[string]any{}
	}
	res.Meta.AdditionalFields["quiver/truncated"] = true
	left := cutContent(res, limit)
	if size(res) > limit && len(res.Meta.AdditionalFields) > 1 {
		// What is left over the bound is the downstream's own _meta.
		res.Meta.AdditionalFields = map[string]any{"quiver/truncated": true}
	}
	res.Content[len(res.Content)-1] = mcp.NewTextContent(cutNote(max(0, total-size(res)), total, items-left, items))
	if n := size(res); n > limit {
		return tooLarge(fmt.Sprintf(
			"the result is %d bytes, over quiver's bound of %d, and is still %d bytes with its content left out; it is not shown. Ask for less: a narrower query or a range.", total, limit, n))
	}
	return res
}

const cutHere = "\n[quiver: output cut here: %d of %d bytes not shown; ask for less (a narrower query or a range)]"

// cutNote is the notice that ends a cut result: how many bytes are gone
// and, when whole items had to go too, how many.
func cutNote(gone, total, dropped, items int) string {
	if dropped == 0 {
		return fmt.Sprintf(cutHere, gone, total)
	}
	return fmt.Sprintf("\n[quiver: output cut here: %d of %d bytes not shown; %d of %d content items left out; ask for less (a narrower query or a range)]", gone, total, dropped, items)
}

// cutContent shortens res's content, whose last item is the notice, from
// the end until the whole result fits limit, and returns how many items
// are left before the notice. Shortening strings is not enough for a
// result of many small parts (red team: 100,000 one-character texts): a
// text cut to nothing is still an item sent, so it is left out, as are
// images, audio and resources, which cannot be cut in half. The bound is
// on the result's serialized size, whatever its shape.
func cutContent(res *mcp.CallToolResult, limit int) int {
	for pass := 0; pass < 4; pass++ {
		over := size(res) - limit
		if over <= 0 {
			break
		}
		notice := res.Content[len(res.Content)-1]
		end := len(res.Content) - 1 // the items before end are kept
		for end > 0 && over > 0 {
			if t, ok := res.Content[end-1].(mcp.TextContent); ok {
				n := jsonLen(t.Text)
				if keep := prefixWithin(t.Text, max(0, n-over)); keep > 0 {
					over -= n - jsonLen(t.Text[:keep])
					t.Text = t.Text[:keep]
					res.Content[end-1] = t
					break
				}
			}
			over -= itemSize(res.Content[end-1])
			end--
		}
		res.Content = append(res.Content[:end], notice)
	}
	return len(res.Content) - 1
}

// itemSize is what one content item adds to a result's JSON form, its
// comma included; a plain text's without encoding it, since a result of
// many small parts has many.
func itemSize(c mcp.Content) int {
	if t, ok := c.(mcp.TextContent); ok && t.Annotations == nil && t.Meta == nil {
		return jsonLen(t.Text) + len(`{"text":,"type":"text"},`)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return 1
	}
	return len(b) + 1
}

// redactAcross redacts what the host shows of content: adjacent text
// items, which a host shows one after another, read as one text. A secret
// split across two items (output streamed in chunks) is in neither alone;
// a run of text items whose joined text holds one is merged into one item
// (the first's annotations kept) and redacted whole. Runs without one are
// left as they are.
func redactAcross(content []mcp.Content, redact func(string) string) []mcp.Content {
	var out []mcp.Content // nil until a run is merged
	for i := 0; i < len(content); {
		j := i
		for j < len(content) && isText(content[j]) {
			j++
		}
		if j-i < 2 {
			if out != nil {
				out = append(out, content[i:max(j, i+1)]...)
			}
			i = max(j, i+1)
			continue
		}
		var b strings.Builder
		for _, c := range content[i:j] {
			b.WriteString(c.(mcp.TextContent).Text)
		}
		joined := b.String()
		r := redact(joined)
		if r == joined {
			if out != nil {
				out = append(out, content[i:j]...)
			}
			i = j
			continue
		}
		if out == nil {
			out = append(make([]mcp.Content, 0, len(content)), content[:i]...)
		}
		first := content[i].(mcp.TextContent)
		first.Text = r
		out = append(out, first)
		i = j
	}
	if out == nil {
		return content
	}
	return out
}

func isText(c mcp.Content) bool {
	_, ok := c.(mcp.TextContent)
	return ok
}

// leaveOut is the exit's last word on a message body still over budget
// once its long strings are cut (a result of many small parts, on any
// path): the items of its lists (a tool result's content, a resource's
// contents, a prompt's messages) go from the end, then its structured
// copy, then its _meta, until it fits. A tool result says so in a text
// item of its own.
func leaveOut(obj map[string]any, budget int) {
	size := jsonSize(obj)
	for _, key := range []string{"content", "contents", "messages"} {
		items, ok := obj[key].([]any)
		if !ok || size <= budget {
			continue
		}
		n := len(items)
		for len(items) > 0 && size > budget {
			size -= jsonSize(items[len(items)-1]) + 1
			items = items[:len(items)-1]
		}
		if key == "content" {
			note := fmt.Sprintf("\n[quiver: %d of %d content items left out; ask for less (a narrower query or a range)]", n-len(items), n)
			items = append(items, map[string]any{"type": "text", "text": note})
		}
		obj[key] = items
		size = jsonSize(obj)
	}
	for _, key := range []string{"structuredContent", "_meta"} {
		if _, ok := obj[key]; ok && size > budget {
			delete(obj, key)
			size = jsonSize(obj)
		}
	}
}

// shortenStructured cuts res's structured content to about budget bytes
// and checks it against the tool's output schema; it returns why it could
// not, or "".
func shortenStructured(res *mcp.CallToolResult, budget int, outSchema json.RawMessage) string {
	v := res.StructuredContent
	over := jsonSize(v) - budget
	if over > 0 && !shorten(v, over) {
		return "nothing in it can be cut"
	}
	if jsonSize(v) > budget+boundSlack {
		return "what is left is still too large"
	}
	sch, err := compileOutputSchema(outSchema)
	if err != nil {
		return "its output schema cannot be read: " + err.Error()
	}
	if err := sch.Validate(v); err != nil {
		return "the shortened result would not fit it"
	}
	res.StructuredContent = v
	return ""
}

// compileOutputSchema compiles a tool's output schema for checking a
// shortened result (rare: only results over the bound get here).
func compileOutputSchema(schema json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("output.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("output.json")
}

// tooLarge is the refusal of a result quiver cannot show within its bound:
// the code and sentence every refusal has (builtin.Refusal), marked as
// truncated.
func tooLarge(reason string) *mcp.CallToolResult {
	res := builtin.Refusal(gate.CodeResultTooLarge, reason)
	res.Meta = truncatedMeta()
	return res
}

func truncatedMeta() *mcp.Meta {
	return &mcp.Meta{AdditionalFields: map[string]any{"quiver/truncated": true}}
}

// fits reports, without serializing, whether a text-only result is surely
// within limit: every result passes here, and marshalling a large one
// twice to learn that it fits cost more than the call it carried.
func fits(res *mcp.CallToolResult, limit int) bool {
	if res.StructuredContent != nil || res.Meta != nil {
		return false
	}
	n := 128
	for _, c := range res.Content {
		t, ok := c.(mcp.TextContent)
		if !ok || t.Annotations != nil || t.Meta != nil || !utf8.ValidString(t.Text) {
			return false
		}
		n += 64 + jsonLenBound(t.Text)
	}
	return n <= limit
}

// jsonLenBound is at least the length of valid UTF-8 s as a JSON string:
// encoding/json writes <, >, & and control bytes as \u00XX, quotes and
// backslashes with a backslash, and U+2028 and U+2029 (3 bytes) as 6-byte
// escapes, which 2 per non-ASCII byte covers.
func jsonLenBound(s string) int {
	n := 2
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b < 0x20, b == '<', b == '>', b == '&':
			n += 6
		case b == '"', b == '\\', b >= 0x80:
			n += 2
		default:
			n++
		}
	}
	return n
}

func size(res *mcp.CallToolResult) int {
	b, err := json.Marshal(res)
	if err != nil {
		return 0
	}
	return len(b)
}

// redactValue redacts every string (and object key) in a decoded JSON
// value, reporting whether anything changed.
// redactor hides the configuration's secrets and credential shapes in a
// string.
func (s *Server) redactor() func(string) string { return s.current().redact.Redact }

// redactErr is err with the configuration's secrets hidden in its text.
// It wraps nothing: mcp-go would find a wrapped error with data of its own
// (a URL elicitation) and send that data as it is.
func (s *Server) redactErr(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(s.redactor()(err.Error()))
}

// redactSchema is an input schema with secrets hidden (a default taken
// from the environment, a description quoting a key). A schema with none
// passes byte for byte; one that cannot be decoded is passed as it is,
// since the model must still be able to call the tool.
func redactSchema(schema json.RawMessage, redact func(string) string) json.RawMessage {
	var v any
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber() // numbers pass exactly, as pinned
	if len(schema) == 0 || dec.Decode(&v) != nil {
		return schema
	}
	r, changed := redactValue(v, redact)
	if !changed {
		return schema
	}
	b, err := json.Marshal(r)
	if err != nil {
		return schema
	}
	return b
}

// redactList is a downstream listing (prompts, resources, templates) with
// secrets hidden in every string, or nil when it cannot be checked.
func redactList[T any](s *Server, list []T) []T {
	out, ok := redactJSON(list, s.redactor(), func(b json.RawMessage) ([]T, error) {
		var v []T
		return v, json.Unmarshal(b, &v)
	})
	if !ok {
		return nil
	}
	return out
}

// redactJSON hides secrets in every string of v, whatever its shape, by
// way of its JSON form; parse turns the redacted form back into v's type.
// When that fails the value is not shown at all: ok is false.
func redactJSON[T any](v T, redact func(string) string, parse func(json.RawMessage) (T, error)) (out T, ok bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return out, false
	}
	var x any
	if json.Unmarshal(b, &x) != nil {
		return out, false
	}
	r, changed := redactValue(x, redact)
	if !changed {
		return v, true
	}
	rb, err := json.Marshal(r)
	if err != nil {
		return out, false
	}
	if out, err = parse(rb); err != nil {
		return out, false
	}
	return out, true
}

// redactContent is one content item with its secrets hidden, or a notice
// in its place when it cannot be checked.
func redactContent(c mcp.Content, redact func(string) string) mcp.Content {
	out, ok := redactJSON(c, redact, func(b json.RawMessage) (mcp.Content, error) {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		return mcp.ParseContent(m)
	})
	if !ok {
		return mcp.NewTextContent("[quiver: a content item was left out: it could not be checked for secrets]")
	}
	return out
}

func redactValue(v any, redact func(string) string) (any, bool) {
	switch x := v.(type) {
	case string:
		r := redact(x)
		return r, r != x
	case json.Number:
		// A number is judged by its value (a digits-only secret as
		// 7.39182046551e11): one that spells a secret becomes the mark,
		// a string.
		if r := redact(string(x)); r != string(x) {
			return r, true
		}
		return x, false
	case []any:
		changed := false
		for i, e := range x {
			if r, c := redactValue(e, redact); c {
				x[i], changed = r, true
			}
		}
		return x, changed
	case map[string]any:
		changed := false
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, c := redactValue(e, redact)
			rk := redact(k)
			if str, ok := e.(string); ok && !c && rk == k {
				// A reader reads a key with its value: a secret split
				// between them ({"Zq7Kp2Lm": "9Xw4Vb8N"}) is judged
				// joined, as the redactor reads a space (its skeleton),
				// and both go (red team rt1, A18).
				if joined := k + " " + str; redact(joined) != joined {
					rk, r, c = redact(joined), "[redacted]", true
				}
			}
			changed = changed || c || rk != k
			out[rk] = r
		}
		return out, changed
	}
	return v, false
}

// fitParams brings a notification's params within budget by leaving out,
// from the end, what its largest containers hold: array items in order,
// object members in key order. Small fields (a level, a logger's name, a
// progress token) are kept whole.
func fitParams(obj map[string]any, budget int) {
	keys := slices.Sorted(maps.Keys(obj))
	slices.SortStableFunc(keys, func(a, b string) int { return jsonSize(obj[b]) - jsonSize(obj[a]) })
	for _, k := range keys {
		size := jsonSize(obj)
		if size <= budget {
			return
		}
		if k == "_meta" {
			continue
		}
		obj[k] = fitValue(obj[k], jsonSize(obj[k])-(size-budget))
	}
}

// fitValue returns v with what does not fit in budget bytes left out:
// the items of an array from its end, the members of an object in key
// order; a scalar is returned as it is.
func fitValue(v any, budget int) any {
	if jsonSize(v) <= budget {
		return v
	}
	used := 2 // the brackets
	switch x := v.(type) {
	case []any:
		out := make([]any, 0, len(x))
		for _, it := range x {
			n := jsonSize(it) + 1
			if used+n > budget {
				break
			}
			out = append(out, it)
			used += n
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			n := jsonLen(k) + 1 + jsonSize(x[k]) + 1
			if used+n > budget {
				continue
			}
			out[k] = x[k]
			used += n
		}
		return out
	}
	return v
}

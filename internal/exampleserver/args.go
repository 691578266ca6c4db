package exampleserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// hints are a tool's behaviour annotations. Every tool sets all four, so a
// client never falls back to the spec's pessimistic defaults (destructive,
// open world) for a local, read-only tool.
type hints struct {
	readOnly, destructive, idempotent, openWorld bool
}

// readOnly is the hint set of a tool that only reads local state.
func readOnly() hints { return hints{readOnly: true, idempotent: true} }

// newTool builds a tool definition around a hand-written JSON Schema. The raw
// schema reaches the wire byte for byte; InputSchema stays zero because mcp-go
// refuses to marshal a tool that has both.
func newTool(name, title, description, schema string, h hints) mcp.Tool {
	return mcp.Tool{
		Name:           name,
		Title:          title,
		Description:    description,
		RawInputSchema: json.RawMessage(schema),
		Annotations: mcp.ToolAnnotation{
			Title:           title,
			ReadOnlyHint:    mcp.ToBoolPtr(h.readOnly),
			DestructiveHint: mcp.ToBoolPtr(h.destructive),
			IdempotentHint:  mcp.ToBoolPtr(h.idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(h.openWorld),
		},
	}
}

// rawArguments returns the call's arguments as JSON exactly as they arrived.
// mcp-go keeps the wire bytes in Params.RawArguments; a request built in Go
// without them is re-encoded from Params.Arguments, and a call without
// arguments reads as {}.
func rawArguments(req mcp.CallToolRequest) (json.RawMessage, error) {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments, nil
	}
	if req.Params.Arguments == nil {
		return json.RawMessage("{}"), nil
	}
	return json.Marshal(req.Params.Arguments)
}

// decodeArgs decodes a call's arguments into dst, a pointer to a struct,
// rejecting unknown arguments. It returns "" on success and otherwise one
// sentence, meant for the model, saying what was wrong.
func decodeArgs(req mcp.CallToolRequest, dst any) string {
	raw, err := rawArguments(req)
	if err != nil {
		return fmt.Sprintf("The arguments could not be encoded as JSON (%v).", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err = dec.Decode(dst)
	if err == nil {
		return ""
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		got := describeJSONValue(typeErr.Value)
		if typeErr.Field == "" {
			return fmt.Sprintf("The arguments must be a JSON object, not %s.", got)
		}
		if isElementOf(dst, typeErr.Field, typeErr.Type) {
			return fmt.Sprintf("Every item of argument %q must be %s, not %s.", typeErr.Field, describeGoType(typeErr.Type), got)
		}
		return fmt.Sprintf("Argument %q must be %s, not %s.", typeErr.Field, describeGoType(typeErr.Type), got)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Sprintf("Unknown argument %s.", name)
	}
	return fmt.Sprintf("The arguments are not valid JSON (%v).", err)
}

// isElementOf reports whether the struct dst points to has a slice field with
// JSON name field whose element type is elem: encoding/json reports a bad
// array item with the array's name and the item's type.
func isElementOf(dst any, field string, elem reflect.Type) bool {
	t := reflect.TypeOf(dst)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return false
	}
	for f := range t.Elem().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == field {
			return f.Type.Kind() == reflect.Slice && f.Type.Elem() == elem
		}
	}
	return false
}

// describeJSONValue turns encoding/json's description of a JSON value
// ("number 1.5", "string", "bool") into words.
func describeJSONValue(v string) string {
	switch {
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ")
	case v == "bool":
		return "a boolean"
	case v == "array" || v == "object":
		return "an " + v
	default:
		return "a " + v
	}
}

// describeGoType names the JSON type a Go destination type expects.
func describeGoType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return describeGoType(t.Elem())
	default:
		return "an object"
	}
}

// callError is the tool result for a call the model got wrong: the problem,
// then a correct call to copy.
func callError(problem, example string) *mcp.CallToolResult {
	return mcp.NewToolResultError(problem + " Example arguments: " + example)
}

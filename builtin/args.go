package builtin

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// decodeArgs reads a builtin's arguments into v strictly: a field the
// tool does not take is an error (so a misspelt one is named, not
// ignored), and absent or null arguments are {}. plain(err) says what was
// wrong in words a model can act on.
func decodeArgs(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(orEmpty(raw)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// plain turns a json decoding error into words a model can act on.
func plain(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "json: ")
	if strings.HasPrefix(msg, "unknown field") {
		return msg + " (only the fields above are accepted)"
	}
	if strings.Contains(msg, "cannot unmarshal") {
		return "the arguments have the wrong type: " + msg
	}
	return "the arguments are not a JSON object: " + msg
}

// Refusal is the result quiver returns for a call it does not run:
// isError, the code first so hosts and people can grep it, then the
// sentence; the structured content carries both.
func Refusal(code, reason string) *mcp.CallToolResult {
	res := mcp.NewToolResultError(code + ": " + reason)
	res.StructuredContent = map[string]any{"code": code, "reason": reason}
	return res
}

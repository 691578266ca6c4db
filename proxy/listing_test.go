package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/quiver-mcp/quiver/registry"
)

// A tool's output schema is listed as the server wrote it: without it a
// host cannot check structured results (it was dropped from every list).
func TestOutputSchemaIsListed(t *testing.T) {
	t.Parallel()
	tool := registry.Tool{Server: "ex", Name: "stats", Exposed: "ex__stats",
		InputSchema:  json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`)}
	r := newRig(t, rigServer+"surface:\n  always_on: [ex__stats]\n", tool)
	if got := string(r.connect("s").listBytes()); !strings.Contains(got, `"outputSchema":{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`) {
		t.Fatalf("tools/list: %s", got)
	}
}

// A refusal of a tool with an output schema carries its code and sentence
// in text only: the TypeScript SDK checks structured content against the
// schema even on an error, and {code, reason} fails a schema that
// requires "count", so the host saw "does not match the tool's output
// schema" instead of the refusal.
func TestRefusalOfAToolWithAnOutputSchema(t *testing.T) {
	t.Parallel()
	tool := registry.Tool{Server: "ex", Name: "stats", Exposed: "ex__stats",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`)}
	plain := registry.Tool{Server: "ex", Name: "plain", Exposed: "ex__plain",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}`)}
	r := newRig(t, rigServer+"surface:\n  always_on: [ex__stats, ex__plain]\n", tool, plain)
	c := r.connect("s")
	res := c.call("ex__stats", map[string]any{"bogus": 1})
	if !res.IsError || res.StructuredContent != nil || !strings.HasPrefix(res.text(), "deny.") {
		t.Fatalf("refusal of a tool with an output schema: error=%v structured=%v %q", res.IsError, res.StructuredContent, res.text())
	}
	// A tool without one keeps the code as structured content too.
	res = c.call("ex__plain", map[string]any{"bogus": 1})
	if code, _ := res.StructuredContent["code"].(string); !res.IsError || !strings.HasPrefix(res.text(), code+": ") || code == "" {
		t.Fatalf("refusal of a tool without an output schema: error=%v structured=%v %q", res.IsError, res.StructuredContent, res.text())
	}
}

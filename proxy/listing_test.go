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
	tool := registry.Tool{Server: "ex", Name: "stats", Exposed: "ex__stats",
		InputSchema:  json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`)}
	r := newRig(t, rigServer+"surface:\n  always_on: [ex__stats]\n", tool)
	if got := string(r.connect("s").listBytes()); !strings.Contains(got, `"outputSchema":{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`) {
		t.Fatalf("tools/list: %s", got)
	}
}

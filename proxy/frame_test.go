package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// path_base in servers.yaml reaches the gate: a repository's relative
// path is no file here under path_base: none, and is outside where the
// server declares nothing.
func TestPathBaseReachesTheGate(t *testing.T) {
	yes := true
	get := registry.Tool{Server: "ex", Name: "get_file", Exposed: "ex__get_file", Annotations: mcp.ToolAnnotation{ReadOnlyHint: &yes},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
	for _, tc := range []struct {
		entry, path, want string
	}{
		{"    path_base: none\n", "README.md", ""},
		{"    path_base: none\n", "/etc/hostname", codeApprovalUnavailable},
		{"", "README.md", codeApprovalUnavailable},
	} {
		r := newRig(t, rigServer+tc.entry+"surface:\n  always_on: [ex__get_file]\n", get)
		res := r.connect("s").call("ex__get_file", map[string]any{"path": tc.path})
		wantCode(t, res, tc.want)
		if tc.want != "" && !strings.Contains(res.text(), gate.CapReadOutside) {
			t.Errorf("%q %q: want an ask about reading outside, got %s", tc.entry, tc.path, res.text())
		}
	}
}

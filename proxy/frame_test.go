package proxy

import (
	"encoding/json"
	"os"
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
		// The rig's server runs in quiver's folder; this package's folder
		// is not in its fence, so a relative name there is outside.
		{"    path_base: cwd\n", "README.md", codeApprovalUnavailable},
		{"    path_base: cwd\nfence:\n  allowed_dirs: [\"" + mustWd(t) + "\"]\n", "README.md", ""},
	} {
		r := newRig(t, rigServer+tc.entry+"surface:\n  always_on: [ex__get_file]\n", get)
		res := r.connect("s").call("ex__get_file", map[string]any{"path": tc.path})
		wantCode(t, res, tc.want)
		if tc.want != "" && !strings.Contains(res.text(), gate.CapReadOutside) {
			t.Errorf("%q %q: want an ask about reading outside, got %s", tc.entry, tc.path, res.text())
		}
	}
}

func mustWd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

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
		{"    path_base: none\n", "/etc/hostname", gate.CodeApprovalUnavailable},
		{"", "README.md", gate.CodeApprovalUnavailable},
		// The rig's server declares no cwd: it runs in an empty folder
		// of quiver's (in the state dir, inside the fence, emptied before
		// each start), never quiver's working folder; a name climbing
		// out of it reaches quiver's state.
		{"    path_base: cwd\n", "README.md", ""},
		{"    path_base: cwd\n", "../../../ledger.db", gate.CodeProtectedPath},
		// Declared, the folder is the server's, and so are its names.
		{"    cwd: \"" + mustWd(t) + "\"\n    path_base: cwd\n", "README.md", gate.CodeApprovalUnavailable},
		{"    cwd: \"" + mustWd(t) + "\"\n    path_base: cwd\nfence:\n  allowed_dirs: [\"" + mustWd(t) + "\"]\n", "README.md", ""},
	} {
		r := newRig(t, rigServer+tc.entry+"surface:\n  always_on: [ex__get_file]\n", get)
		res := r.connect("s").call("ex__get_file", map[string]any{"path": tc.path})
		wantCode(t, res, tc.want)
		if tc.want == gate.CodeApprovalUnavailable && !strings.Contains(res.text(), gate.CapReadOutside) {
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

// A server-filesystem process serves every session and keeps the last
// roots any of them gave it; a relative name is judged against all of
// them, whichever session calls (red team: B read "secret.txt" from A's
// root).
func TestRootsGivenByAnySessionAreBases(t *testing.T) {
	yes := true
	read := registry.Tool{Server: "ex", Name: "read", Exposed: "ex__read", Annotations: mcp.ToolAnnotation{ReadOnlyHint: &yes},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
	inside, other := t.TempDir(), t.TempDir()
	r := newRig(t, "servers:\n  ex:\n    command: never-started\n    args: ["+inside+"]\n    path_base: roots\nfence:\n  allowed_dirs: ["+inside+"]\nsurface:\n  always_on: [ex__read]\n", read)
	b := r.connect("b")
	wantCode(t, b.call("ex__read", map[string]any{"path": "notes.txt"}), "")
	r.s.relay.gaveRoots("ex", []mcp.Root{{URI: "file://" + other}}) // session A's, long gone
	res := b.call("ex__read", map[string]any{"path": "notes.txt"})
	wantCode(t, res, gate.CodeApprovalUnavailable)
	if !strings.Contains(res.text(), other) {
		t.Fatalf("the refusal does not name the other root's reading: %s", res.text())
	}
}

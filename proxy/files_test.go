package proxy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/registry"
)

// read_file opens the path the gate resolved, so what it reads is the file
// the fence judged: a link swapped after the decision cannot redirect it.
func TestReadFileOpensWhatTheGateResolved(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "sub"), 0o700)
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the notes"), 0o600)
	os.Symlink(filepath.Join(root, "notes.txt"), filepath.Join(root, "link"))
	cfg, err := registry.ParseConfig("test.yaml", []byte("fence:\n  allowed_dirs: ["+root+"]\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	c, err := client.NewInProcessClient(s.MCPServer())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c.Start(ctx)
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		filepath.Join(root, "notes.txt"),
		filepath.Join(root, "link"),
		filepath.Join(root, "sub", "..", "notes.txt"),
	} {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "read_file", map[string]any{"path": p}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); res.IsError || !strings.Contains(got, "the notes") {
			t.Errorf("read_file %q: %s", p, got)
		}
	}
}

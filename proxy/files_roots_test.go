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

type fixedRoots []string

func (r fixedRoots) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	res := &mcp.ListRootsResult{}
	for _, u := range r {
		res.Roots = append(res.Roots, mcp.Root{URI: u, Name: "work"})
	}
	return res, nil
}

// read_file is fenced "exactly as any downstream read tool": a file under
// one of the session's MCP roots is inside the fence.
func TestReadFileHonoursSessionRoots(t *testing.T) {
	cfg, err := registry.ParseConfig("test.yaml", []byte("surface: {}\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "notes.txt")
	if err := os.WriteFile(file, []byte("inside the root"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewInProcessClientWithOptions(s.MCPServer(), client.WithRootsHandler(fixedRoots{"file://" + root}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.Capabilities.Roots = &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "read_file"
	req.Params.Arguments = map[string]any{"path": file}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	if res.IsError || !strings.Contains(strings.Join(text, "\n"), "inside the root") {
		t.Fatalf("read_file of a file under the session's root: %v", text)
	}
}

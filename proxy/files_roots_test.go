package proxy

import (
	"context"
	"errors"
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

// flakyRoots fails its first roots/list, as a slow or busy client might.
type flakyRoots struct {
	fixedRoots
	calls int
}

func (r *flakyRoots) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	r.calls++
	if r.calls == 1 {
		return nil, errors.New("busy")
	}
	return r.fixedRoots.ListRoots(ctx, req)
}

// read_file is fenced "exactly as any downstream read tool": a file under
// one of the session's MCP roots is inside the fence.
func TestReadFileHonoursSessionRoots(t *testing.T) {
	readUnderRoot(t, func(root string) client.RootsHandler { return fixedRoots{"file://" + root} }, 1)
}

// A failed roots/list is not remembered: the next call asks again, and
// the client's roots count from then on.
func TestFailedRootsAreAskedAgain(t *testing.T) {
	readUnderRoot(t, func(root string) client.RootsHandler { return &flakyRoots{fixedRoots: fixedRoots{"file://" + root}} }, 2)
}

// readUnderRoot reads a file under the client's root attempts times and
// wants the last attempt to succeed.
func readUnderRoot(t *testing.T, handler func(root string) client.RootsHandler, attempts int) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "notes.txt")
	if err := os.WriteFile(file, []byte("inside the root"), 0o600); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.Capabilities.Roots = &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{}
	c := inProcess(t, "surface: {}\n", init, client.WithRootsHandler(handler(root)))
	ctx := context.Background()
	req := mcp.CallToolRequest{}
	req.Params.Name = "read_file"
	req.Params.Arguments = map[string]any{"path": file}
	var res *mcp.CallToolResult
	for range attempts {
		if res, err = c.CallTool(ctx, req); err != nil {
			t.Fatal(err)
		}
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

// inProcess runs a Server on cfgText with no downstream servers and
// returns an initialized in-process client.
func inProcess(t *testing.T, cfgText string, init mcp.InitializeRequest, opts ...client.ClientOption) *client.Client {
	t.Helper()
	cfg, err := registry.ParseConfig("test.yaml", []byte(cfgText), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	c, err := client.NewInProcessClientWithOptions(s.MCPServer(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

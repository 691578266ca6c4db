package proxy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/internal/exampleserver"
	"github.com/quiver-mcp/quiver/registry"
)

// The test binary doubles as a downstream server: with this variable set
// it serves quiver's example server on stdio instead of running tests.
const childEnv = "QUIVER_PROXY_TEST_EXAMPLE"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "leaky" {
		if err := serveLeaky(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv(childEnv) == "1" {
		// Notes in memory: a notes file would outlive the test that
		// wrote it (no test reads one back).
		err := exampleserver.Serve(context.Background(), exampleserver.Options{TestTools: true}, os.Stdin, os.Stdout)
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// newTestServer runs a proxy in front of the example server (this test
// binary) and returns an in-process client connected to it.
func newTestServer(tb testing.TB, surface string) (*Server, *client.Client) {
	return newTestServerWith(tb, surface, Options{StateDir: tb.TempDir()})
}

func newTestServerWith(tb testing.TB, surface string, opts Options) (*Server, *client.Client) {
	tb.Helper()
	yaml := fmt.Sprintf("%s\nservers:\n  example:\n    command: %q\n    env: {%s: \"1\"}\n", surface, os.Args[0], childEnv)
	cfg, err := registry.ParseConfig("servers.yaml", []byte(yaml), os.LookupEnv)
	if err != nil {
		tb.Fatal(err)
	}
	return startTestServer(tb, cfg, opts)
}

// connectInProcess connects one more in-process client (a session of its
// own) to s.
func connectInProcess(tb testing.TB, s *Server) *client.Client {
	tb.Helper()
	c, err := client.NewInProcessClient(s.MCPServer())
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := c.Initialize(context.Background(), init); err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestExampleChildLeavesNoFiles: the example server this binary serves
// for the tests writes nothing outside the test's own directories (it
// used to keep its notes in os.TempDir(), one file per child, never
// removed).
func TestExampleChildLeavesNoFiles(t *testing.T) {
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "quiver-proxy-test-*"))
	_, c := newTestServer(t, "surface: {reveal: direct}")
	req := mcp.CallToolRequest{}
	req.Params.Name = "example__notes_add"
	req.Params.Arguments = map[string]any{"title": "left behind?", "body": "no"}
	res, err := c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		t.Fatalf("notes_add: %v %v", err, res)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "quiver-proxy-test-*"))
	for _, f := range after {
		if !slices.Contains(before, f) {
			os.Remove(f)
			t.Errorf("the example server left %s behind", f)
		}
	}
}

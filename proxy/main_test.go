package proxy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
		err := exampleserver.Serve(context.Background(), exampleserver.Options{
			NotesFile: filepath.Join(os.TempDir(), fmt.Sprintf("quiver-proxy-test-%d.json", os.Getpid())), TestTools: true,
		}, os.Stdin, os.Stdout)
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

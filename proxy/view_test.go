package proxy

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/registry"
)

// TestReloadMidCallKeepsTheCallsSnapshot reloads the configuration while a
// call is at its downstream server: the call was resolved and decided
// under the old configuration, and it finishes under it too (its result
// bounded by the old max_result_bytes), not under a mix of the old
// catalog and the new settings. The next call has the new ones.
func TestReloadMidCallKeepsTheCallsSnapshot(t *testing.T) {
	const small, large = "surface: {reveal: direct, max_result_bytes: 1024}\n", "surface: {reveal: direct, max_result_bytes: 65536}\n"
	cfgText := func(surface string) string { return surface + "servers:\n  big:\n    command: in-process\n" }
	long := strings.Repeat("0123456789abcdef", 500) // 8000 bytes

	var s *Server
	reload := make(chan bool, 1) // whether the next call reloads first
	big := server.NewMCPServer("big", "1")
	big.AddTool(mcp.NewTool("dump", mcp.WithDescription("Dump a long text."), mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if <-reload {
			cfg, err := registry.ParseConfig("servers.yaml", []byte(cfgText(large)), func(string) (string, bool) { return "", false })
			if err != nil {
				return nil, err
			}
			if err := s.Reload(ctx, cfg); err != nil {
				return nil, err
			}
		}
		return mcp.NewToolResultText(long), nil
	})
	s, c := newInProcessServer(t, cfgText(small), Options{}, map[string]*server.MCPServer{"big": big})

	reload <- true
	first := callText(t, c, "big__dump", map[string]any{})
	if got := s.Config().Surface.MaxResultBytes; got != 65536 {
		t.Fatalf("the reload did not take: max_result_bytes %d (%.300s)", got, first)
	}
	if len(first) > 2048 || !strings.HasPrefix(first, long[:512]) {
		t.Fatalf("the call that began under max_result_bytes 1024 came back with %d bytes: it was finished under the reloaded configuration", len(first))
	}
	reload <- false
	if second := callText(t, c, "big__dump", map[string]any{}); second != long {
		t.Fatalf("the call after the reload came back with %d bytes, want all %d", len(second), len(long))
	}
}

package proxy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/registry"
)

// TestReloadUpdatesSlashCommands: a slash command added to servers.yaml is
// offered after the reload, one removed is gone, and the downstream
// server is left alone.
func TestReloadUpdatesSlashCommands(t *testing.T) {
	withSlash := func(name string) string {
		return fmt.Sprintf("slash:\n  %s:\n    description: Look at the notes.\n    tools: [example__notes_list]\n    activity: review\n", name)
	}
	s, c := newTestServer(t, withSlash("review"))
	prompts := func() []string {
		t.Helper()
		res, err := c.ListPrompts(context.Background(), mcp.ListPromptsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range res.Prompts {
			names = append(names, p.Name)
		}
		return names
	}
	if got := prompts(); !slices.Contains(got, "review") {
		t.Fatalf("prompts before the reload = %v", got)
	}
	// The same server entry newTestServer wrote, so only the slash commands change.
	servers := fmt.Sprintf("\nservers:\n  example:\n    command: %q\n    env: {%s: \"1\"}\n", os.Args[0], childEnv)
	cfg, err := registry.ParseConfig("servers.yaml", []byte(withSlash("audit")+servers), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	got := prompts()
	if !slices.Contains(got, "audit") || slices.Contains(got, "review") {
		t.Fatalf("prompts after the reload = %v, want audit and not review", got)
	}
	res, err := c.GetPrompt(context.Background(), mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "audit"}})
	if err != nil || len(res.Messages) == 0 {
		t.Fatalf("prompts/get of the new command: %v %v", res, err)
	}
}

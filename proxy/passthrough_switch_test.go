package proxy

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// TestPassThroughIsSwitchedOffLikeTools: a server switched off in
// tools.yaml ("leaky__*") or by tools_default: off is off for every door:
// its prompts/get and resources/read are refused with deny.withheld as
// its tools are, and never reach it (red team 2: they did).
func TestPassThroughIsSwitchedOffLikeTools(t *testing.T) {
	for name, tc := range map[string]struct{ entry, toggles string }{
		"tools_yaml":        {"", "disabled:\n  - \"leaky__*\"\n"},
		"tools_default_off": {"    tools_default: off\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			yaml := fmt.Sprintf("surface: {reveal: direct}\nservers:\n  leaky:\n    command: %q\n    env: {%s: leaky, TOKEN: quoted}\n%s", os.Args[0], childEnv, tc.entry)
			cfg, err := registry.ParseConfig("servers.yaml", []byte(yaml), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Toggles, err = registry.ParseToggles("tools.yaml", []byte(tc.toggles)); err != nil {
				t.Fatal(err)
			}
			s, err := New(cfg, Options{StateDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			s.Start(context.Background())
			t.Cleanup(func() { s.Close() })
			<-s.Ready()
			c := connectInProcess(t, s)
			ctx := context.Background()
			req := mcp.CallToolRequest{}
			req.Params.Name = "leaky__leak"
			if res, err := c.CallTool(ctx, req); err != nil || !strings.Contains(fmt.Sprint(res.Content), gate.CodeWithheld) {
				t.Fatalf("control: the switched-off tool was not withheld: %v %v", res, err)
			}
			pr, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "leaky__quote"}})
			if err == nil || !strings.Contains(err.Error(), gate.CodeWithheld) || !strings.Contains(err.Error(), "leaky__prompts.get") {
				t.Errorf("prompts/get of a switched-off server: %v, %v; want a refusal %s naming leaky__prompts.get", pr, err, gate.CodeWithheld)
			}
			rr, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "leak://token"}})
			if err == nil || !strings.Contains(err.Error(), gate.CodeWithheld) {
				t.Errorf("resources/read of a switched-off server: %v, %v; want a refusal %s", rr, err, gate.CodeWithheld)
			}
		})
	}
}

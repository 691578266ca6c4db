package proxy

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

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
			// The child starts in the background: each request is asked
			// again until the server is up and the refusal is quiver's.
			refused := func(what string, do func() string) {
				t.Helper()
				var last string
				for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
					if last = do(); strings.Contains(last, gate.CodeWithheld) {
						return
					}
				}
				t.Errorf("%s of a switched-off server: %s; want a refusal %s", what, last, gate.CodeWithheld)
			}
			refused("the tool (control)", func() string {
				req := mcp.CallToolRequest{}
				req.Params.Name = "leaky__leak"
				res, err := c.CallTool(ctx, req)
				return fmt.Sprint(res, err)
			})
			refused("prompts/get", func() string {
				pr, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "leaky__quote"}})
				if pr != nil {
					return fmt.Sprint(pr.Messages)
				}
				return fmt.Sprint(err)
			})
			refused("resources/read", func() string {
				rr, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "leak://token"}})
				if rr != nil {
					return fmt.Sprint(rr.Contents)
				}
				return fmt.Sprint(err)
			})
		})
	}
}

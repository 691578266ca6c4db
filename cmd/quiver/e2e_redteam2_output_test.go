package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Red team 2, the findings about what a result shows the host (7, 9) and
// the downstream swap race (4). Each test asserts what the user sees.

// rtOutputEnv makes the test binary a small downstream MCP server (before
// TestMain runs) whose tools return results of awkward shapes.
const rtOutputEnv = "QUIVER_REDTEAM2_OUTPUT_MINI"

func init() {
	serveMini(rtOutputEnv, "rt-output", func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("many_small", mcp.WithDescription("A result of many short texts."),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				res := &mcp.CallToolResult{}
				for i := 0; i < 100000; i++ {
					res.Content = append(res.Content, mcp.NewTextContent(fmt.Sprint(i%10)))
				}
				return res, nil
			})
		s.AddTool(mcp.NewTool("chunked_output", mcp.WithDescription("Output in chunks of 64 bytes, one content item each, as a command runner streams it."),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				out := strings.Repeat("x", 40) + " RT_SECRET=" + os.Getenv("RT_SECRET") + "\n"
				res := &mcp.CallToolResult{}
				for len(out) > 0 {
					n := min(64, len(out))
					res.Content = append(res.Content, mcp.NewTextContent(out[:n]))
					out = out[n:]
				}
				return res, nil
			})
	})
}

// TestRedTeam2ManySmallPartsUnbounded: results were bounded by cutting
// long strings; a result made of many short parts (100,000 one-character
// text items, about 2.6 MB) had nothing long to cut, and reached the host
// whole, far over surface.max_result_bytes. The bound is on the whole
// result: items are left out from the end, and the notice says so.
func TestRedTeam2ManySmallPartsUnbounded(t *testing.T) {
	const limit = 64 << 10
	r := startMini(t, rtOutputEnv, limit, "", nil, "mini__many_small")
	out := r.callRaw("mini__many_small", map[string]any{})
	if out.Result == nil {
		t.Fatalf("control: no result: %s", out.text())
	}
	if n := len(out.Result); n > limit+1024 {
		t.Errorf("a result of %d bytes reached the host; surface.max_result_bytes is %d", n, limit)
	}
	var res struct {
		Meta    map[string]any `json:"_meta"`
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(out.Result, &res); err != nil {
		t.Fatalf("the result is not a tool result: %v", err)
	}
	if len(res.Content) < 2 || res.Content[0].Text != "0" || res.Content[1].Text != "1" {
		t.Errorf("the beginning of the output is not kept: %.200s", out.Result)
	}
	if last := res.Content[len(res.Content)-1].Text; !strings.Contains(last, "items left out") {
		t.Errorf("the result does not say that items were left out; its last item: %q", last)
	}
	if res.Meta["quiver/truncated"] != true {
		t.Errorf("_meta[quiver/truncated] is not set: %v", res.Meta)
	}
}

// TestRedTeam2SecretSplitAcrossChunks: a server that returns its output
// in chunks (one text item per 64 bytes, as a command runner streams
// stdout) splits a secret across two items; each item was redacted alone,
// and the host, which shows the items one after another, showed the
// secret whole.
func TestRedTeam2SecretSplitAcrossChunks(t *testing.T) {
	self := testBinary(t)
	secret := "rt-secret-" + randomWord(t)
	h, _, _ := launch{
		cfg: fmt.Sprintf(`
surface:
  reveal: direct
servers:
  mini:
    command: %q
    env: {%s: "1", RT_SECRET: "${RT_SECRET}"}
%s`, self, rtOutputEnv, allowAll),
		env: []string{"RT_SECRET=" + secret},
	}.start(t)
	h.waitTools("mini__chunked_output")
	res := h.call("mini__chunked_output", map[string]any{})
	var shown strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			shown.WriteString(tc.Text)
		}
	}
	if !strings.Contains(shown.String(), "RT_SECRET=") {
		t.Fatalf("control: the output did not come back: %q", shown.String())
	}
	if strings.Contains(shown.String(), secret) {
		t.Errorf("RT_SECRET's value (a ${VAR} secret) reached the host split across two text items: %q", shown.String())
	}
}

// TestRedTeam2DownstreamSwapRace: the same swap against the published
// filesystem server started with root "/" (as TestPathEscapesEndToEnd
// does: quiver's fence is all that stands between the model and the
// disk). quiver judges the path and forwards the string as written; the
// server resolves it again, after the model's own move_file calls have
// swapped a folder holding a link out of the fence into its place.
func TestRedTeam2DownstreamSwapRace(t *testing.T) {
	script := filesystemServer(t)
	node := needTool(t, "node")
	f := newSwapFixture(t)
	inside := f.inside
	h := startQuiver(t, fmt.Sprintf(`
surface:
  reveal: direct
servers:
  fs:
    command: %q
    args: [%q, "/"]
    path_base: roots
fence:
  allowed_dirs: [%q]
%s`, node, script, inside, allowAll), hostOptions{})
	h.waitTools("fs__move_file", "fs__read_text_file")
	leaked, n := f.race(t, h, 20*time.Second, "fs__read_text_file")
	t.Logf("%d reads", n)
	if leaked != "" {
		t.Errorf("read_text_file returned a file outside the fence, through a link swapped in by move_file after the gate looked: %q", leaked)
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A configured secret reaches the host in no spelling a server can give
// it (issue 22): a digits-only secret as a JSON number, in any notation,
// in structuredContent, _meta or an array; in hex, percent-encoded, broken
// by a line break inside one text; split around an image.

const spellingsEnv = "QUIVER_SECRET_SPELLINGS"

// spellingsSecret is RT_SECRET in these tests: digits only, as a PIN or
// an account number is.
const spellingsSecret = "739182046551"

func init() {
	serveMini(spellingsEnv, "secret-spellings", func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("spell", mcp.WithDescription("Returns the secret spelled as asked."),
			mcp.WithString("how"), mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				v := os.Getenv("RT_SECRET")
				text := func(ts ...string) *mcp.CallToolResult {
					res := &mcp.CallToolResult{}
					for _, t := range ts {
						res.Content = append(res.Content, mcp.NewTextContent(t))
					}
					return res
				}
				switch req.GetString("how", "") {
				case "number":
					return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("see structured")},
						StructuredContent: json.RawMessage(`{"pin":` + v + `}`)}, nil
				case "exponent":
					return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("see structured")},
						StructuredContent: json.RawMessage(`{"pin":` + v[:1] + "." + v[1:] + fmt.Sprintf("e%d", len(v)-1) + `}`)}, nil
				case "meta":
					res := text("see _meta")
					res.Meta = &mcp.Meta{AdditionalFields: map[string]any{"pin": json.RawMessage("0." + v + fmt.Sprintf("E+%d", len(v)))}}
					return res, nil
				case "array":
					return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("see structured")},
						StructuredContent: json.RawMessage(`{"values":[1,` + v + `.0,3]}`)}, nil
				case "hex":
					return text(fmt.Sprintf("dump: %x", v)), nil
				case "HEX":
					return text(fmt.Sprintf("dump: %X", v)), nil
				case "percent":
					var b strings.Builder
					for i := 0; i < len(v); i++ {
						fmt.Fprintf(&b, "%%%02X", v[i])
					}
					return text("q=" + b.String()), nil
				case "newline":
					return text("pin: " + v[:5] + "\n" + v[5:]), nil
				case "crlf":
					return text("pin: " + v[:7] + "\r\n" + v[7:]), nil
				case "image":
					return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("pin: " + v[:6]),
						mcp.NewImageContent("iVBORw0KGgo=", "image/png"), mcp.NewTextContent(v[6:] + " end")}}, nil
				}
				return text("?"), nil
			})
	})
}

func TestSecretSpellingsNeverReachTheHost(t *testing.T) {
	r := startMini(t, spellingsEnv, 64<<10, spellingsSecret, nil, "mini__spell")
	v := spellingsSecret
	for _, how := range []string{"number", "exponent", "meta", "array", "hex", "HEX", "percent", "newline", "crlf", "image"} {
		t.Run(how, func(t *testing.T) {
			out := r.callRaw("mini__spell", map[string]any{"how": how})
			raw := out.text()
			if !strings.Contains(raw, "[redacted:RT_SECRET]") {
				t.Fatalf("control: no redaction in %s", raw)
			}
			for _, part := range []string{v[6:], v[:6], fmt.Sprintf("%x", v[6:]), fmt.Sprintf("%%%02X", v[8])} {
				if strings.Contains(raw, part) {
					t.Fatalf("%q of RT_SECRET reached the host: %s", part, raw)
				}
			}
		})
	}
}

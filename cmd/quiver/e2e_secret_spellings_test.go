package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

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
				case "error":
					// A JSON-RPC error, and the server's stderr, which
					// quiver logs: the same redactor judges both.
					fmt.Fprintf(os.Stderr, "debug: pin is %s\n", spelled(v, "zwsp"))
					return nil, fmt.Errorf("failed for %s", spelled(v, "hexspaced"))
				case "image":
					return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("pin: " + v[:6]),
						mcp.NewImageContent("iVBORw0KGgo=", "image/png"), mcp.NewTextContent(v[6:] + " end")}}, nil
				}
				if sp := spelled(v, req.GetString("how", "")); sp != "" {
					return text("pin: " + sp + " (end)"), nil
				}
				return text("?"), nil
			})
	})
}

// skeletonSpellings are the spellings a reader still reads as the secret
// that no fixed list of forms holds (red team rt1, A9–A18c): the
// redactor judges them by the text's skeleton (registry/redactskel.go).
var skeletonSpellings = []string{"grouped", "spaced", "dashes", "zwsp", "softhyphen", "tab", "hexspaced", "hexcolons",
	"html", "htmlhex", "xescape", "uescape", "octal", "percent2", "fullwidth", "hexvalue", "qp"}

// spelled is v written as how says, for the skeleton spellings; "" for
// any other how.
func spelled(v, how string) string {
	each := func(f, sep string) string {
		parts := make([]string, len(v))
		for i := 0; i < len(v); i++ {
			parts[i] = fmt.Sprintf(f, v[i])
		}
		return strings.Join(parts, sep)
	}
	switch how {
	case "grouped":
		return v[:3] + "," + v[3:6] + "," + v[6:9] + "," + v[9:]
	case "spaced":
		return v[:3] + " " + v[3:6] + " " + v[6:9] + " " + v[9:]
	case "dashes":
		return each("%c", "-")
	case "zwsp":
		return v[:6] + "\u200b" + v[6:]
	case "softhyphen":
		return v[:4] + "\u00ad" + v[4:]
	case "tab":
		return v[:5] + "\t" + v[5:]
	case "hexspaced":
		return each("%02x", " ")
	case "hexcolons":
		return each("%02x", ":")
	case "html":
		return each("&#%d;", "")
	case "htmlhex":
		return each("&#x%x;", "")
	case "xescape":
		return each(`\x%02x`, "")
	case "uescape":
		return each(`\u%04x`, "")
	case "octal":
		return each(`\%03o`, "")
	case "percent2":
		return each("%%25%02X", "")
	case "qp":
		return each("=%02X", "")
	case "fullwidth":
		var b strings.Builder
		for _, r := range v {
			b.WriteRune(r + 0xFEE0)
		}
		return b.String()
	case "hexvalue":
		n, _ := strconv.ParseUint(v, 10, 64)
		return fmt.Sprintf("0x%x", n)
	}
	return ""
}

func TestSecretSpellingsNeverReachTheHost(t *testing.T) {
	log := &lockedBuffer{}
	r := startMini(t, spellingsEnv, 64<<10, spellingsSecret, log, "mini__spell")
	v := spellingsSecret
	t.Run("skeleton", func(t *testing.T) {
		for _, how := range append(skeletonSpellings, "error") {
			t.Run(how, func(t *testing.T) {
				out := r.callRaw("mini__spell", map[string]any{"how": how})
				raw, shown := out.text(), out.strings()
				if out.Error != nil {
					shown = out.Error.Message
				}
				if !strings.Contains(raw+shown, "[redacted:RT_SECRET]") {
					t.Fatalf("control: no redaction in %s", raw)
				}
				sp := spelled(v, how)
				if how == "error" {
					sp = spelled(v, "hexspaced")
				}
				if strings.Contains(shown, sp) || strings.Contains(raw, sp) || strings.Contains(shown, v[:6]) {
					t.Fatalf("RT_SECRET spelled %s reached the host: %s", how, shown)
				}
			})
		}
		// quiver's own log: the server's stderr and the failed call.
		awaitCond(t, "the server's stderr line in quiver's log", 10*time.Second, func() bool { return strings.Contains(log.String(), "debug: pin is") })
		for _, how := range []string{"zwsp", "hexspaced"} {
			if sp := spelled(v, how); strings.Contains(log.String(), sp) {
				t.Errorf("RT_SECRET spelled %s reached quiver's log:\n%s", how, log)
			}
		}
	})
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

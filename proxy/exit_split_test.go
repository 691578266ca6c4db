package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/quiver-mcp/quiver/registry"
)

// TestExitRedactsSecretSplitAroundImage: a secret split between a text
// item and the next text item is redacted when an image, an audio clip
// or a blob resource stands between them, as when they are adjacent: a
// reader joins the texts and skips the picture (issue 22).
func TestExitRedactsSecretSplitAroundImage(t *testing.T) {
	t.Parallel()
	x := testExit(64<<10, registry.Secret{Var: "API_KEY", Value: "Zq8-xV2kLw9pT"})
	for name, between := range map[string]string{
		"image": `{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}`,
		"audio": `{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}`,
		"blob":  `{"type":"resource","resource":{"uri":"file:///x.bin","mimeType":"application/octet-stream","blob":"AAEC"}}`,
		"two":   `{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},{"type":"image","data":"R0lGOD==","mimeType":"image/gif"}`,
	} {
		t.Run(name, func(t *testing.T) {
			msg := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"key: Zq8-xV2"},` + between + `,{"type":"text","text":"kLw9pT end"}]}}`
			out := string(x.message([]byte(msg)))
			if !json.Valid([]byte(out)) || strings.Contains(out, "Zq8-xV2") || strings.Contains(out, "kLw9pT") || !strings.Contains(out, "[redacted:API_KEY]") {
				t.Fatalf("secret left in %s", out)
			}
			if !strings.Contains(out, "key: ") || !strings.Contains(out, " end") {
				t.Fatalf("more than the secret went: %s", out)
			}
		})
	}
}

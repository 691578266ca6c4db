package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/quiver-mcp/quiver/registry"
)

// TestJoinedRedactSecretAcrossStrings: a secret split across strings of
// one message, each half harmless alone, is blanked in every string it
// covers; strings that do not hold it are left as they were.
func TestJoinedRedactSecretAcrossStrings(t *testing.T) {
	secrets := []registry.Secret{{Var: "RT_SECRET", Value: "rt3-secret-abcdef"}}
	for _, tc := range []struct{ name, msg, gone string }{
		{"array", `{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"chunks":["RT_SECRET=rt3-sec","ret-abcdef\n"]}}}`, "ret-abcdef"},
		{"three strings", `{"data":["x rt3-","secret-","abcdef y"]}`, "secret-"},
		{"escaped quotes", `{"data":["say \"x\\\" rt3-secret-","abcdef\""]}`, "abcdef"},
		{"escaped", `{"data":["a\nrt3-secret-a","bcdef\tz"]}`, "bcdef"},
		{"text then resource", `{"content":[{"type":"text","text":"RT_SECRET=rt3-secr"},{"type":"resource","resource":{"uri":"log://out","mimeType":"text/plain","text":"et-abcdef\n"}}]}`, "et-abcdef"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := joinedRedact([]byte(tc.msg), secrets)
			var v any
			if err := json.Unmarshal(out, &v); err != nil {
				t.Fatalf("not JSON after redaction: %v: %s", err, out)
			}
			var joined strings.Builder
			collectStrings(v, func(s *cutString) { joined.WriteString(s.get()) })
			if strings.Contains(string(out), tc.gone) || strings.Contains(joined.String(), secrets[0].Value) {
				t.Errorf("the secret's halves are still there: %s", out)
			}
			if !strings.Contains(string(out), "[redacted:RT_SECRET]") {
				t.Errorf("no redaction mark: %s", out)
			}
		})
	}
	// No secret across strings: the very bytes come back.
	for _, msg := range []string{
		`{"data":["rt3-sec","nothing"]}`,
		`{"data":["plain","text"]}`,
		`{"rt3-secret-":"abcdef"}`,
	} {
		in := []byte(msg)
		if out := joinedRedact(in, secrets); &out[0] != &in[0] || string(out) != msg {
			t.Errorf("%s changed to %s", msg, out)
		}
	}
}

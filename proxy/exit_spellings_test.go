package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/quiver-mcp/quiver/registry"
)

// TestExitJudgesSecretSpellings: a secret reaches the host in no spelling
// a server can give it — a digits-only secret as a JSON number in any
// notation, anywhere in the message; any secret in hex, percent-encoded,
// or broken by a line break inside one string (issue 22).
func TestExitJudgesSecretSpellings(t *testing.T) {
	t.Parallel()
	x := testExit(64<<10, registry.Secret{Var: "PIN", Value: "739182046551"}, registry.Secret{Var: "API_KEY", Value: "Zq8-xV2kLw9pT"})
	const key = "Zq8-xV2kLw9pT"
	for name, msg := range map[string]string{
		"number":            `{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"pin":739182046551}}}`,
		"number_exponent":   `{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"pin":7.39182046551e11}}}`,
		"number_in_meta":    `{"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{"pin":0.739182046551E+12}}}`,
		"number_in_array":   `{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"a":[1,739182046551.0,3]}}}`,
		"number_in_params":  `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7391820465510e-1,"progress":1}}`,
		"hex":               `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + hexOf(key) + `"}]}}`,
		"hex_upper":         `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.ToUpper(hexOf(key)) + `"}]}}`,
		"percent":           `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"q=%5a%71%38%2d%78%56%32%6b%4c%77%39%70%54"}]}}`,
		"percent_some":      `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"q=%5Aq8-x%56%32kLw9p%54"}]}}`,
		"newline":           `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Zq8-xV2\nkLw9pT"}]}}`,
		"crlf":              `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Zq8-x\r\nV2kLw9pT"}]}}`,
		"newline_unicode":   `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Zq8-xV2\u000akLw9pT"}]}}`,
		"digits_newline":    `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"7391820\n46551"}]}}`,
		"break_across":      `{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"chunks":["pin 7391820\r\n","46551 ok"]}}}`,
		"break_between":     `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Zq8-xV2"},{"type":"text","text":"\n"},{"type":"text","text":"kLw9pT"}]}}`,
		"structured_string": `{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"k":"Zq8-x\nV2kLw9pT"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			out := string(x.message([]byte(msg)))
			if !json.Valid([]byte(out)) {
				t.Fatalf("not JSON: %s", out)
			}
			if !strings.Contains(out, "[redacted:") || strings.Contains(out, "46551") || strings.Contains(out, "kLw9pT") ||
				strings.Contains(out, "V2kL") || strings.Contains(strings.ToLower(out), hexOf("kLw9")) || strings.Contains(out, "%4c%77") {
				t.Fatalf("secret left in %s", out)
			}
		})
	}
	// A secret split between a key and its value (red team rt1, A18).
	t.Run("key_value_split", func(t *testing.T) {
		x := testExit(64<<10, registry.Secret{Var: "RT_SECRET", Value: "Zq7Kp2Lm9Xw4Vb8N"})
		out := string(x.message([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"Zq7Kp2Lm":"9Xw4Vb8N","other":"x"}}}`)))
		if !json.Valid([]byte(out)) || !strings.Contains(out, "[redacted:RT_SECRET]") || strings.Contains(out, "Zq7Kp2Lm") ||
			strings.Contains(out, "9Xw4Vb8N") || !strings.Contains(out, `"other":"x"`) {
			t.Fatalf("a secret split between a key and its value left in %s", out)
		}
	})
	// Nothing else changes: the same numbers and breaks without a secret
	// pass byte for byte.
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"n":739182046552,"f":7.3918e11}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Zq8-\nnothing 100%25"}]}}`,
	} {
		if out := x.message([]byte(msg)); string(out) != msg {
			t.Errorf("changed:\n in %s\nout %s", msg, out)
		}
	}
}

func hexOf(s string) string {
	const digits = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(digits[s[i]>>4])
		b.WriteByte(digits[s[i]&0xf])
	}
	return b.String()
}

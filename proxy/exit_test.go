package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/quiver-mcp/quiver/registry"
)

func testExit(limit int, secrets ...registry.Secret) exit {
	set := &settings{cfg: &registry.Config{Secrets: secrets, Surface: registry.Surface{MaxResultBytes: limit}}, redact: registry.NewRedactor(secrets)}
	return exit{settings: func() *settings { return set }}
}

const testToken = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"

func TestExitRedactsEveryShape(t *testing.T) {
	x := testExit(64<<10, registry.Secret{Var: "DB_PASS", Value: "s3cret-pa55"})
	for name, msg := range map[string]string{
		// mcp-go sends RawStructuredContent as the downstream wrote it.
		"raw_structured_content": `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"[redacted:github-token]"}],"structuredContent":{"content":"` + testToken + `"}}}`,
		"escaped_letter":         `{"jsonrpc":"2.0","id":1,"result":{"x":"\u0067hp_0123456789abcdefghijklmnopqrstuvwxyzAB"}}`,
		"escaped_slash":          `{"jsonrpc":"2.0","id":1,"result":{"x":"s3cret\/pa55 s3cret-pa55"}}`,
		"after_a_newline":        `{"jsonrpc":"2.0","id":1,"result":{"x":"line\n` + testToken + `"}}`,
		"in_a_key":               `{"jsonrpc":"2.0","id":1,"result":{"` + testToken + `":1}}`,
		"known_secret":           `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"pw=s3cret-pa55"}}`,
		"in_an_error":            `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"bad key s3cret-pa55"}}`,
		"card_request":           `{"jsonrpc":"2.0","id":9,"method":"elicitation/create","params":{"message":"` + testToken + `"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			out := string(x.message([]byte(msg)))
			if strings.Contains(out, "0123456789abcdef") || strings.Contains(out, "s3cret-pa55") {
				t.Fatalf("secret left in %s", out)
			}
			if !json.Valid([]byte(out)) {
				t.Fatalf("not JSON: %s", out)
			}
		})
	}
}

func TestExitPassesCleanMessagesByteForByte(t *testing.T) {
	x := testExit(64<<10, registry.Secret{Var: "DB_PASS", Value: "s3cret-pa55"})
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\nb\t\"c\" \\ \u003c\u0026"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`,
	} {
		if out := x.message([]byte(msg)); string(out) != msg {
			t.Errorf("changed:\n in %s\nout %s", msg, out)
		}
	}
}

func TestExitBoundsResults(t *testing.T) {
	const limit = 16 << 10
	x := testExit(limit)
	t.Run("text_keeps_what_fits", func(t *testing.T) {
		big := strings.Repeat("ü<", 200_000) // escapes make the bytes outgrow the text
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{
			"content": []any{map[string]any{"type": "text", "text": big}}}})
		out := x.message(msg)
		if len(out) > limit+boundSlack {
			t.Fatalf("%d bytes sent, bound %d", len(out), limit)
		}
		var res struct {
			Result struct {
				Content []struct{ Text string }
				Meta    map[string]any `json:"_meta"`
			}
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		text := res.Result.Content[0].Text
		// The bound is on bytes sent: at least half of them are text kept.
		if jsonLen(text) < limit/2 || !utf8.ValidString(text) || !strings.Contains(text, "[quiver: cut here:") {
			t.Fatalf("kept %d bytes of readable text (%d as JSON, want at least %d), ends %q", len(text), jsonLen(text), limit/2, text[max(0, len(text)-80):])
		}
		if res.Result.Meta["quiver/truncated"] != true {
			t.Fatalf("no truncation mark: %v", res.Result.Meta)
		}
	})
	t.Run("structured_content_too", func(t *testing.T) {
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"file":%q}}}`, strings.Repeat("x", 1<<20))
		if out := x.message([]byte(msg)); len(out) > limit+boundSlack {
			t.Fatalf("%d bytes sent", len(out))
		}
	})
	t.Run("resource_contents", func(t *testing.T) {
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"file:///a","text":%q}]}}`, strings.Repeat("y", 1<<20))
		out := x.message([]byte(msg))
		var res struct {
			Result struct{ Contents []struct{ URI string } }
		}
		_ = json.Unmarshal(out, &res)
		if len(out) > limit+boundSlack || len(res.Result.Contents) != 1 || res.Result.Contents[0].URI != "file:///a" {
			t.Fatalf("%d bytes sent: %.200s", len(out), out)
		}
	})
	t.Run("a_text_and_its_structured_copy_both_keep_text", func(t *testing.T) {
		// Red team: a 1 MB query echoed in text and structuredContent was
		// cut to nothing: the longest string lost the whole excess.
		q := strings.Repeat("a", 1<<20)
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{
			"content": []any{map[string]any{"type": "text", "text": "Matches for " + q}}, "structuredContent": map[string]any{"query": q}}})
		out := x.message(msg)
		var res struct {
			Result struct {
				Content           []struct{ Text string }
				StructuredContent struct{ Query string }
			}
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		if len(out) > limit+boundSlack || len(res.Result.Content[0].Text) < limit/4 || len(res.Result.StructuredContent.Query) < limit/4 {
			t.Fatalf("%d bytes sent; kept %d of the text and %d of the copy", len(out), len(res.Result.Content[0].Text), len(res.Result.StructuredContent.Query))
		}
	})
	t.Run("listings_are_not_cut", func(t *testing.T) {
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","description":%q}]}}`, strings.Repeat("z", 1<<20))
		if out := x.message([]byte(msg)); string(out) != msg {
			t.Fatal("a tools/list answer was changed")
		}
	})
}

func TestLineExitFramesMessages(t *testing.T) {
	var out bytes.Buffer
	l := &lineExit{w: &out, x: testExit(0)}
	msg := `{"jsonrpc":"2.0","id":1,"result":{"x":"` + testToken + `"}}` + "\n"
	// A message written in pieces is still judged whole.
	for _, part := range []string{msg[:20], msg[20:45], msg[45:]} {
		if _, err := l.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if got := out.String(); strings.Contains(got, "0123456789") || !strings.HasSuffix(got, "}\n") {
		t.Fatalf("got %q", got)
	}
}

func TestHTTPExit(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"result":{"x":"` + testToken + `"}}`
	for _, tc := range []struct{ name, ct, body string }{
		{"json", "application/json", msg + "\n"},
		{"event_stream", "text/event-stream", "event: message\ndata: " + msg + "\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := httpExit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ct)
				w.Header().Set("Content-Length", fmt.Sprint(len(tc.body)))
				w.WriteHeader(http.StatusOK)
				// Written in two pieces, as a stream may be.
				_, _ = w.Write([]byte(tc.body[:30]))
				_, _ = w.Write([]byte(tc.body[30:]))
			}), testExit(0))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
			got := rec.Body.String()
			if strings.Contains(got, "0123456789") || !strings.Contains(got, "[redacted:github-token]") {
				t.Fatalf("got %q", got)
			}
			if rec.Header().Get("Content-Length") != "" {
				t.Fatal("a stale Content-Length went out")
			}
		})
	}
}

func BenchmarkExitClean(b *testing.B) {
	x := testExit(64<<10, registry.Secret{Var: "DB_PASS", Value: "s3cret-pa55"})
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{
		"content": []any{map[string]any{"type": "text", "text": strings.Repeat("a line of output\n", 200)}}}})
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		x.message(msg)
	}
}

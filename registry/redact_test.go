package registry

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRedact(t *testing.T) {
	secrets := []Secret{{Var: "GITHUB_TOKEN", Value: "s3cr3t-value"}}
	for _, tc := range []struct{ name, in, want string }{
		{"known_secret", "token=s3cr3t-value!", "token=[redacted:GITHUB_TOKEN]!"},
		{"github_classic", "ghp_" + strings.Repeat("a", 36), "[redacted:github-token]"},
		{"aws_key", "key AKIAABCDEFGHIJKLMNOP end", "key [redacted:aws-access-key] end"},
		{"slack", "xoxb-1234567890-abcdef", "[redacted:slack-token]"},
		{"anthropic_before_openai", "sk-ant-api03-" + strings.Repeat("x", 30), "[redacted:anthropic-key]"},
		{"openai", "sk-proj-" + strings.Repeat("y", 30), "[redacted:openai-key]"},
		{"bearer", "Authorization: Bearer abcdefghijklmnop1234", "Authorization: [redacted:bearer-token]"},
		{"private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "[redacted:private-key]"},
		{"plain_text_untouched", "nothing secret here: sk-short", "nothing secret here: sk-short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Redact(tc.in, secrets); got != tc.want {
				t.Fatalf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// evToken is the red team's secret: a quote and a backslash in it, so
// that every quoting writes it differently from the plain value.
const evToken = `pa"ss\w0rd-SECRET-EV`

// TestRedactQuotedSecrets: a server that prints its environment as JSON
// text (or as a Python dict, or a log line quoting a value) writes a
// secret escaped; it is hidden in each of those forms, whole.
func TestRedactQuotedSecrets(t *testing.T) {
	t.Parallel()
	secrets := []Secret{{Var: "EV_TOKEN", Value: evToken}, {Var: "HTML", Value: "a<b>&c-0123456789"},
		{Var: "UNI", Value: "pässwörd-\U0001F511-\x01-42"}}
	goJSON := func(v string) string { b, _ := json.Marshal(map[string]string{"EV_TOKEN": v}); return string(b) }
	for _, tc := range []struct{ name, in, secret string }{
		{"encoding_json", goJSON(evToken), evToken},
		{"pretty_json", `{` + "\n" + `  "EV_TOKEN": "pa\"ss\\w0rd-SECRET-EV"` + "\n}", evToken},
		{"python_repr", `environ({'EV_TOKEN': 'pa"ss\\w0rd-SECRET-EV'})`, evToken},
		{"single_quoted", `'pa\"ss\\w0rd-SECRET-EV'`, evToken},
		{"stderr_line", `level=INFO msg="env" EV_TOKEN="pa\"ss\\w0rd-SECRET-EV"`, evToken},
		{"html_escaped", goJSON("a<b>&c-0123456789"), "0123456789"},
		{"html_plain", `{"HTML":"a<b>&c-0123456789"}`, "0123456789"},
		{"go_json_unicode", goJSON("pässwörd-\U0001F511-\x01-42"), "sswörd"},
		{"python_ensure_ascii", `{"UNI": "p\u00e4ssw\u00f6rd-\ud83d\udd11-\u0001-42"}`, `ssw\u00f6rd`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Redact(tc.in, secrets)
			if strings.Contains(got, tc.secret) || strings.Contains(got, "SECRET-EV") || !strings.Contains(got, "[redacted:") {
				t.Errorf("Redact(%s) = %s", tc.in, got)
			}
		})
	}
	// Whole: nothing of the escaped form is left beside the mark.
	if got := Redact(goJSON(evToken), secrets); got != `{"EV_TOKEN":"[redacted:EV_TOKEN]"}` {
		t.Errorf("Redact = %s", got)
	}
}

// TestRedactBase64Secrets: a base64 blob (an image or "media" read of a
// file that holds a secret) carries the secret encoded, at any byte
// offset, in either alphabet, padded or not; none of it can be decoded
// back out of what Redact leaves (for a secret of 7 bytes or more).
func TestRedactBase64Secrets(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{evToken, "tok-0123456789", "abcdefg", "\xfb\xff\xbf-binary?>>~~"} {
		secrets := []Secret{{Var: "K", Value: secret}}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			for pre := range 7 {
				for post := range 4 {
					data := []byte(strings.Repeat("P", pre) + "EV_TOKEN=" + secret + strings.Repeat("\n", post))
					blob := enc.EncodeToString(data)
					in := `{"type":"image","mimeType":"image/png","data":"` + blob + `"}`
					got := Redact(in, secrets)
					if !strings.Contains(got, "[redacted:K]") || decodesTo(got, secret) {
						t.Fatalf("secret %q, pre %d, post %d: Redact(%s) = %s", secret, pre, post, in, got)
					}
				}
			}
			// The whole blob is the secret: nothing of it stays.
			if got := Redact("data: "+enc.EncodeToString([]byte(secret))+".", secrets); got != "data: [redacted:K]." {
				t.Errorf("secret %q alone: Redact = %q", secret, got)
			}
		}
	}
}

// decodesTo reports whether secret can be read back out of any base64 run
// in s, starting at any of its characters.
func decodesTo(s, secret string) bool {
	isB64 := func(r rune) bool {
		return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("+/-_", r)
	}
	runs := strings.FieldsFunc(s, func(r rune) bool { return !isB64(r) })
	for _, run := range runs {
		for off := range 4 {
			if off >= len(run) {
				break
			}
			r := run[off:]
			r = r[:len(r)/4*4]
			r = strings.NewReplacer("-", "+", "_", "/").Replace(r)
			if b, err := base64.StdEncoding.DecodeString(r); err == nil && strings.Contains(string(b), secret) {
				return true
			}
		}
	}
	return false
}

// TestRedactBase64LeavesOrdinaryText: a short secret has no base64 form
// (its few encoded characters would match ordinary words), and base64 of
// other data is left alone.
func TestRedactBase64LeavesOrdinaryText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		secret, in string
	}{
		{"abcd", "YWJjZA== and YWJjZA and text"},
		{"abcde", "YWJjZGU= is left"},
		{"hunter22", "aHVudGVy is half of it, " + base64.StdEncoding.EncodeToString([]byte("something else entirely"))},
	} {
		want := tc.in
		if got := Redact(tc.in, []Secret{{Var: "K", Value: tc.secret}}); got != want {
			t.Errorf("secret %q: Redact(%q) = %q", tc.secret, tc.in, got)
		}
	}
}

// TestRedactorMatchesRedact: a Redactor built once redacts as Redact does,
// from many goroutines, and keeps no reference to the caller's slice.
func TestRedactorMatchesRedact(t *testing.T) {
	t.Parallel()
	secrets := []Secret{{Var: "EV_TOKEN", Value: evToken}, {Var: "SHORT", Value: "abcd1234"}, {Var: "LONG", Value: "abcd1234efgh5678"}}
	r := NewRedactor(secrets)
	secrets[0].Value = "changed-after-build"
	in := "long=abcd1234efgh5678 short=abcd1234 ev=" + base64.StdEncoding.EncodeToString([]byte(evToken)) + " ghp_" + strings.Repeat("a", 36)
	want := "long=[redacted:LONG] short=[redacted:SHORT] ev=[redacted:EV_TOKEN] [redacted:github-token]"
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got := r.Redact(in); got != want {
				t.Errorf("Redact = %q; want %q", got, want)
			}
		})
	}
	wg.Wait()
}

// BenchmarkRedact measures the common case, a result with no secret in
// it, against ten secrets: Redact, which works out the forms each call,
// and a Redactor built once.
func BenchmarkRedact(b *testing.B) {
	var secrets []Secret
	for i := range 10 {
		secrets = append(secrets, Secret{Var: fmt.Sprintf("S%d", i), Value: fmt.Sprintf("secret-%d-0123456789abcdef", i)})
	}
	text := strings.Repeat("the quick brown fox jumps over the lazy dog 0123456789 ", 64<<10/55)
	b.Run("Redact", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			Redact(text, secrets)
		}
	})
	b.Run("Redactor", func(b *testing.B) {
		r := NewRedactor(secrets)
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			r.Redact(text)
		}
	})
	b.Run("Redact_small", func(b *testing.B) {
		for b.Loop() {
			Redact(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ok"}]}}`, secrets)
		}
	})
	// A text with escapes in it (a JSON document or HTML inside a text):
	// the skeleton views are built (redactskel.go).
	escaped := strings.Repeat(`{"a":"x\\ny &amp; 50%25 done"} `, 1<<10/32)
	b.Run("Redactor_escaped_1KiB", func(b *testing.B) {
		r := NewRedactor(secrets)
		b.SetBytes(int64(len(escaped)))
		for b.Loop() {
			r.Redact(escaped)
		}
	})
	b.Run("Redactor_small", func(b *testing.B) {
		r := NewRedactor(secrets)
		for b.Loop() {
			r.Redact(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ok"}]}}`)
		}
	})
}

// TestStderrQuotedAndEncodedSecrets: a child's stderr log that quotes a
// secret JSON-escaped, or dumps it base64-encoded, is logged redacted.
func TestStderrQuotedAndEncodedSecrets(t *testing.T) {
	t.Parallel()
	l, sink := newTestLineLogger([]Secret{{Var: "EV_TOKEN", Value: evToken}}, time.Hour)
	blob := base64.StdEncoding.EncodeToString([]byte("config: EV_TOKEN=" + evToken + "\n"))
	l.Write([]byte(`{"level":"debug","env":{"EV_TOKEN":"pa\"ss\\w0rd-SECRET-EV"}}` + "\n" + "dump " + blob + "\n"))
	out := logged(sink)
	if strings.Contains(out, "SECRET-EV") || decodesTo(out, evToken) || strings.Count(out, "[redacted:EV_TOKEN]") != 2 {
		t.Errorf("logged:\n%s", out)
	}
}

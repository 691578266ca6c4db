package registry

import (
	"strings"
	"testing"
)

func TestRedactOverlappingSecrets(t *testing.T) {
	// The shorter secret comes first, as it may in Config.Secrets.
	secrets := []Secret{{Var: "SHORT", Value: "abcd1234"}, {Var: "LONG", Value: "abcd1234efgh5678"}}
	got := Redact("long=abcd1234efgh5678 short=abcd1234", secrets)
	if want := "long=[redacted:LONG] short=[redacted:SHORT]"; got != want {
		t.Errorf("Redact = %q; want %q", got, want)
	}
	if secrets[0].Var != "SHORT" {
		t.Error("Redact reordered the caller's slice")
	}
}

func TestRedactShortValuesAreLeft(t *testing.T) {
	// A value under 4 bytes would blank out ordinary text everywhere.
	if got := Redact("abc and abcd", []Secret{{Var: "A", Value: "abc"}}); got != "abc and abcd" {
		t.Errorf("Redact = %q", got)
	}
}

func TestConfigSecretsRedactEnvAndHeaderValues(t *testing.T) {
	cfg := mustParse(t, "servers:\n  a:\n    command: x\n    env: {T: \"${TOKEN}\"}\n  b:\n    url: https://h/mcp\n    headers: {Authorization: \"Token ${KEY}\"}\n",
		map[string]string{"TOKEN": "tok-0123456789", "KEY": "key-abcdefghij"})
	out := Redact("env tok-0123456789, header Token key-abcdefghij", cfg.Secrets)
	if strings.Contains(out, "0123456789") || strings.Contains(out, "abcdefghij") ||
		!strings.Contains(out, "[redacted:TOKEN]") || !strings.Contains(out, "[redacted:KEY]") {
		t.Errorf("Redact = %q", out)
	}
}

// TestRedactURLEncodedSecrets: a key with +, / and = is hidden in the form
// a URL carries it too, as an HTTP error quoting the request URL shows it.
func TestRedactURLEncodedSecrets(t *testing.T) {
	secrets := []Secret{{Var: "K", Value: "s3cr3t/0123+456789="}}
	for _, in := range []string{
		"GET https://api.example.com/?key=s3cr3t%2F0123%2B456789%3D: 401",
		"GET https://api.example.com/s3cr3t%2F0123+456789=/x: 401",
		"raw s3cr3t/0123+456789=",
	} {
		if got := Redact(in, secrets); strings.Contains(got, "s3cr3t") || !strings.Contains(got, "[redacted:K]") {
			t.Errorf("Redact(%q) = %q", in, got)
		}
	}
}

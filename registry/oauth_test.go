package registry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
)

// TestOAuthConfigErrors: auth and oauth are checked like every key: each
// mistake names the entry and says what to write instead.
func TestOAuthConfigErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"servers:\n  r:\n    command: x\n    auth: oauth\n", "auth and oauth are for remote servers"},
		{"servers:\n  r:\n    url: https://x/mcp\n    auth: basic\n", `servers.r.auth: "basic" is not an auth method`},
		{"servers:\n  r:\n    url: https://x/mcp\n    oauth: {client_id: a}\n", "settings for auth: oauth; add auth: oauth"},
		{"servers:\n  r:\n    url: https://x/mcp\n    auth: oauth\n    oauth: {client_id: a, client_secret: plain}\n", "write it as ${keyring:NAME}"},
		{"servers:\n  r:\n    url: https://x/mcp\n    auth: oauth\n    oauth: {callback_port: 70000}\n", "70000 is not a port"},
	} {
		_, err := ParseConfig("test.yaml", []byte(tc.yaml), testLookup(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.yaml, err, tc.want)
		}
	}
	cfg, err := ParseConfig("test.yaml", []byte("servers:\n  r:\n    url: https://x/mcp\n    auth: oauth\n    oauth: {client_id: a, client_secret: '${keyring:r-secret}', scopes: [read]}\n"),
		testLookup(map[string]string{"keyring:r-secret": "s3cret-value"}))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := cfg.Server("r")
	if s.Auth != AuthOAuth || s.OAuth.ClientID != "a" || s.OAuth.ClientSecret != "s3cret-value" || s.Written.Auth != "oauth" {
		t.Fatalf("server = %+v", s)
	}
	if got := Redact("secret is s3cret-value", cfg.Secrets); got != "secret is [redacted:keyring:r-secret]" {
		t.Errorf("the client secret is not redacted: %s", got)
	}
}

// TestTokenFile: the token store keeps the token for its url only, in a
// file only its owner may read.
func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	p := OAuthFile(dir, "r")
	ctx := context.Background()
	tf := NewTokenFile(p, "https://x/mcp")
	if _, err := tf.GetToken(ctx); !errors.Is(err, transport.ErrNoToken) {
		t.Fatalf("no file: %v, want ErrNoToken", err)
	}
	if err := tf.SaveToken(ctx, &transport.Token{AccessToken: "at", RefreshToken: "rt"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 || filepath.Dir(p) != filepath.Join(dir, "oauth") {
		t.Fatalf("token file %s: %v", p, err)
	}
	if tok, err := tf.GetToken(ctx); err != nil || tok.AccessToken != "at" {
		t.Fatalf("GetToken = %+v, %v", tok, err)
	}
	if _, err := NewTokenFile(p, "https://elsewhere/mcp").GetToken(ctx); !errors.Is(err, transport.ErrNoToken) {
		t.Fatalf("a token made for another url was used: %v", err)
	}
}

// TestKeyringValuesAreAlwaysSecret: a stored secret is redacted wherever
// it is used, even in args, where a ${VAR} is a secret only when its name
// or value looks like one; a name never stored says how to store it.
func TestKeyringValuesAreAlwaysSecret(t *testing.T) {
	lookup := testLookup(map[string]string{"keyring:plain": "plain-words-here", "PLAIN": "other-words-here"})
	cfg, err := ParseConfig("test.yaml", []byte("servers:\n  s:\n    command: x\n    args: ['${keyring:plain}', '${PLAIN}']\n"), lookup)
	if err != nil {
		t.Fatal(err)
	}
	if got := Redact("plain-words-here other-words-here", cfg.Secrets); got != "[redacted:keyring:plain] other-words-here" {
		t.Errorf("redacted: %q", got)
	}
	_, err = ParseConfig("test.yaml", []byte("servers:\n  s:\n    command: x\n    env: {T: '${keyring:never}'}\n"), lookup)
	if err == nil || !strings.Contains(err.Error(), "keyring secret never is not set; run: quiver secret set never") {
		t.Errorf("a secret never stored: %v", err)
	}
	_, err = ParseConfig("test.yaml", []byte("servers:\n  s:\n    command: x\n    env: {T: '${keyring:a b}'}\n"), lookup)
	if err == nil || !strings.Contains(err.Error(), "is not a keyring reference") {
		t.Errorf("a bad name: %v", err)
	}
}

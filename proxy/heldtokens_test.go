package proxy

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/quiver-mcp/quiver/registry"
)

// TestHeldOAuthTokensAreRedacted: the OAuth tokens quiver holds for a
// remote server (quiver login, <state>/oauth/<server>.json) are secrets
// like ${VAR} values (red team 2: a remote tool echoed the access token
// and the host saw it), and a token refreshed mid-run is hidden from the
// next text on.
func TestHeldOAuthTokensAreRedacted(t *testing.T) {
	cfg, err := registry.ParseConfig("servers.yaml", []byte("servers:\n  remote:\n    url: https://example.com/mcp\n    auth: oauth\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	srv, _ := cfg.Server("remote")
	tf := registry.NewTokenFile(registry.OAuthFile(state, "remote"), srv.URL)
	set, err := newSettings(cfg, state, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := set.redact.Redact("nothing held yet"); got != "nothing held yet" {
		t.Fatalf("with no token file: %q", got)
	}
	ctx := context.Background()
	for _, tok := range []transport.Token{
		{AccessToken: "at-0f1e2d3c4b5a69788796", RefreshToken: "rt-a1b2c3d4e5f60718"},
		{AccessToken: "at-refreshed-5566778899aabb", RefreshToken: "rt-a1b2c3d4e5f60718"},
	} {
		if err := tf.SaveToken(ctx, &tok); err != nil {
			t.Fatal(err)
		}
		text := "you came with token " + tok.AccessToken + " and may refresh with " + tok.RefreshToken
		got := set.redact.Redact(text)
		if strings.Contains(got, tok.AccessToken) || strings.Contains(got, tok.RefreshToken) {
			t.Errorf("a token quiver holds was not hidden: %q", got)
		}
		if !strings.Contains(got, "[redacted:remote oauth token]") {
			t.Errorf("the redaction does not say what was hidden: %q", got)
		}
	}
}

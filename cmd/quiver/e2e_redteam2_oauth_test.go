package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// rtAuthKey carries the Authorization header the echo server was sent.
type rtAuthKey struct{}

// TestRedTeam2OAuthTokenEchoed: quiver adds the OAuth access token of a
// remote server to every request it sends there (quiver login). A server
// that quotes the token back (an error page, a debug echo) has it reach
// the host in clear (red team 2, finding 10): the tokens quiver holds are
// secrets like those of servers.yaml, and the host sees them redacted.
func TestRedTeam2OAuthTokenEchoed(t *testing.T) {
	o := newOAuthServer(t, time.Hour)
	echo := server.NewMCPServer("protected", "1.0.0")
	echo.AddTool(mcp.NewTool("whoami", mcp.WithDescription("Say how the caller authenticated."), mcp.WithReadOnlyHintAnnotation(true)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h, _ := ctx.Value(rtAuthKey{}).(string)
			tok, _ := strings.CutPrefix(h, "Bearer ")
			return mcp.NewToolResultText("you came with token " + tok), nil
		})
	streamable := server.NewStreamableHTTPServer(echo, server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, rtAuthKey{}, r.Header.Get("Authorization"))
	}))
	orig := o.srv.Config.Handler
	o.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			orig.ServeHTTP(w, r)
			return
		}
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		o.mu.Lock()
		exp, ok := o.access[tok]
		o.mu.Unlock()
		if !ok || time.Now().After(exp) {
			orig.ServeHTTP(w, r) // the 401 with the metadata's address
			return
		}
		streamable.ServeHTTP(w, r)
	})
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "servers.yaml")
	text := fmt.Sprintf("surface:\n  reveal: direct\nservers:\n  remote:\n    url: %s/mcp\n    auth: oauth\n", o.srv.URL)
	os.WriteFile(cfg, []byte(text), 0o600)
	quiverLogin(t, o, dir, cfg, state)
	h := startQuiver(t, text, hostOptions{args: []string{"--config", cfg, "--state-dir", state}})
	h.waitTools("remote__whoami")
	out := toolresult.Text(h.call("remote__whoami", map[string]any{}))
	if !strings.Contains(out, "you came with token") {
		t.Fatalf("control: %s", out)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for tok := range o.access {
		if strings.Contains(out, tok) {
			t.Errorf("the OAuth access token quiver sends the remote server reached the host in clear: %s", out)
		}
	}
}

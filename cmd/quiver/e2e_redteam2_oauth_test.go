package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

type rtAuthKey struct{}

// TestRedTeam2OAuthTokenEchoed: quiver adds the OAuth access token of a
// remote server to every request it sends there (quiver login). A server
// that quotes the token back (an error page, a debug echo) has it reach
// the host in clear: quiver hides the secrets of servers.yaml and
// well-known credential shapes, but not the token it holds itself.
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
	login := exec.Command(quiverBin, "login", "remote", "--no-browser", "--config", cfg, "--state-dir", state, "--timeout", "30s")
	login.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, "home"))
	stderr, _ := login.StderrPipe()
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	var authURL string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, o.srv.URL+"/authorize?") {
			authURL = l
			break
		}
	}
	go io.Copy(io.Discard, stderr)
	if authURL == "" {
		login.Process.Kill()
		t.Fatalf("quiver login printed no authorization address")
	}
	if resp, err := http.Get(authURL); err == nil {
		resp.Body.Close()
	}
	if err := login.Wait(); err != nil {
		t.Fatalf("quiver login: %v", err)
	}
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

package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/internal/toolresult"
	"github.com/quiver-mcp/quiver/registry"
)

// oauthServer is an MCP server behind OAuth 2.1 as the MCP authorization
// spec describes it, all on one loopback address: protected resource
// metadata (RFC 9728), authorization server metadata (RFC 8414), dynamic
// client registration (RFC 7591), an authorize endpoint that sends the
// browser back to the client's loopback redirect with a code, a token
// endpoint that checks PKCE (S256) and rotates refresh tokens, and the
// MCP endpoint at /mcp, which answers 401 with the metadata's address
// without a live token.
type oauthServer struct {
	t   *testing.T
	srv *httptest.Server
	ttl time.Duration // how long an access token lives

	mu        sync.Mutex
	clients   map[string][]string  // client id: its redirect URIs
	codes     map[string]codeGrant // code: what it was issued for
	access    map[string]time.Time // access token: when it expires
	refresh   map[string]string    // refresh token: its client
	refreshed int                  // refresh grants honoured
	rejected  int                  // MCP requests without a live token
}

type codeGrant struct{ client, redirect, challenge string }

func newOAuthServer(t *testing.T, ttl time.Duration) *oauthServer {
	o := &oauthServer{t: t, ttl: ttl, clients: map[string][]string{}, codes: map[string]codeGrant{},
		access: map[string]time.Time{}, refresh: map[string]string{}}
	mcpSrv := server.NewMCPServer("protected", "1.0.0")
	mcpSrv.AddTool(mcp.NewTool("whoami", mcp.WithDescription("Say who the caller is logged in as."),
		mcp.WithReadOnlyHintAnnotation(true)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("you are logged in as ada"), nil
		})
	streamable := server.NewStreamableHTTPServer(mcpSrv)
	mux := http.NewServeMux()
	prm := func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": o.srv.URL + "/mcp", "authorization_servers": []string{o.srv.URL}})
	}
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", prm)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", prm)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{
			"issuer": o.srv.URL, "authorization_endpoint": o.srv.URL + "/authorize",
			"token_endpoint": o.srv.URL + "/token", "registration_endpoint": o.srv.URL + "/register",
			"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
		})
	})
	mux.HandleFunc("POST /register", o.register)
	mux.HandleFunc("GET /authorize", o.authorize)
	mux.HandleFunc("POST /token", o.token)
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		o.mu.Lock()
		exp, ok := o.access[tok]
		live := ok && time.Now().Before(exp)
		if !live {
			o.rejected++
		}
		o.mu.Unlock()
		if !live {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, o.srv.URL))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		streamable.ServeHTTP(w, r)
	}))
	o.srv = httptest.NewServer(mux)
	t.Cleanup(o.srv.Close)
	return o
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (o *oauthServer) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		writeJSON(w, 400, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id := randomID()
	o.mu.Lock()
	o.clients[id] = req.RedirectURIs
	o.mu.Unlock()
	writeJSON(w, 201, map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": "none"})
}

func (o *oauthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	o.mu.Lock()
	redirects, known := o.clients[q.Get("client_id")]
	o.mu.Unlock()
	switch {
	case !known:
		http.Error(w, "unknown client", 400)
		return
	case !slices.Contains(redirects, q.Get("redirect_uri")):
		http.Error(w, "redirect_uri not registered", 400)
		return
	case q.Get("response_type") != "code" || q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		http.Error(w, "PKCE with S256 is required", 400)
		return
	case q.Get("resource") != o.srv.URL+"/mcp":
		http.Error(w, "resource must name the MCP server (RFC 8707): "+q.Get("resource"), 400)
		return
	}
	code := randomID()
	o.mu.Lock()
	o.codes[code] = codeGrant{client: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge")}
	o.mu.Unlock()
	// The person logged in: back to the client's loopback redirect.
	u, _ := url.Parse(q.Get("redirect_uri"))
	back := u.Query()
	back.Set("code", code)
	back.Set("state", q.Get("state"))
	u.RawQuery = back.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (o *oauthServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var client string
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		g, ok := o.codes[r.PostForm.Get("code")]
		delete(o.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || g.client != r.PostForm.Get("client_id") || g.redirect != r.PostForm.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "code, client, redirect or PKCE verifier wrong"})
			return
		}
		client = g.client
	case "refresh_token":
		c, ok := o.refresh[r.PostForm.Get("refresh_token")]
		delete(o.refresh, r.PostForm.Get("refresh_token")) // rotated
		if !ok || c != r.PostForm.Get("client_id") {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
		client = c
		o.refreshed++
	default:
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	at, rt := randomID(), randomID()
	o.access[at] = time.Now().Add(o.ttl)
	o.refresh[rt] = client
	writeJSON(w, 200, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(o.ttl.Seconds()), "refresh_token": rt})
}

func (o *oauthServer) counts() (refreshed, rejected int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.refreshed, o.rejected
}

// TestOAuthLoginEndToEnd: a remote server with auth: oauth is "login
// needed" in doctor, tools list and search until "quiver login" runs (the
// test plays the browser: it follows the printed address, and the
// authorization server sends it back to quiver's loopback redirect); then
// the quiver that was already serving connects on its own and a host's
// call reaches the protected server; an expired token is refreshed.
func TestOAuthLoginEndToEnd(t *testing.T) {
	o := newOAuthServer(t, 2*time.Second)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "servers.yaml")
	text := fmt.Sprintf("surface:\n  reveal: direct\nservers:\n  remote:\n    url: %s/mcp\n    auth: oauth\n", o.srv.URL)
	os.WriteFile(cfg, []byte(text), 0o600)

	// Before any login.
	code, out := quiverIn(t, dir, "doctor", "--config", cfg, "--state-dir", state, "--wait", "10s")
	if code != exitFailure || !strings.Contains(out, "login needed: run quiver login remote") {
		t.Fatalf("doctor before login: exit %d, want 1 with login needed\n%s", code, out)
	}
	if code, out := quiverIn(t, dir, "tools", "list", "--config", cfg, "--state-dir", state, "--wait", "10s"); !strings.Contains(out, "server remote is down: login needed: run quiver login remote") {
		t.Fatalf("tools list before login: exit %d, want login needed said\n%s", code, out)
	}
	h := startQuiver(t, text, hostOptions{args: []string{"--config", cfg, "--state-dir", state}})
	if got := toolresult.Text(h.search("who am I logged in as")); !strings.Contains(got, "login needed: run quiver login remote") {
		t.Fatalf("search before login must say the server needs a login:\n%s", got)
	}

	// quiver login, with the test as the browser.
	stdout, page := quiverLogin(t, o, dir, cfg, state)
	if !strings.Contains(page, "logged in to remote") {
		t.Errorf("the page the browser lands on: %s", page)
	}
	if !strings.Contains(stdout, "Logged in to remote") {
		t.Fatalf("quiver login said:\n%s", stdout)
	}
	if fi, err := os.Stat(registry.OAuthFile(state, "remote")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the token file: %v; want mode 0600", err)
	}

	// The serving quiver finds the token and connects.
	h.waitTools("remote__whoami")
	if res := h.call("remote__whoami", map[string]any{}); res.IsError || !strings.Contains(toolresult.Text(res), "logged in as ada") {
		t.Fatalf("a call through quiver after login: %s", toolresult.Text(res))
	}
	// The token lives 2 s: after it expires, quiver refreshes it.
	time.Sleep(2500 * time.Millisecond)
	if res := h.call("remote__whoami", map[string]any{}); res.IsError || !strings.Contains(toolresult.Text(res), "logged in as ada") {
		t.Fatalf("a call after the token expired: %s", toolresult.Text(res))
	}
	if refreshed, _ := o.counts(); refreshed == 0 {
		t.Fatal("the expired token was never refreshed")
	}
}

// quiverLogin runs "quiver login remote" against o with the test as the
// browser: it visits the authorization address quiver prints, which
// redirects to quiver's loopback. It returns what login printed and the
// page the browser landed on.
func quiverLogin(t *testing.T, o *oauthServer, dir, cfg, state string) (stdout, page string) {
	t.Helper()
	login := exec.Command(quiverBin, "login", "remote", "--no-browser", "--config", cfg, "--state-dir", state, "--timeout", "30s")
	login.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, "home"))
	stderr, _ := login.StderrPipe()
	var out strings.Builder
	login.Stdout = &out
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
	resp, err := http.Get(authURL) // follows the redirect to quiver's loopback
	if err != nil {
		login.Process.Kill()
		t.Fatalf("the browser's visit: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := login.Wait(); err != nil {
		t.Fatalf("quiver login: %v\n%s", err, out.String())
	}
	return out.String(), string(b)
}

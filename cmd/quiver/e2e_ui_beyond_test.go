//go:build !windows

package main

import (
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Beyond loopback, --ui needs the HTTP auth token set, and the page is
// then opened by that token and nothing less (found by the red team: the
// page kept a random token of its own and dropped its Host check there).
// A rebinding Host is refused; a stranger's cookie opens nothing; the
// auth token in the address opens the page at the machine's IP.
func TestUIBeyondLoopbackNeedsTheAuthToken(t *testing.T) {
	var ip net.IP
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			ip = n.IP
			break
		}
	}
	if ip == nil {
		t.Skip("no non-loopback IPv4 address here")
	}
	dir := t.TempDir()
	cfgPath, state := filepath.Join(dir, "servers.yaml"), filepath.Join(dir, "state")
	t.Setenv("QUIVER_AUTH_TOKEN", "the-http-auth-token-0123456789abcdef")
	cfg := "servers:\n  example:\n    command: quiver\n    args: [example-server]\n"
	os.WriteFile(cfgPath, []byte(cfg), 0o600)
	startQuiver(t, cfg, hostOptions{args: []string{"--config", cfgPath, "--state-dir", state,
		"--ui", "0.0.0.0:0"}})
	var pageURL string
	for deadline := time.Now().Add(10 * time.Second); pageURL == ""; time.Sleep(50 * time.Millisecond) {
		out, err := exec.Command(quiverBin, "ui", "--config", cfgPath, "--state-dir", state).CombinedOutput()
		if err == nil {
			pageURL = strings.TrimSpace(string(out))
		} else if time.Now().After(deadline) {
			t.Fatalf("quiver ui: %v\n%s", err, out)
		}
	}
	u, err := url.Parse(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	tok := u.Query().Get("token")
	if tok != "the-http-auth-token-0123456789abcdef" {
		t.Errorf("beyond loopback the page's address carries %q, want the HTTP auth token", tok)
	}
	lan := "http://" + net.JoinHostPort(ip.String(), u.Port())
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path, host string, cookie *http.Cookie) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", lan+path, nil)
		if host != "" {
			req.Host = host
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := get("/approvals?token="+url.QueryEscape(tok), "attacker.example", nil); res.StatusCode != http.StatusForbidden {
		t.Errorf("a rebinding Host with the token: %d, want 403", res.StatusCode)
	}
	if res := get("/approvals", "", &http.Cookie{Name: "quiver_operator_" + u.Port(), Value: tok}); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the token as a cookie, not a session: %d, want 401", res.StatusCode)
	}
	if res := get("/approvals?token=wrong", "", nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d, want 401", res.StatusCode)
	}
	res := get("/approvals?token="+url.QueryEscape(tok), "", nil)
	var sess *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "quiver_operator_"+u.Port() {
			sess = c
		}
	}
	if res.StatusCode != http.StatusSeeOther || sess == nil {
		t.Fatalf("the auth token at the machine's IP: %d, cookie %v; want 303 and a session", res.StatusCode, sess)
	}
	if res := get("/approvals", "", sess); res.StatusCode != http.StatusOK {
		t.Errorf("the session's cookie at the machine's IP: %d, want 200", res.StatusCode)
	}
}

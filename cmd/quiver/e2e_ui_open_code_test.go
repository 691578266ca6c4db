package main

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestUIOpenHandsTheBrowserNoReusableSecret is issue 22's class 6: quiver
// ui --open ran the browser with ?token=… in its arguments, which every
// account on the machine reads in /proc. The opener (here $BROWSER, a
// script that writes down its arguments) is handed a one-time code: it
// opens the page once, and the same address a second time opens nothing.
func TestUIOpenHandsTheBrowserNoReusableSecret(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in browser is a shell script")
	}
	dir := t.TempDir()
	cfgPath, state := filepath.Join(dir, "servers.yaml"), filepath.Join(dir, "state")
	cfg := exampleConfig("auto", "")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	startQuiver(t, cfg, hostOptions{args: []string{"--config", cfgPath, "--state-dir", state, "--ui", "127.0.0.1:0"}})
	_, base := openPage(t, cfgPath, state) // waits for the page; base has no token
	out, err := exec.Command(quiverBin, "ui", "--config", cfgPath, "--state-dir", state).CombinedOutput()
	if err != nil {
		t.Fatalf("quiver ui: %v\n%s", err, out)
	}
	token, _ := url.Parse(strings.TrimSpace(string(out)))
	tok := token.Query().Get("token")

	opened := openedByUIOpen(t, cfgPath, state, tok)
	if strings.Contains(opened, tok) || !strings.HasPrefix(opened, base) || !strings.Contains(opened, "code=") {
		t.Fatalf("the browser was given %q; want the page's address with a one-time code, never the token", opened)
	}
	open := func() (int, bool) {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
		res, err := c.Get(opened)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		u, _ := url.Parse(base)
		return res.StatusCode, len(jar.Cookies(u)) > 0
	}
	if code, session := open(); code != http.StatusOK || !session {
		t.Fatalf("the code, used first: %d, session %v; want the page and a session", code, session)
	}
	if code, session := open(); code != http.StatusUnauthorized || session {
		t.Fatalf("the code, used again (as another account that read it in /proc would): %d, session %v; want 401", code, session)
	}
}

// openedByUIOpen runs quiver ui --open with $BROWSER set to a script that
// writes down its arguments, and returns the address the browser was
// given. quiver ui --open must not print tok (the page's token) either.
func openedByUIOpen(t *testing.T, cfgPath, state, tok string) string {
	t.Helper()
	dir := t.TempDir()
	argv := filepath.Join(dir, "argv")
	browser := filepath.Join(dir, "browser.sh")
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %q.tmp && mv %q.tmp %q\n", argv, argv, argv)
	if err := os.WriteFile(browser, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(quiverBin, "ui", "--open", "--config", cfgPath, "--state-dir", state)
	cmd.Env = append(os.Environ(), "BROWSER="+browser)
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), tok) {
		t.Fatalf("quiver ui --open: %v (it must not print the token either)\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if args, _ := os.ReadFile(argv); args != nil {
			return strings.TrimSpace(string(args))
		}
		if time.Now().After(deadline) {
			t.Fatal("quiver ui --open did not run $BROWSER")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

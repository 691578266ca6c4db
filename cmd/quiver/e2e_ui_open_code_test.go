package main

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
// Nor the code: the opener is handed the path of a 0600 file that posts
// it, and the file is gone once the code is used.
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
	// The browser is handed a file only this user reads (issue 22's red
	// team raced a code in argv from /proc to the page's key): its path
	// only, never the token nor the code.
	fu, err := url.Parse(opened)
	if err != nil || fu.Scheme != "file" {
		t.Fatalf("the browser was given %q; want a file:// address of an opener file", opened)
	}
	file := filepath.FromSlash(fu.Path)
	if runtime.GOOS == "windows" {
		file = strings.TrimPrefix(file, `\`)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("opener file %s: %v, mode %v; want mode 0600", file, err, st)
	}
	if dst, err := os.Stat(filepath.Dir(file)); err != nil || dst.Mode().Perm() != 0o700 {
		t.Fatalf("opener file's folder: %v %v; want mode 0700", dst, err)
	}
	page, _ := os.ReadFile(file)
	m := regexp.MustCompile(`action="([^"]+)".*name="code" value="([0-9a-f]+)"`).FindStringSubmatch(string(page))
	if m == nil {
		t.Fatalf("the opener file posts no code to the page:\n%s", page)
	}
	action, code := m[1], m[2]
	if strings.Contains(opened, tok) || strings.Contains(opened, code) || !strings.HasPrefix(action, base) {
		t.Fatalf("the browser was given %q, the file posts to %q; want no token nor code in the arguments, the page's address in the file", opened, action)
	}
	open := func() (int, bool) {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
		req, _ := http.NewRequest(http.MethodPost, action, strings.NewReader(url.Values{"code": {code}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "null") // a file's form
		res, err := c.Do(req)
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
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("the opener file outlives its code: %v", err)
	}
	if code, session := open(); code != http.StatusUnauthorized || session {
		t.Fatalf("the code, used again: %d, session %v; want 401", code, session)
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

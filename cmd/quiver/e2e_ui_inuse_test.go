package main

import (
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A second quiver serve --ui on a port already taken (a second host with
// the same args, a quiver left running) still serves MCP: the page is off
// for that run, a WARN says so and names the quiver that holds the port;
// anything else holding it is named by its address (issue 29).
func TestServeUIPortInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state, first := filepath.Join(dir, "state"), filepath.Join(dir, "first.yaml")
	cfg := exampleConfig("auto", "")
	if err := os.WriteFile(first, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	startQuiver(t, cfg, hostOptions{args: []string{"--config", first, "--state-dir", state, "--ui", "127.0.0.1:0"}})
	var page string
	for deadline := time.Now().Add(10 * time.Second); page == ""; time.Sleep(50 * time.Millisecond) {
		out, err := exec.Command(quiverBin, "ui", "--config", first, "--state-dir", state).CombinedOutput()
		if err == nil {
			page = strings.TrimSpace(string(out))
		} else if time.Now().After(deadline) {
			t.Fatalf("quiver ui: %v\n%s", err, out)
		}
	}
	u, err := url.Parse(page)
	if err != nil {
		t.Fatal(err)
	}
	held := u.Host

	waitLog := func(log *syncBuffer, want ...string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			s := log.String()
			if containsEvery(s, want...) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the log never said %q:\n%s", want, s)
			}
		}
	}

	var log syncBuffer
	h := startQuiver(t, cfg, hostOptions{stderr: &log, args: []string{"--state-dir", state, "--ui", held}})
	h.searchUntil("search text files for a pattern", "example__search_text")
	waitLog(&log, "level=WARN", "the operator page is off for this run", "ui="+held, "held_by=\"quiver serve (pid ", first, "its_page=\"quiver ui --open --config "+first)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var other syncBuffer
	h = startQuiver(t, cfg, hostOptions{stderr: &other, args: []string{"--state-dir", state, "--ui", ln.Addr().String()}})
	h.searchUntil("search text files for a pattern", "example__search_text")
	waitLog(&other, "level=WARN", "the operator page is off for this run", "ui="+ln.Addr().String(), "give --ui another address")
	if strings.Contains(other.String(), "held_by") {
		t.Fatalf("a port held by something else is said to be quiver's:\n%s", other.String())
	}
}

func containsEvery(s string, want ...string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeInATerminalSaysItWaits is issue 17's point 6: run by hand in a
// terminal, serve says on stderr that it waits for a host on stdin; run by
// a host (a pipe, or /dev/null), it says nothing.
func TestServeInATerminalSaysItWaits(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("script (util-linux) is needed to give quiver a terminal")
		}
		t.Skip("script (util-linux) is not installed; it gives quiver a terminal")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.yaml")
	os.WriteFile(cfg, []byte(exampleConfig("auto", "")), 0o600)
	serve := quiverBin + " serve --config " + cfg + " --state-dir " + filepath.Join(dir, "state") + " --log-level error"
	// script gives quiver a pseudo-terminal; stdin at EOF ends the session.
	cmd := exec.Command(script, "-qec", serve, os.DevNull)
	cmd.Stdin = strings.NewReader("")
	done := make(chan struct{})
	var out []byte
	go func() { out, _ = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	if !strings.Contains(string(out), "quiver serve: waiting for an MCP host on stdin") {
		t.Errorf("in a terminal, serve must say it waits for a host:\n%s", out)
	}
	piped, _ := exec.Command(quiverBin, "serve", "--config", cfg, "--state-dir", filepath.Join(dir, "state"), "--log-level", "error").CombinedOutput()
	if strings.Contains(string(piped), "waiting for an MCP host") {
		t.Errorf("run by a host, serve must not talk to a person:\n%s", piped)
	}
}

package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAuditSaysWhyACallFailed: a call the server answers with an error is
// recorded with the server's words, and quiver audit shows them where it
// showed only "Allowed by policy." (issue 29).
func TestAuditSaysWhyACallFailed(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "state")
	h := startQuiver(t, exampleConfig("direct", ""), hostOptions{args: []string{"--state-dir", state}})
	h.searchUntil("read a saved note", "example__notes_read")
	if res := h.call("example__notes_read", map[string]any{"id": "n999"}); !res.IsError {
		t.Fatal("reading a note that does not exist must fail")
	}
	want := `failed: There is no note with id "n999". Call notes_list`
	var out []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, _ = exec.Command(quiverBin, "audit", "--state-dir", state, "--tool", "example__notes_read").CombinedOutput()
		if strings.Contains(string(out), want) || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "error") {
		t.Fatalf("quiver audit must say why the call failed (%q):\n%s", want, out)
	}
	out, _ = exec.Command(quiverBin, "audit", "--state-dir", state, "--tool", "example__notes_read", "--json").CombinedOutput()
	if !strings.Contains(string(out), `"detail":"There is no note with id \"n999\".`) {
		t.Fatalf("quiver audit --json must carry the detail:\n%s", out)
	}
}

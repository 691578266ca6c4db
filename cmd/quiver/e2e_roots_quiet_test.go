package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestFilesystemStartIsQuiet: server-filesystem asks for roots as it
// starts, before any host could give them, and logs quiver's answer. That
// is normal, so its line is logged at DEBUG, not at INFO at every start
// (issue 29: "Failed to request initial roots" in every log).
func TestFilesystemStartIsQuiet(t *testing.T) {
	t.Parallel()
	script := filesystemServer(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`
surface:
  reveal: direct
servers:
  filesystem:
    command: node
    args: [%q, %q]
    path_base: roots
`, script, dir)
	var log syncBuffer
	h := startQuiver(t, cfg, hostOptions{stderr: &log, args: []string{"--log-level", "debug"}})
	h.waitTools("filesystem__read_text_file")
	quoted := regexp.MustCompile(`(?m)^.*level=(\w+).*stderr: Failed to request initial roots from client.*$`)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		m := quoted.FindStringSubmatch(log.String())
		if m != nil {
			if m[1] != "DEBUG" {
				t.Fatalf("the server's roots line is logged at %s, want DEBUG:\n%s", m[1], m[0])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-filesystem never said it asked for roots (has it changed?):\n%s", log.String())
		}
	}
}

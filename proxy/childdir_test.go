package proxy

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// A quiver that died without closing leaves its servers' folders behind:
// the next one on the state dir removes those whose process is gone, and
// keeps a live one's.
func TestChildFoldersOfDeadQuiversAreRemoved(t *testing.T) {
	state := t.TempDir()
	dead := filepath.Join(state, "run", "quiver-999999999-1", "fs") // past any pid_max
	live := filepath.Join(state, "run", fmt.Sprintf("quiver-%d-1", os.Getpid()), "fs")
	for _, d := range []string{dead, live} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := childFolders(state, func(string) bool { return false }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if _, err := os.Stat(filepath.Dir(dead)); err == nil {
		t.Errorf("the folder of a quiver that is gone was kept: %s", dead)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the folder of a running quiver was removed: %v", err)
	}
	if filepath.Dir(dir) != filepath.Join(state, "run") {
		t.Errorf("childFolders = %s, want a folder in %s", dir, filepath.Join(state, "run"))
	}
}

// A state dir under a folder the fence holds (allowed_dirs: [~] with the
// default state dir under it) does not hold the servers' folders: a call
// could write an .npmrc or a .git in a folder above them that is not
// quiver's, and npm or git would obey it at a server's next start.
func TestChildFoldersLeaveAStateDirUnderTheFence(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, ".local", "state", "quiver")
	fenced := func(d string) bool {
		return d == home || len(d) > len(home) && d[:len(home)+1] == home+string(filepath.Separator)
	}
	dir, err := childFolders(state, fenced, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for d := filepath.Dir(dir); filepath.Dir(d) != d; d = filepath.Dir(d) {
		if fenced(d) {
			t.Fatalf("childFolders = %s, under %s, which the fence holds", dir, d)
		}
	}
}

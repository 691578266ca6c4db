//go:build !windows

package proxy

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A folder whose parent any account may write is no place for the
// servers' run folder: npm would obey a package.json or an .npmrc planted
// above it (red team W2: /tmp/.npmrc).
func TestPrivateFolderRefusesAWritableParent(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(base, "shared")
	run := filepath.Join(shared, "run")
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := privateFolder(run); err == nil {
		t.Errorf("privateFolder(%s) = nil, want a refusal: %s is 0777", run, shared)
	}
	if err := privateFolderFor(run, -1); err == nil && os.Getuid() != 0 {
		t.Errorf("privateFolderFor(%s, another uid) = nil, want a refusal: the folders are not its", run)
	}
	if err := privateFolder("/tmp"); err == nil {
		if fi, _ := os.Stat("/tmp"); fi != nil && fi.Mode().Perm()&0o002 != 0 {
			t.Errorf("privateFolder(/tmp) = nil, but /tmp is %v", fi.Mode().Perm())
		}
	}
	if err := privateFolder("/"); err != nil {
		t.Errorf("privateFolder(/) = %v, want nil", err)
	}
}

// With the state dir in the fence and no private place left, there is no
// run folder: npm would walk up from one in a shared temporary folder to
// a package.json or .npmrc any account may plant (red team W2).
func TestChildFoldersRefuseASharedTemporaryFolder(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, ".local", "state", "quiver")
	shared := filepath.Join(t.TempDir(), "tmp")
	if err := os.MkdirAll(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", shared)
	t.Setenv("XDG_RUNTIME_DIR", shared)
	fenced := func(d string) bool { return d == home || strings.HasPrefix(d, home+string(filepath.Separator)) }
	dir, err := childFolders(state, fenced, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if dir != "" {
		os.RemoveAll(dir)
		t.Fatalf("childFolders = %s, want none: %s is 0777", dir, shared)
	}
}

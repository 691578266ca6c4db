package proxy

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestOpenedFileIsTheJudgedOne: read_file opens the path the gate judged
// and then checks what it opened. A folder on that path swapped for one
// holding a link out of the fence (red team 2: move_file, between the
// gate's look and the open) leads the open elsewhere; the check refuses
// it, by where the opened file is and by resolving again.
func TestOpenedFileIsTheJudgedOne(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inside, outside := filepath.Join(base, "fenced"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(inside, "A", "x"), filepath.Join(inside, "B"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	judged := filepath.Join(inside, "A", "x", "f.txt")
	if err := os.WriteFile(judged, []byte("inside"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "f.txt"), []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T) *os.File {
		fh, err := openNoWait(judged)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fh.Close() })
		return fh
	}
	checks := map[string]func(*os.File, string) error{"openedIsJudged": openedIsJudged, "stillAt": stillAt}
	for name, check := range checks {
		if err := check(open(t), judged); err != nil {
			t.Errorf("%s: the file the gate judged, opened where it was judged: %v", name, err)
		}
	}
	// The swap: A (holding the real x) out of the way, B (whose x links
	// out of the fence) in its place. The open follows the link.
	if err := os.Symlink(outside, filepath.Join(inside, "B", "x")); err != nil {
		if runtime.GOOS == "windows" {
			t.Skip("symlinks need privileges here:", err)
		}
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(inside, "A"), filepath.Join(inside, "C")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(inside, "B"), filepath.Join(inside, "A")); err != nil {
		t.Fatal(err)
	}
	for name, check := range checks {
		fh := open(t)
		if err := check(fh, judged); !errors.Is(err, errSwapped) {
			t.Errorf("%s: the open went through a link swapped in after the gate looked, and was let through: %v", name, err)
		}
	}
	// Swapped back after the open (the race's other half): the opened
	// file is still the outside one, wherever the path leads now.
	fh := open(t)
	if err := os.Rename(filepath.Join(inside, "A"), filepath.Join(inside, "B")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(inside, "C"), filepath.Join(inside, "A")); err != nil {
		t.Fatal(err)
	}
	if err := stillAt(fh, judged); !errors.Is(err, errSwapped) {
		t.Errorf("stillAt: the outside file opened before the path was swapped back was let through: %v", err)
	}
	if _, err := openedPath(fh); err == nil {
		if err := openedIsJudged(fh, judged); !errors.Is(err, errSwapped) {
			t.Errorf("openedIsJudged: the outside file opened before the path was swapped back was let through: %v", err)
		}
	}
}

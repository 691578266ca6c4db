package gate

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// TestWindowsOSFence runs the fence against Windows itself: the rules
// that TestWindowsFence checks on every OS, with the names, short names,
// junctions, links and streams of a real NTFS folder answered by
// FindFirstFile and os.Readlink. Windows only.
func TestWindowsOSFence(t *testing.T) {
	base := t.TempDir() // on many machines under an 8.3 name (RUNNER~1)
	work, outside, cfg := filepath.Join(base, "work"), filepath.Join(base, "outside"), filepath.Join(base, "cfg")
	long := filepath.Join(work, "Long Name Folder")
	for _, d := range []string{long, outside, cfg} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(work, "a.txt"), filepath.Join(long, "c.txt"), filepath.Join(outside, "x.txt"), filepath.Join(cfg, "servers.yaml")} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "a.txt:secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Junctions need no privilege; symbolic links may.
	for name, target := range map[string]string{"jout": outside, "jcfg": cfg} {
		if out, err := exec.Command("cmd", "/c", "mklink", "/J", filepath.Join(work, name), target).CombinedOutput(); err != nil {
			t.Fatalf("mklink /J: %v: %s", err, out)
		}
	}
	symlinks := os.Symlink(outside, filepath.Join(work, "sout")) == nil

	g, err := New(Policy{AllowedDirs: []string{work}}, WithProtected(filepath.Join(cfg, "servers.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	read := framed(ClassRead, []string{work}, base)
	allow, ask, protected := want{Allow, CodeAllow, nil}, want{Ask, CodeAskReadOutside, nil}, want{Deny, CodeProtectedPath, nil}
	cases := []struct {
		rule string
		path string
		want want
	}{
		{"drive_path_inside", filepath.Join(work, "a.txt"), allow},
		{"forward_slashes", filepath.ToSlash(filepath.Join(work, "a.txt")), allow},
		{"other_case", strings.ToUpper(filepath.Join(work, "a.txt")), allow},
		{"verbatim", `\\?\` + filepath.Join(work, "a.txt"), allow},
		{"relative", `Long Name Folder\c.txt`, allow},
		{"stream", filepath.Join(work, "a.txt:secret"), allow},
		{"outside", filepath.Join(outside, "x.txt"), ask},
		{"sibling_prefix", work + `-evil\x`, ask},
		{"junction_out", filepath.Join(work, "jout", "x.txt"), ask},
		{"junction_out_trailing_dot", filepath.Join(work, "jout.") + `\x.txt`, ask},
		{"junction_to_quivers_files", filepath.Join(work, "jcfg", "servers.yaml"), protected},
		{"device_name", filepath.Join(work, "NUL"), ask},
	}
	if short := shortName(t, long); short != "" {
		cases = append(cases, struct {
			rule string
			path string
			want want
		}{"short_name_inside", filepath.Join(short, "c.txt"), allow})
	}
	if symlinks {
		cases = append(cases, struct {
			rule string
			path string
			want want
		}{"symlink_out", filepath.Join(work, "sout", "x.txt"), ask})
	} else {
		t.Log("symbolic links need privileges here (Developer Mode): only junctions were checked")
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			check(t, g.Evaluate(context.Background(), call(read, `{"path":`+js(tc.path)+`}`)), tc.want)
		})
	}

	// The layer itself: a name that is not there, and a pattern.
	if _, err := (winOS{}).entry(filepath.Join(work, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing name: %v; want fs.ErrNotExist", err)
	}
	if _, err := (winOS{}).entry(filepath.Join(work, "*")); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a pattern was looked up as a name: %v", err)
	}
	e, err := (winOS{}).entry(filepath.Join(work, "jout"))
	if err != nil || !strings.EqualFold(e.link, outside) {
		t.Errorf("junction: %+v, %v; want a link to %s", e, err, outside)
	}
}

// shortName is p's 8.3 name, or "" when the volume makes none.
func shortName(t *testing.T, p string) string {
	t.Helper()
	in, err := windows.UTF16PtrFromString(p)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n, err := windows.GetShortPathName(in, &buf[0], uint32(len(buf)))
	if err != nil || n == 0 {
		return ""
	}
	s := windows.UTF16ToString(buf[:n])
	if strings.EqualFold(s, p) {
		t.Log("this volume makes no 8.3 names: the short name case was not checked")
		return ""
	}
	return s
}

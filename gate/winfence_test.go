package gate

import (
	"path/filepath"
	"runtime"
	"testing"
)

// TestWindowsPlacesNothing: on Windows the fence resolves no path yet, so
// every path a local server is given is outside (a person decides); only
// a relative path of a server whose relative paths are not on this
// machine stays nothing to judge, as on unix. Checked on every OS: the
// rule is a plain function of the string and the frame.
func TestWindowsPlacesNothing(t *testing.T) {
	local := frame{bases: []string{`C:\Users\you\work`}}
	remote := frame{elsewhere: true}
	remoteWithBase := frame{elsewhere: true, bases: []string{`C:\srv`}}
	for _, tc := range []struct {
		path   string
		fr     frame
		placed bool // "" from windowsUnplaced: left to the rest of the fence
	}{
		{`C:\Users\you\work\a.txt`, local, false},
		{`c:/users/you/WORK/a.txt`, local, false},
		{`\\?\C:\Users\you\work\a.txt`, local, false},
		{`\\server\share\a.txt`, local, false},
		{`\\.\PhysicalDrive0`, local, false},
		{`notes\a.txt`, local, false},
		{`a.txt`, frame{}, false},
		{`~\a.txt`, local, false},
		{`file:///C:/Users/you/a.txt`, local, false},
		// A remote server's relative names are not files here...
		{`notes\a.txt`, remote, true},
		{`src/main.go`, remote, true},
		// ...but what Windows reads from a drive or a root is.
		{`C:\Windows\win.ini`, remote, false},
		{`C:win.ini`, remote, false},
		{`\Windows\win.ini`, remote, false},
		{`/Windows/win.ini`, remote, false},
		{`\\server\share\a.txt`, remote, false},
		{`~/a.txt`, remote, false},
		{`file:///C:/a.txt`, remote, false},
		{``, remote, false},
		// A path_base puts relative paths on this machine.
		{`notes\a.txt`, remoteWithBase, false},
	} {
		why := windowsUnplaced(tc.path, tc.fr)
		if (why == "") != tc.placed {
			t.Errorf("%q in %+v: unplaced because %q; want left to the fence: %v", tc.path, tc.fr, why, tc.placed)
		}
	}
}

// TestWindowsReadingsAreUnresolved: on Windows itself, readings leaves
// every path of a local server unresolved (outside), whatever its shape,
// and never touches the file system. Runs only there.
func TestWindowsReadingsAreUnresolved(t *testing.T) {
	if runtime.GOOS != "windows" {
		t.Skip("Windows only; TestWindowsPlacesNothing checks the rule everywhere")
	}
	home := t.TempDir()
	r := newResolver(home)
	for _, p := range []string{home, filepath.Join(home, "a.txt"), `a.txt`, `..\a.txt`, `\a.txt`, `~\a.txt`} {
		got, err := r.readings(p, frame{bases: []string{home}, home: home}, nil)
		if err != nil || got.unresolved == "" || len(got.readings) != 0 {
			t.Errorf("%q: %+v, %v; want unresolved, no reading", p, got, err)
		}
	}
	if root, err := r.resolveRoot(home); err != nil || root != filepath.Clean(home) {
		t.Errorf("allowed folder %q: %q, %v; want it as written", home, root, err)
	}
}

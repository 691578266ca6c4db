package proxy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// errSwapped says that the file read_file opened is not the one the gate
// judged: a folder on its path was swapped (a move through another tool)
// between the gate's look and the open.
var errSwapped = errors.New("the path changed while quiver was opening it (a folder on it was moved or replaced); read it again")

// openedIsJudged checks the file fh that read_file opened by the name real
// — the path the gate resolved, link-free, and allowed — after the open,
// so that no swap between the gate's look and the read can hand back
// another file: the opened file must be the one at real now.
//
// Where the operating system says where an open file is (openedPath:
// Linux's /proc/self/fd, Windows' final path of the handle), that is
// compared with real: a file reached through a link swapped in after the
// gate looked lives elsewhere, whatever the path says by then. Elsewhere
// real is resolved again and must still be link-free and name the same
// file (os.SameFile); a swap there would have to be undone and redone
// between those two looks and the open.
func openedIsJudged(fh *os.File, real string) error {
	if p, err := openedPath(fh); err == nil {
		if !samePath(p, real) {
			return errSwapped
		}
		return nil
	}
	return stillAt(fh, real)
}

// stillAt is openedIsJudged where the system does not say where an open
// file is: real, resolved again, is still link-free and names fh.
func stillAt(fh *os.File, real string) error {
	now, err := filepath.EvalSymlinks(real)
	if err != nil || !samePath(now, real) {
		return errSwapped
	}
	at, err := os.Stat(real)
	if err != nil {
		return errSwapped
	}
	opened, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("stat the opened file: %w", err)
	}
	if !os.SameFile(at, opened) {
		return errSwapped
	}
	return nil
}

// samePath compares two resolved paths as the file system does: without
// case where names are case-insensitive by default (macOS, Windows).
func samePath(a, b string) bool {
	a, b = filepath.Clean(a), filepath.Clean(b)
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return strings.EqualFold(a, b)
	}
	return a == b
}

//go:build !windows

package gate

import (
	"fmt"
	"runtime"
)

// resolveRootOS resolves an allowed folder, absolute and clean, through
// the file system, as every path argument is (physical).
func resolveRootOS(abs string) (string, error) { return physical(abs, nil) }

// osWinFS is nil here: this machine's servers read unix paths. Tests give
// the gate a winFS of their own to run the Windows fence (winfence.go).
func osWinFS() winFS { return nil }

// unplacedOS says why f, one reading of a path argument, cannot be placed
// on this machine, or "" when the fence can place it. A Windows path
// cannot be: this server does not run on Windows.
func unplacedOS(f string, _ frame) string {
	if isWindowsPath(f) {
		return fmt.Sprintf("it is a Windows path and this server runs on %s", runtime.GOOS)
	}
	return ""
}

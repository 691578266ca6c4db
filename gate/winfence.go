package gate

import "strings"

// windowsUnplaced is unplacedOS on Windows, here so that every OS tests
// it. Nothing is placed: a relative path of a server whose relative paths
// are not on this machine (frame.elsewhere, no path_base) is still nothing
// to judge, as on unix; every other string is unresolved, so the call is
// outside the fence.
func windowsUnplaced(f string, fr frame) string {
	if fr.elsewhere && len(fr.bases) == 0 && windowsRelative(f) {
		return ""
	}
	return "quiver's fence does not resolve paths on Windows yet"
}

// windowsRelative reports whether Windows reads f relative to the current
// folder: not a drive path ("C:\x"), not drive-relative ("C:x"), not
// rooted on the current drive ("\x", "/x"), not a UNC or device path, not
// "~" (a server may expand it) and not a file: URI.
func windowsRelative(f string) bool {
	switch {
	case f == "", strings.HasPrefix(f, "~"), isFileURI(f):
		return false
	case f[0] == '\\' || f[0] == '/':
		return false
	case len(f) >= 2 && f[1] == ':':
		return false
	}
	return true
}

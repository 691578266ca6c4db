//go:build windows

package proxy

// privateFolder accepts every folder on Windows: the temporary folder is
// the user's own (%LOCALAPPDATA%\Temp), and quiver does not read ACLs.
func privateFolder(string) error { return nil }

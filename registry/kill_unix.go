//go:build unix

package registry

import "syscall"

// killGroup kills every process left in the process group pgid: what a
// stdio server started (npx starts node, which may start more) and left
// behind once the server itself has been reaped. childAttrs made the
// server the leader of its own group.
func killGroup(pgid int) error {
	return syscall.Kill(-pgid, syscall.SIGKILL)
}

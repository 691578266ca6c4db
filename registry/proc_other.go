//go:build !linux

package registry

import "syscall"

// childAttrs puts a stdio server in its own process group, so stopping it
// stops what it spawned.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

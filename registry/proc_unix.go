//go:build unix && !linux

package registry

import "syscall"

// childAttrs puts a stdio server in its own process group, so stopping it
// stops what it spawned (see tree). Only Linux can also have the kernel
// kill the child when quiver dies (proc_linux.go): elsewhere on unix a
// child whose quiver was SIGKILLed sees its stdin close and is expected to
// exit, as MCP's stdio transport asks of every server.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

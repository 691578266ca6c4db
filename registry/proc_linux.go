package registry

import "syscall"

// childAttrs puts a stdio server in its own process group (so stopping it
// stops what it spawned, see tree) and, on Linux, has the kernel kill it
// if quiver dies without a chance to stop it (SIGKILL, OOM): a child must
// not outlive the proxy that owns it. Go never ends the OS thread that
// started the child while quiver runs (nothing here locks threads), so the
// signal comes only with quiver's death.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

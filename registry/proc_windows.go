package registry

import "syscall"

// childAttrs asks nothing of a stdio server's start on Windows: there are
// no process groups, and the Job Object that stands for one is made right
// after the start, by superviseTree (kill_windows.go).
func childAttrs() *syscall.SysProcAttr { return nil }

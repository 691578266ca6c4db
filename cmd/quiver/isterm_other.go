//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package main

import "io"

// isTerminal is false where quiver cannot tell: the hint it guards is
// only a courtesy.
func isTerminal(io.Reader) bool { return false }

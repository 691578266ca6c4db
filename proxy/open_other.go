//go:build !unix

package proxy

import "os"

// openNoWait opens path for reading; opening a named pipe does not wait
// for a writer here.
func openNoWait(path string) (*os.File, error) { return os.Open(path) }

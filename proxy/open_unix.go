//go:build unix

package proxy

import (
	"os"
	"syscall"
)

// openNoWait opens path for reading without waiting for a FIFO's writer.
func openNoWait(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

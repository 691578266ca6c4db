//go:build !linux && !windows

package proxy

import (
	"errors"
	"os"
)

// openedPath is not known here; openedIsJudged checks by resolving again.
func openedPath(*os.File) (string, error) {
	return "", errors.ErrUnsupported
}

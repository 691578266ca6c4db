package registry

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/quiver-mcp/quiver/internal/atomicfile"
)

// SwitchTools switches the tools named by names (exposed names or globs)
// on or off in the toggles file at path, as quiver tools enable and
// disable do: the file is edited in place with its comments kept
// (EditToggles) and replaced atomically, so a running quiver's watcher
// applies it. moved reports that the list was moved to the end of the
// file so that it wins.
func SwitchTools(path string, on bool, names []string) (moved bool, err error) {
	src, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return false, err
	}
	out, moved, err := EditToggles(src, on, names)
	if err != nil {
		if !errors.Is(err, ErrInvalidConfig) {
			err = &PatternError{Err: err}
		}
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	if err := atomicfile.Write(path, out, 0o644); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return moved, nil
}

// A PatternError is a name or glob SwitchTools cannot use; the toggles
// file is left as it was.
type PatternError struct{ Err error }

func (e *PatternError) Error() string { return e.Err.Error() }
func (e *PatternError) Unwrap() error { return e.Err }

package registry

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces p with b so that a reader (or quiver's
// watcher) sees the old file or the new one, never half of one: a temp file
// beside it, fsync, rename, fsync of the folder.
func WriteFileAtomic(p string, b []byte, mode os.FileMode) error {
	// A symlinked file is written where it points: renaming over the link
	// would replace it with a plain file.
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	if fi, err := os.Stat(p); err == nil {
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(p)
	f, err := os.CreateTemp(dir, "."+filepath.Base(p)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), p); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

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
	if err := WriteFileAtomic(path, out, 0o644); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return moved, nil
}

// A PatternError is a name or glob SwitchTools cannot use; the toggles
// file is left as it was.
type PatternError struct{ Err error }

func (e *PatternError) Error() string { return e.Err.Error() }
func (e *PatternError) Unwrap() error { return e.Err }

// Package atomicfile replaces files whole: a reader (or quiver's watcher)
// sees the old file or the new one, never half of one.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces p with b: a temp file beside it, fsync, rename, fsync of
// the folder. An existing file keeps its mode (mode is for a new one), and
// a symlinked file is written where it points, as renaming over the link
// would replace it with a plain file.
func Write(p string, b []byte, mode os.FileMode) error {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	if fi, err := os.Stat(p); err == nil {
		mode = fi.Mode().Perm()
	}
	return replace(p, b, mode)
}

// WritePrivate replaces path with b for files that hold secrets: mode
// 0600 whatever the file had, readable by its owner only from the first
// byte (os.CreateTemp makes the temp file 0600), in a folder created 0700
// if needed.
func WritePrivate(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return replace(path, b, 0o600)
}

func replace(p string, b []byte, mode os.FileMode) error {
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

// Package atomicfile writes files that hold secrets: whole or not at all,
// and readable by their owner only from the first byte.
package atomicfile

import (
	"os"
	"path/filepath"
)

// WritePrivate replaces path with b, mode 0600, creating its folder (mode
// 0700) if needed. The bytes go to a temporary file beside it (created
// 0600 by os.CreateTemp), which is synced and renamed over path, so a
// reader sees the old file or the new one, never a part.
func WritePrivate(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
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
	return os.Rename(f.Name(), path)
}

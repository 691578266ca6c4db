// Package logfile is a log file that rotates by size: when a write would
// take the file past its limit, the file becomes PATH.1 (PATH.1 becomes
// PATH.2, and so on), the oldest beyond the number kept is removed, and a
// new PATH is begun. It is for serve's --log-file, for hosts that hide
// quiver's stderr; it is not a general log shipper.
package logfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// Defaults of serve's --log-file: five old files of 10 MiB besides the
// current one, 60 MiB at most.
const (
	DefaultMaxBytes = 10 << 20
	DefaultKeep     = 5
)

// A Writer is a log file rotated by size. It is safe for concurrent use;
// each Write lands whole in one file (a log line is never split across
// two).
type Writer struct {
	path     string
	maxBytes int64
	keep     int

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open opens (appends to) the log file at path, creating it and its
// folder (0700; the file 0600: a log line may name what a person works
// on). maxBytes is the size at which it rotates, keep the number of old
// files kept (0 keeps none: the file starts over).
func Open(path string, maxBytes int64, keep int) (*Writer, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("log file %s: the size limit must be positive", path)
	}
	if keep < 0 {
		keep = 0
	}
	w := &Writer{path: path, maxBytes: maxBytes, keep: keep}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) open() error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("log file: %w", err)
	}
	w.f, w.size = f, fi.Size()
	return nil
}

// Write writes p to the file, rotating first when p would take it past
// the limit (a single write larger than the limit gets a file of its own).
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return 0, os.ErrClosed
	}
	if w.size > 0 && w.size+int64(len(p)) > w.maxBytes {
		if err := w.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := w.f.Write(p)
	w.size += int64(n)
	return n, err
}

// Files are every file a Writer for path keeping keep old ones writes or
// renames to: path, then path.1 ... path.keep, whether they exist yet or
// not. serve protects them all from tools (README, "Security"): the log
// is quiver's record of what ran, for a person to read.
func Files(path string, keep int) []string {
	out := []string{path}
	for i := 1; i <= keep; i++ {
		out = append(out, path+"."+strconv.Itoa(i))
	}
	return out
}

// rotate closes the file before renaming it (Windows cannot rename an
// open file), shifts the old ones up by one, and begins a new file.
func (w *Writer) rotate() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	w.f = nil
	old := func(i int) string { return Files(w.path, i)[i] }
	if w.keep == 0 {
		if err := os.Remove(w.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("log file: %w", err)
		}
	} else {
		if err := os.Remove(old(w.keep)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("log file: %w", err)
		}
		for i := w.keep - 1; i >= 1; i-- {
			if err := os.Rename(old(i), old(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("log file: %w", err)
			}
		}
		if err := os.Rename(w.path, old(1)); err != nil {
			return fmt.Errorf("log file: %w", err)
		}
	}
	return w.open()
}

// Close closes the file; later writes fail.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

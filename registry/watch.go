package registry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchOptions configure Watch. Apply is required.
type WatchOptions struct {
	// Servers is the servers.yaml in force; "" when the configuration is
	// built in, which is not watched.
	Servers string
	// Toggles is the toggles file; "" for none.
	Toggles string
	// Debounce is how long the files must be quiet before a reload
	// (default 200 ms): an editor's save is several events.
	Debounce time.Duration
	// Lookup resolves ${VAR} and ${keyring:NAME} (default: the lookup the
	// configuration in force was parsed with, else os.LookupEnv).
	Lookup func(string) (string, bool)
	// Apply puts a valid configuration in force. An error rejects it whole
	// and the last good configuration stays (say what is wrong: it is
	// logged and kept in the status).
	Apply  func(context.Context, *Config) error
	Logger *slog.Logger
	// OnStatus is told the status after every reload that did something.
	OnStatus func(ReloadStatus)
}

// ReloadStatus is what the watcher has done so far.
type ReloadStatus struct {
	Servers string `json:"servers,omitempty"`
	Toggles string `json:"toggles,omitempty"`
	// ServersHash and TogglesHash identify the files in force.
	ServersHash string `json:"servers_sha256,omitempty"`
	TogglesHash string `json:"toggles_sha256,omitempty"`
	// Applied is when the configuration in force was applied (zero: the
	// one quiver started with); Reloads counts successful reloads.
	Applied time.Time `json:"applied,omitzero"`
	Reloads int       `json:"reloads"`
	// ServersMissing is true while servers.yaml is gone (the last good
	// configuration stays in force).
	ServersMissing bool `json:"servers_missing,omitempty"`
	// LastError is why the last reload was rejected, "" when it was not.
	LastError string    `json:"last_error,omitempty"`
	Failed    time.Time `json:"failed,omitzero"`
}

// A Watcher reloads the configuration when servers.yaml or the toggles
// file really changes. See Watch.
type Watcher struct {
	o       WatchOptions
	log     *slog.Logger
	fsw     *fsnotify.Watcher
	cancel  context.CancelFunc
	done    chan struct{}
	current *Config         // owned by the loop
	names   map[string]bool // the files' paths, and where they point if symlinks

	mu     sync.Mutex
	status ReloadStatus
	tried  [2]string // hashes of the files last tried, valid or not
}

// Watch watches the directories of servers.yaml and the toggles file
// (fsnotify on a directory sees every way editors save: in place,
// rename-over, rename-and-recreate) and, once they have been quiet for
// Debounce, reloads if either file's content changed (SHA-256). A
// servers.yaml that is gone keeps the last good configuration; a toggles
// file that is gone switches nothing. A file that does not parse or
// validate, or that Apply rejects, is rejected whole and logged with its
// file, line and key. current is the configuration in force, its Toggles
// included.
func Watch(ctx context.Context, current *Config, o WatchOptions) (*Watcher, error) {
	if o.Debounce <= 0 {
		o.Debounce = 200 * time.Millisecond
	}
	if o.Lookup == nil {
		o.Lookup = current.opts.Lookup
	}
	if o.Lookup == nil {
		o.Lookup = os.LookupEnv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{o: o, log: o.Logger, current: current, done: make(chan struct{})}
	w.status = ReloadStatus{Servers: o.Servers, Toggles: o.Toggles, ServersHash: current.Hash}
	if current.Toggles != nil {
		w.status.TogglesHash = current.Toggles.Hash
	} else {
		w.status.TogglesHash = emptyHash
	}
	w.tried = [2]string{w.status.ServersHash, w.status.TogglesHash}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch config: %w", err)
	}
	w.fsw = fsw
	// The toggles file's folder is made if it is missing (the user config
	// folder, with the built-in servers.yaml): `quiver tools disable` may
	// create the file there later, and an unwatched folder would need a
	// restart. A file that is a symlink is watched where it points too,
	// since an edit of the target changes nothing in the link's folder.
	if o.Toggles != "" {
		_ = os.MkdirAll(filepath.Dir(o.Toggles), 0o755)
	}
	w.names = map[string]bool{}
	var dirs []string
	for _, p := range []string{o.Servers, o.Toggles} {
		if p == "" {
			continue
		}
		paths := []string{filepath.Clean(p)}
		if real, err := filepath.EvalSymlinks(p); err == nil && real != paths[0] {
			paths = append(paths, real)
		}
		for _, p := range paths {
			w.names[p] = true
			dir := filepath.Dir(p)
			if slices.Contains(dirs, dir) {
				continue
			}
			if err := fsw.Add(dir); err != nil {
				w.log.Warn("config: cannot watch a folder; changes there need a restart", "dir", dir, "err", err)
				continue
			}
			dirs = append(dirs, dir)
		}
	}
	ctx, w.cancel = context.WithCancel(ctx)
	go w.loop(ctx)
	return w, nil
}

// Status returns what the watcher has done so far.
func (w *Watcher) Status() ReloadStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}

// Close stops watching and waits for a reload in progress to finish.
func (w *Watcher) Close() error {
	w.cancel()
	<-w.done
	return nil
}

func (w *Watcher) loop(ctx context.Context) {
	defer close(w.done)
	defer w.fsw.Close()
	names := w.names
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			// "..data" is how Kubernetes swaps a ConfigMap's files.
			if !names[filepath.Clean(ev.Name)] && !strings.HasPrefix(filepath.Base(ev.Name), "..") {
				continue
			}
			if ev.Has(fsnotify.Write) || ev.Has(fsnotify.Create) || ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove) {
				timer.Reset(w.o.Debounce)
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			// An overflow loses events, not changes: look again.
			w.log.Warn("config: watch error; checking the files again", "err", err)
			timer.Reset(w.o.Debounce)
		case <-timer.C:
			w.reload(ctx)
		}
	}
}

// reload reads both files and applies them if either changed. While
// servers.yaml is gone the last good one stays, and the toggles still apply
// to it.
func (w *Watcher) reload(ctx context.Context) {
	var sb []byte
	serversHash := w.current.Hash
	missing := false
	if w.o.Servers != "" {
		b, err := os.ReadFile(w.o.Servers)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Deleted, or caught between an editor's rename and create.
			missing, serversHash = true, "gone"
			w.mu.Lock()
			was := w.status.ServersMissing
			w.status.ServersMissing = true
			st := w.status
			w.mu.Unlock()
			if !was {
				w.log.Warn("config: servers.yaml is gone; keeping the last good configuration", "file", w.o.Servers)
				if w.o.OnStatus != nil {
					w.o.OnStatus(st)
				}
			}
		case err != nil:
			w.fail(fmt.Errorf("read %s: %w", w.o.Servers, err))
			return
		default:
			sb = b
			serversHash = contentHash(b)
			w.mu.Lock()
			w.status.ServersMissing = false
			w.mu.Unlock()
		}
	}
	tg := &Toggles{Hash: emptyHash}
	if w.o.Toggles != "" {
		var err error
		if tg, err = LoadToggles(w.o.Toggles); err != nil {
			w.tried[1] = fileHash(w.o.Toggles)
			w.fail(err)
			return
		}
	}
	if w.tried == [2]string{serversHash, tg.Hash} {
		return // a rewrite with the same bytes, a chmod, a temp file
	}
	w.tried = [2]string{serversHash, tg.Hash}
	if missing && w.current.Toggles != nil && w.current.Toggles.Hash == tg.Hash {
		return // only servers.yaml went; nothing to apply
	}
	var cfg *Config
	if w.o.Servers != "" && !missing {
		var err error
		// The caller's reserved names are those the first config was
		// parsed with: the watcher knows no tool names of its own.
		opts := ConfigOptions{Lookup: w.o.Lookup, Reserved: w.current.opts.Reserved}
		if cfg, err = opts.Parse(w.o.Servers, sb); err != nil {
			w.fail(err)
			return
		}
	} else {
		c := *w.current // the last good (or built-in) config with new toggles
		cfg = &c
	}
	cfg.Toggles = tg
	if err := w.o.Apply(ctx, cfg); err != nil {
		w.fail(err)
		return
	}
	w.current = cfg
	w.mu.Lock()
	w.status.ServersHash, w.status.TogglesHash = cfg.Hash, tg.Hash
	w.status.Applied = time.Now()
	w.status.Reloads++
	w.status.LastError, w.status.Failed = "", time.Time{}
	st := w.status
	w.mu.Unlock()
	w.log.Info("config: reloaded", "servers", w.o.Servers, "toggles", w.o.Toggles)
	if w.o.OnStatus != nil {
		w.o.OnStatus(st)
	}
}

func (w *Watcher) fail(err error) {
	msg := strings.TrimPrefix(err.Error(), ErrInvalidConfig.Error()+": ")
	w.log.Error("config: reload rejected; the last good configuration stays", "err", msg)
	w.mu.Lock()
	w.status.LastError, w.status.Failed = msg, time.Now()
	st := w.status
	w.mu.Unlock()
	if w.o.OnStatus != nil {
		w.o.OnStatus(st)
	}
}

func fileHash(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return contentHash(b)
}

package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// watched is a Watch over files in a temp dir with an Apply that records
// what it was given.
type watched struct {
	t       *testing.T
	dir     string
	servers string
	toggles string
	w       *Watcher

	mu      sync.Mutex
	applied []*Config
	reject  error
}

func serversText(names ...string) string {
	var b strings.Builder
	b.WriteString("servers:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %s:\n    command: /bin/true\n", n)
	}
	return b.String()
}

func startWatch(t *testing.T, servers, toggles string) *watched {
	t.Helper()
	dir := t.TempDir()
	x := &watched{t: t, dir: dir, servers: filepath.Join(dir, "servers.yaml"), toggles: filepath.Join(dir, "tools.yaml")}
	x.write(x.servers, servers)
	if toggles != "" {
		x.write(x.toggles, toggles)
	}
	return x.start()
}

// start watches x's files, which exist.
func (x *watched) start() *watched {
	t := x.t
	t.Helper()
	cfg, err := LoadConfig(x.servers)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Toggles, err = LoadToggles(x.toggles); err != nil {
		t.Fatal(err)
	}
	x.w, err = Watch(context.Background(), cfg, WatchOptions{
		Servers: x.servers, Toggles: x.toggles, Debounce: 100 * time.Millisecond,
		Apply: func(_ context.Context, c *Config) error {
			x.mu.Lock()
			defer x.mu.Unlock()
			if x.reject != nil {
				return x.reject
			}
			x.applied = append(x.applied, c)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.w.Close() })
	return x
}

func (x *watched) write(p, text string) {
	x.t.Helper()
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		x.t.Fatal(err)
	}
}

func (x *watched) count() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.applied)
}

// next waits for the n-th Apply (1-based) and returns its config.
func (x *watched) next(n int) *Config {
	x.t.Helper()
	eventually(x.t, 5*time.Second, fmt.Sprintf("reload #%d", n), func() bool { return x.count() >= n })
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.applied) != n {
		x.t.Fatalf("%d reloads; want %d", len(x.applied), n)
	}
	return x.applied[n-1]
}

func names(c *Config) string {
	var out []string
	for _, s := range c.Servers {
		out = append(out, s.Name)
	}
	return strings.Join(out, ",")
}

func TestWatchSavePatterns(t *testing.T) {
	t.Parallel()
	x := startWatch(t, serversText("a"), "")

	// In place: truncate and write.
	x.write(x.servers, serversText("a", "b"))
	if got := names(x.next(1)); got != "a,b" {
		t.Errorf("in-place write: servers %s", got)
	}

	// Rename-over: write a temp file, rename it onto servers.yaml.
	tmp := filepath.Join(x.dir, ".servers.yaml.tmp")
	x.write(tmp, serversText("c"))
	if err := os.Rename(tmp, x.servers); err != nil {
		t.Fatal(err)
	}
	if got := names(x.next(2)); got != "c" {
		t.Errorf("rename-over: servers %s", got)
	}

	// vim: rename the file away (backup), create a new one.
	if err := os.Rename(x.servers, x.servers+"~"); err != nil {
		t.Fatal(err)
	}
	x.write(x.servers, serversText("d"))
	if got := names(x.next(3)); got != "d" {
		t.Errorf("rename-and-recreate: servers %s", got)
	}

	// Delete: the last good configuration stays; nothing is applied. A
	// new file is picked up again.
	if err := os.Remove(x.servers); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the deletion noticed", func() bool { return x.w.Status().ServersMissing })
	x.write(x.servers, serversText("d", "e"))
	if got := names(x.next(4)); got != "d,e" {
		t.Errorf("recreated after delete: servers %s", got)
	}
}

func TestWatchToggles(t *testing.T) {
	t.Parallel()
	x := startWatch(t, serversText("a"), "disabled: [a__x]\n")
	x.write(x.toggles, "disabled: [a__x, a__y]\n")
	c := x.next(1)
	if on, _ := c.Toggles.Decide("a__y", true); on {
		t.Errorf("a__y is on after the toggles file disabled it")
	}
	// Deleted toggles: nothing is switched off.
	if err := os.Remove(x.toggles); err != nil {
		t.Fatal(err)
	}
	c = x.next(2)
	if len(c.Toggles.Rules) != 0 {
		t.Errorf("deleted toggles file left rules %v", c.Toggles.Rules)
	}
}

// TestWatchTogglesWhileServersGone: with servers.yaml deleted, the last
// good servers stay and a change of the toggles still applies to them.
func TestWatchTogglesWhileServersGone(t *testing.T) {
	t.Parallel()
	x := startWatch(t, serversText("a"), "")
	if err := os.Remove(x.servers); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the deletion noticed", func() bool { return x.w.Status().ServersMissing })
	x.write(x.toggles, "disabled: [a__x]\n")
	c := x.next(1)
	if on, _ := c.Toggles.Decide("a__x", true); on || names(c) != "a" {
		t.Errorf("servers %s, a__x on %v; want the last good servers with a__x off", names(c), on)
	}
}

// TestWatchFollowsSymlinks: servers.yaml and tools.yaml as symlinks into
// another folder (a dotfiles repo); editing the targets reloads.
func TestWatchFollowsSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real, conf := filepath.Join(dir, "dotfiles"), filepath.Join(dir, "conf")
	for _, d := range []string{real, conf} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	x := &watched{t: t, dir: conf, servers: filepath.Join(conf, "servers.yaml"), toggles: filepath.Join(conf, "tools.yaml")}
	x.write(filepath.Join(real, "quiver-servers.yaml"), serversText("a"))
	x.write(filepath.Join(real, "quiver-tools.yaml"), "")
	for link, target := range map[string]string{x.servers: "quiver-servers.yaml", x.toggles: "quiver-tools.yaml"} {
		if err := os.Symlink(filepath.Join("..", "dotfiles", target), link); err != nil {
			t.Fatal(err)
		}
	}
	x.start()
	x.write(filepath.Join(real, "quiver-servers.yaml"), serversText("a", "b"))
	if got := names(x.next(1)); got != "a,b" {
		t.Errorf("after editing the symlink's target: servers %s", got)
	}
	x.write(filepath.Join(real, "quiver-tools.yaml"), "disabled: [b__x]\n")
	if on, _ := x.next(2).Toggles.Decide("b__x", true); on {
		t.Errorf("b__x still on after editing the toggles symlink's target")
	}
}

func TestWatchDebouncesAndSkipsNoOps(t *testing.T) {
	t.Parallel()
	x := startWatch(t, serversText("a"), "")
	for i := range 10 {
		x.write(x.servers, serversText("a", fmt.Sprintf("s%d", i)))
	}
	if got := names(x.next(1)); got != "a,s9" {
		t.Errorf("after ten writes: servers %s; want the last", got)
	}
	// The same bytes again, and a chmod: no reload. The change after them
	// must be the second reload, not the third.
	x.write(x.servers, serversText("a", "s9"))
	if err := os.Chmod(x.servers, 0o600); err != nil {
		t.Fatal(err)
	}
	// A file that is neither config nor toggles: ignored.
	x.write(filepath.Join(x.dir, "notes.txt"), "hello")
	time.Sleep(300 * time.Millisecond) // give a wrong reload its chance to happen (not synchronisation)
	x.write(x.toggles, "enabled: [a__x]\n")
	c := x.next(2)
	if len(c.Toggles.Rules) != 1 || names(c) != "a,s9" {
		t.Errorf("second reload: servers %s, toggles %v", names(c), c.Toggles.Rules)
	}
}

func TestWatchRejectsInvalidConfigWhole(t *testing.T) {
	t.Parallel()
	x := startWatch(t, serversText("a"), "")
	x.write(x.servers, "servers:\n  a:\n    comand: /bin/true\n")
	eventually(t, 5*time.Second, "the rejection", func() bool { return x.w.Status().LastError != "" })
	st := x.w.Status()
	if !strings.Contains(st.LastError, "servers.yaml:3") || !strings.Contains(st.LastError, `unknown key "comand"`) {
		t.Errorf("LastError = %q; want the file, line and key", st.LastError)
	}
	if x.count() != 0 {
		t.Fatal("an invalid config was applied")
	}
	// A bad toggles file is rejected too, with its line.
	x.write(x.servers, serversText("a"))
	x.write(x.toggles, "enabled:\n  - \"[\"\n")
	eventually(t, 5*time.Second, "the toggles rejection", func() bool {
		return strings.Contains(x.w.Status().LastError, "tools.yaml:2")
	})
	if x.count() != 0 {
		t.Fatal("an invalid toggles file was applied")
	}
	// What Apply refuses (the proxy: a policy the gate cannot compile) is
	// rejected whole as well, and the status says why.
	x.mu.Lock()
	x.reject = errors.New("policy.rules[0]: bad")
	x.mu.Unlock()
	x.write(x.toggles, "enabled: [a__*]\n")
	eventually(t, 5*time.Second, "Apply's rejection", func() bool {
		return strings.Contains(x.w.Status().LastError, "policy.rules[0]")
	})
	x.mu.Lock()
	x.reject = nil
	x.mu.Unlock()
	x.write(x.servers, serversText("a", "b"))
	if got := names(x.next(1)); got != "a,b" {
		t.Errorf("after the fix: servers %s", got)
	}
	// The status is written after Apply returns, a moment after next saw
	// the config (the full -race suite under load caught the gap).
	eventually(t, 5*time.Second, "the status of the good reload", func() bool {
		st := x.w.Status()
		return st.LastError == "" && st.Reloads == 1
	})
}

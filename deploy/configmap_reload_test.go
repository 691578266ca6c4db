//go:build !windows

// A ConfigMap volume is a Linux kubelet's layout (symlinks, which need
// privileges on Windows).

package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quiver-mcp/quiver/registry"
)

// kubeletVolume lays out a ConfigMap volume as the kubelet's atomic writer
// does: the files in a timestamped folder, "..data" a symlink to it, and
// each key a symlink through "..data". update writes a new timestamped
// folder, renames a fresh "..data_tmp" link over "..data" and removes the
// old folder; the key's own symlink never changes.
type kubeletVolume struct {
	t   *testing.T
	dir string
	gen int
	cur string
}

func newKubeletVolume(t *testing.T, files map[string]string) *kubeletVolume {
	v := &kubeletVolume{t: t, dir: t.TempDir()}
	v.update(files)
	for name := range files {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(v.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

func (v *kubeletVolume) update(files map[string]string) {
	v.t.Helper()
	v.gen++
	ts := fmt.Sprintf("..2026_12_02_00_00_%02d.%d", v.gen, 1000+v.gen)
	if err := os.Mkdir(filepath.Join(v.dir, ts), 0o755); err != nil {
		v.t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(v.dir, ts, name), []byte(body), 0o644); err != nil {
			v.t.Fatal(err)
		}
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		v.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		v.t.Fatal(err)
	}
	if v.cur != "" {
		if err := os.RemoveAll(filepath.Join(v.dir, v.cur)); err != nil {
			v.t.Fatal(err)
		}
	}
	v.cur = ts
}

// TestConfigMapFolderReloads is the chart's promise about servers.yaml: a
// ConfigMap mounted as a folder (deploy/helm/quiver/values.yaml, config)
// reaches quiver on every update, with no restart. Each update swaps the
// "..data" link and deletes the folder the file resolved to at start.
func TestConfigMapFolderReloads(t *testing.T) {
	t.Parallel()
	servers := func(names ...string) string {
		var b strings.Builder
		b.WriteString("servers:\n")
		for _, n := range names {
			fmt.Fprintf(&b, "  %s:\n    url: https://%s.example.com/mcp\n", n, n)
		}
		return b.String()
	}
	v := newKubeletVolume(t, map[string]string{"servers.yaml": servers("a")})
	path := filepath.Join(v.dir, "servers.yaml")
	cfg, err := registry.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	applied := make(chan string, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := registry.Watch(ctx, cfg, registry.WatchOptions{
		Servers:  path,
		Debounce: 50 * time.Millisecond,
		Apply: func(_ context.Context, c *registry.Config) error {
			var names []string
			for _, s := range c.Servers {
				names = append(names, s.Name)
			}
			applied <- strings.Join(names, ",")
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	for _, want := range []string{"a,b", "a,b,c"} {
		v.update(map[string]string{"servers.yaml": servers(strings.Split(want, ",")...)})
		select {
		case got := <-applied:
			if got != want {
				t.Fatalf("after the ConfigMap update to %s, quiver applied %s", want, got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the ConfigMap update to %s never reached quiver (status %+v)", want, w.Status())
		}
	}
}

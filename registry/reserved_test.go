package registry

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReservedNamesComeFromTheCaller: registry knows no tool names of its
// own. The names a caller serves itself (quiver's builtins) come in
// ConfigOptions.Reserved: the file may name them with no server, a slash
// command may not force or gate them, CheckToolName passes them, and a
// reload parses with the same names.
func TestReservedNamesComeFromTheCaller(t *testing.T) {
	const text = "servers:\n  a: {command: x}\nsurface:\n  always_on: [my_tool]\n"
	if _, err := ParseConfig("test.yaml", []byte(text), testLookup(nil)); err == nil || !strings.Contains(err.Error(), `"my_tool" names no configured server`) {
		t.Errorf("without reserved names, my_tool is a tool like any other; err = %v", err)
	}
	opts := ConfigOptions{Lookup: testLookup(nil), Reserved: []string{"my_tool"}}
	cfg, err := opts.Parse("test.yaml", []byte(text))
	if err != nil {
		t.Fatalf("a reserved name in always_on: %v", err)
	}
	if c := CheckToolName(cfg, NewCatalog(1), "my_tool"); c != (NameCheck{}) {
		t.Errorf("CheckToolName(my_tool) = %+v; want no problem for a reserved name", c)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"servers:\n  a: {command: x}\nslash:\n  r:\n    description: x\n    tools: [my_tool]\n", "test.yaml:6: slash.r.tools: my_tool is always on"},
		{"servers:\n  a: {command: x}\nslash_gated: [my_tool]\n", "test.yaml:3: slash_gated: my_tool is one of quiver's own tools and cannot be gated"},
	} {
		if _, err := opts.Parse("test.yaml", []byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v; want %q", err, tc.want)
		}
	}

	path := filepath.Join(t.TempDir(), "servers.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, err = opts.Load(path); err != nil {
		t.Fatal(err)
	}
	c := reloadOnce(t, cfg, WatchOptions{Servers: path, Lookup: testLookup(nil)}, strings.Replace(text, "servers:\n", "servers:\n  b: {command: y}\n", 1))
	if names(c) != "b,a" {
		t.Errorf("reloaded servers %s; want b,a", names(c))
	}
}

// TestReloadResolvesReferencesLikeTheFirstParse: a watcher given no
// Lookup resolves the new file's references as the configuration in force
// was resolved: a ${keyring:NAME} that started fine does not make the
// reload fail because os.LookupEnv knows no keyring.
func TestReloadResolvesReferencesLikeTheFirstParse(t *testing.T) {
	const text = "servers:\n  a:\n    command: x\n    env: {TOKEN: \"${keyring:tok}\"}\n"
	lookup := func(name string) (string, bool) {
		if name == KeyringPrefix+"tok" {
			return "s3cret-from-the-keyring", true
		}
		return "", false
	}
	path := filepath.Join(t.TempDir(), "servers.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := ConfigOptions{Lookup: lookup}.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c := reloadOnce(t, cfg, WatchOptions{Servers: path}, text+"  b: {command: y}\n")
	if a, _ := c.Server("a"); a.Env["TOKEN"] != "s3cret-from-the-keyring" || names(c) != "a,b" {
		t.Errorf("reloaded: servers %s, a's TOKEN %q", names(c), a.Env["TOKEN"])
	}
}

// reloadOnce watches cfg's file (o.Servers) with o, rewrites it to text
// and returns the configuration the reload applied, failing the test if
// the reload is rejected or never comes.
func reloadOnce(t *testing.T, cfg *Config, o WatchOptions, text string) *Config {
	t.Helper()
	applied := make(chan *Config, 1)
	o.Debounce = 50 * time.Millisecond
	o.Apply = func(_ context.Context, c *Config) error { applied <- c; return nil }
	w, err := Watch(context.Background(), cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.WriteFile(o.Servers, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case c := <-applied:
			return c
		case <-deadline:
			t.Fatalf("the reload was not applied; status %+v", w.Status())
		case <-time.After(50 * time.Millisecond):
			if st := w.Status(); st.LastError != "" {
				t.Fatalf("the reload was rejected: %s", st.LastError)
			}
		}
	}
}

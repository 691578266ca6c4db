package registry

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// pidOf waits for exactly one live pid in dir and returns it.
func pidOf(t *testing.T, dir string) int {
	t.Helper()
	var live []int
	eventually(t, 10*time.Second, "one live child in "+dir, func() bool {
		live = live[:0]
		for _, p := range pidsIn(t, dir) {
			if running(p) {
				live = append(live, p)
			}
		}
		return len(live) == 1
	})
	return live[0]
}

func apply(t *testing.T, h *harness, yamlText string, vars map[string]string) Change {
	t.Helper()
	cfg, err := ParseConfig("test.yaml", []byte(yamlText), testLookup(vars))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch, err := h.reg.Apply(ctx, cfg)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return ch
}

func TestApplyTouchesOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"A": t.TempDir(), "B": t.TempDir(), "C": t.TempDir(), "D": t.TempDir()}
	server := func(name, extra string) string {
		return exampleServer(name, childPidDirEnv+`: "${`+strings.ToUpper(name)+`}"`+extra)
	}
	h := startRegistry(t, "servers:\n"+server("a", "")+server("b", "")+server("c", ""), vars, Options{})
	h.ready()
	pa, pb, pc := pidOf(t, vars["A"]), pidOf(t, vars["B"]), pidOf(t, vars["C"])

	// A call in flight on c, which is about to be removed.
	inflight := make(chan error, 1)
	go func() {
		_, err := h.call("c__sleep", `{"ms":8000}`)
		inflight <- err
	}()
	eventually(t, 5*time.Second, "the call to be in flight", func() bool { return h.reg.connFor("c").inflight.Load() == 1 })

	before := len(h.seen())
	ch := apply(t, h, "servers:\n"+
		server("a", "")+ // unchanged
		server("b", `, EXTRA: "1"`)+ // its env changed: restart
		server("d", "")+ // new
		"", vars)
	// c removed.
	slices.Sort(ch.Added)
	if !slices.Equal(ch.Added, []string{"d"}) || !slices.Equal(ch.Removed, []string{"c"}) ||
		!slices.Equal(ch.Restarted, []string{"b"}) || len(ch.Updated) != 0 {
		t.Fatalf("Apply = %+v", ch)
	}
	// One catalog shows what Apply did, and none shows half of it. (One
	// more of the old state may trail the start-up, published before
	// Apply began.)
	seen := h.seen()
	changed := 0
	for _, c := range seen[before:] {
		if !slices.Equal(exposedServers(c), []string{"a", "b", "c"}) {
			changed++
		}
	}
	if changed != 1 || len(seen)-before > 2 {
		for _, c := range seen[before:] {
			t.Logf("catalog %d: %v", c.Gen, exposedServers(c))
		}
		t.Errorf("Apply published %d catalogs with a change; want exactly one", changed)
	}
	cat := seen[len(seen)-1]
	if got := exposedServers(cat); !slices.Equal(got, []string{"a", "b", "d"}) {
		t.Errorf("servers with tools after Apply = %v, want a b d", got)
	}

	if got := pidOf(t, vars["A"]); got != pa || !running(pa) {
		t.Errorf("a was touched: pid %d -> %d", pa, got)
	}
	if running(pb) {
		t.Errorf("b's old process %d still runs after its entry changed", pb)
	}
	if got := pidOf(t, vars["B"]); got == pb {
		t.Errorf("b was not restarted")
	}
	eventually(t, 5*time.Second, "c's process reaped", func() bool { return !running(pc) })
	pidOf(t, vars["D"])

	select {
	case err := <-inflight:
		if !errors.Is(err, ErrServerDown) || !strings.Contains(err.Error(), "removed from the configuration") {
			t.Errorf("in-flight call on a removed server: %v; want ErrServerDown saying it was removed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the in-flight call on the removed server did not end")
	}
	if _, err := h.call("c__echo", `{}`); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("call to a removed server's tool: %v; want ErrUnknownTool", err)
	}
	if got, err := h.call("d__echo", `{"x":1}`); err != nil || !strings.Contains(got, `"x"`) {
		t.Errorf("call to the added server: %q, %v", got, err)
	}
}

func exposedServers(c *Catalog) []string {
	var out []string
	for _, t := range c.Tools {
		if !slices.Contains(out, t.Server) {
			out = append(out, t.Server)
		}
	}
	return out
}

func TestApplySettingsWithoutRestart(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"A": t.TempDir()}
	h := startRegistry(t, "servers:\n"+exampleServer("a", childPidDirEnv+`: "${A}"`), vars, Options{})
	h.ready()
	pa := pidOf(t, vars["A"])
	ch := apply(t, h, "servers:\n"+exampleServer("a", childPidDirEnv+`: "${A}"`,
		"prefix: alpha", "keywords: [greek]", "timeout: 5s", "tools_default: \"off\""), vars)
	if !slices.Equal(ch.Updated, []string{"a"}) || len(ch.Restarted) != 0 {
		t.Fatalf("Apply = %+v; want a updated in place", ch)
	}
	if got := pidOf(t, vars["A"]); got != pa {
		t.Errorf("a restarted (%d -> %d) for a change that needs no restart", pa, got)
	}
	cat := h.reg.Catalog()
	tool, ok := cat.Lookup("alpha__echo")
	if !ok {
		t.Fatalf("alpha__echo not in the catalog: %v", exposedNames(cat))
	}
	if !tool.Off || !strings.Contains(tool.Toggle, "tools_default: off") || !slices.Equal(tool.Keywords, []string{"greek"}) {
		t.Errorf("alpha__echo = enabled %v, toggle %q, keywords %v", !tool.Off, tool.Toggle, tool.Keywords)
	}
	if _, err := h.call("alpha__echo", `{}`); err != nil {
		t.Errorf("the registry forwards a switched-off tool (the proxy refuses it): %v", err)
	}
}

func TestApplyToggles(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, "servers:\n"+exampleServer("a", ""), nil, Options{})
	h.ready()
	cfg, err := ParseConfig("test.yaml", []byte("servers:\n"+exampleServer("a", "")), testLookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Toggles, err = ParseToggles("/x/tools.yaml", []byte("disabled:\n  - a__*\nenabled:\n  - a__echo\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.reg.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	cat := h.reg.Catalog()
	echo, _ := cat.Lookup("a__echo")
	sleep, _ := cat.Lookup("a__sleep")
	if echo.Off || echo.Toggle != "tools.yaml:4 enabled a__echo" {
		t.Errorf("a__echo: %v %q", !echo.Off, echo.Toggle)
	}
	if !sleep.Off || sleep.Toggle != "tools.yaml:2 disabled a__*" {
		t.Errorf("a__sleep: %v %q", !sleep.Off, sleep.Toggle)
	}
}

func TestApplyAfterCloseFails(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, "servers: {}\n", nil, Options{})
	h.ready()
	h.reg.Close()
	cfg, _ := ParseConfig("x", []byte("servers: {}\n"), testLookup(nil))
	if _, err := h.reg.Apply(context.Background(), cfg); !errors.Is(err, ErrNotStarted) {
		t.Errorf("Apply after Close: %v", err)
	}
}

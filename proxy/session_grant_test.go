package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// A grant "for this session" must end with the session. mcp-go names every
// stdio session "stdio", so keyed by that name alone a session grant
// would cover every later stdio session that shares the state dir: the
// next quiver a host starts, or another host's quiver.
func TestSessionGrantDoesNotOutliveTheProcess(t *testing.T) {
	const cfgText = rigServer + `
surface:
  always_on: [ex__notes_add]
policy:
  defaults:
    write: ask
`
	dir := t.TempDir()
	start := func() *rig {
		cfg, err := registry.ParseConfig("test.yaml", []byte(cfgText), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		r := &rig{t: t, now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
		s, err := New(cfg, Options{Now: func() time.Time { return r.now }, Logger: slog.New(slog.DiscardHandler), StateDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		r.s = s
		s.install(registry.NewCatalog(1, rigTools()...))
		return r
	}

	first := start()
	c := first.connect("stdio")
	res := c.call("ex__notes_add", map[string]any{"title": "x"})
	wantCode(t, res, gate.CodeApprovalUnavailable)
	m := regexp.MustCompile(`quiver approve (\d+)`).FindStringSubmatch(res.text())
	if m == nil {
		t.Fatalf("no approval number in %q", res.text())
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	if _, err := first.s.ledger.ResolveApproval(context.Background(), id, gate.Resolution{Approve: true, Lifetime: gate.ForSession}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, c.call("ex__notes_add", map[string]any{"title": "y"}), "")
	if err := first.s.Close(); err != nil {
		t.Fatal(err)
	}

	second := start()
	// Nor is it listed as in force once its session ended (issue 29).
	if live := liveSessionGrants(t, second.s.ledger); len(live) != 0 {
		t.Fatalf("an ended session's grant is still listed as in force: %+v", live)
	}
	t.Cleanup(func() { _ = second.s.Close() })
	wantCode(t, second.connect("stdio").call("ex__notes_add", map[string]any{"title": "z"}), gate.CodeApprovalUnavailable)
}

func liveSessionGrants(t *testing.T, l *gate.Ledger) []gate.Grant {
	t.Helper()
	grants, err := l.Grants(context.Background(), gate.GrantFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []gate.Grant
	for _, g := range grants {
		if g.Lifetime == gate.ForSession {
			out = append(out, g)
		}
	}
	return out
}

// TestSessionGrantsEndWithTheirSession: a session grant is revoked when its
// session ends, and when quiver starts, those of every run that is no
// longer running (a quiver that was killed ended none of its sessions);
// those of a run still running beside it, and persistent grants, stay
// (issue 29).
func TestSessionGrantsEndWithTheirSession(t *testing.T) {
	dir := t.TempDir()
	l, err := gate.OpenLedger(context.Background(), filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	add := func(session string, life gate.Lifetime) {
		if _, err := l.AddGrant(context.Background(), gate.Grant{Scope: gate.ScopeTool, Tool: "ex__notes_add", Lifetime: life, Session: session}); err != nil {
			t.Fatal(err)
		}
	}
	add("stdio@deadrun0", gate.ForSession) // a run that left no record: killed, or older than this
	add("stdio@liverun0", gate.ForSession) // a run still running
	add("stdio@goneRun0", gate.ForSession) // a run whose process is gone
	add("", gate.Persistent)
	l.Close()
	os.MkdirAll(filepath.Join(dir, "runs"), 0o700)
	os.WriteFile(filepath.Join(dir, "runs", "liverun0.json"), []byte(fmt.Sprintf(`{"pid":%d}`, os.Getpid())), 0o600)
	os.WriteFile(filepath.Join(dir, "runs", "goneRun0.json"), []byte(`{"pid":2147483646}`), 0o600)

	cfg, err := registry.ParseConfig("test.yaml", []byte(rigServer), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	s.install(registry.NewCatalog(1, rigTools()...))
	live := liveSessionGrants(t, s.ledger)
	if len(live) != 1 || live[0].Session != "stdio@liverun0" {
		t.Fatalf("after start, the session grants in force are %+v; want only the running run's", live)
	}
	if all, _ := s.ledger.Grants(context.Background(), gate.GrantFilter{}); len(all) != 2 {
		t.Fatalf("the persistent grant must stay: %+v", all)
	}

	// A session of this run ends: its grant ends with it.
	r := &rig{t: t, s: s}
	r.connect("host-a").list()
	if _, err := s.ledger.AddGrant(context.Background(), gate.Grant{Scope: gate.ScopeTool, Tool: "ex__notes_add", Lifetime: gate.ForSession, Session: "host-a@" + s.run}); err != nil {
		t.Fatal(err)
	}
	s.mcp.UnregisterSession(context.Background(), "host-a")
	if live := liveSessionGrants(t, s.ledger); len(live) != 1 || live[0].Session != "stdio@liverun0" {
		t.Fatalf("after its session ended, the session grants in force are %+v", live)
	}
}

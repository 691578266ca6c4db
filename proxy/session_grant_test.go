package proxy

import (
	"context"
	"log/slog"
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
	t.Cleanup(func() { _ = second.s.Close() })
	wantCode(t, second.connect("stdio").call("ex__notes_add", map[string]any{"title": "z"}), gate.CodeApprovalUnavailable)
}

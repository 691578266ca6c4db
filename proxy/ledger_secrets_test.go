package proxy

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quiver-mcp/quiver/registry"
)

// TestLedgerFileHoldsNoSecret: a refused call whose arguments hold a
// configured secret leaves no trace of it in the ledger's files (the
// database, its WAL, the start journal): what quiver stores is redacted
// as what it shows is (issue 22).
func TestLedgerFileHoldsNoSecret(t *testing.T) {
	t.Parallel()
	const secret = "Zq8-xV2kLw9pT-ledger"
	cfg, err := registry.ParseConfig("test.yaml", []byte(rigServer+`    env:
      API_TOKEN: ${API_TOKEN}
policy:
  rules:
    - {tool: "ex__web_fetch", action: deny}
`), func(k string) (string, bool) { return secret, k == "API_TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	s, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), StateDir: state, Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	s.install(registry.NewCatalog(1, rigTools()...))
	r := &rig{t: t, s: s, log: &bytes.Buffer{}}
	c := r.connect("s1")
	for name, args := range map[string]map[string]any{
		"ex__web_fetch":       {"title": "key " + secret},                 // denied by policy
		"ex__notes_add":       {"title": "/outside/" + secret + "/x.txt"}, // a path outside the fence
		"ex__" + secret:       {"title": "x"},                             // no such tool
		"ex__notes_delete":    {"title": secret},                          // asks; no one to ask
		"ex__calendar_events": {"day": secret},                            // an argument the schema refuses
	} {
		res := c.call("call_tool", map[string]any{"name": name, "arguments": args})
		if !res.IsError {
			t.Fatalf("%s ran: %s", name, res.text())
		}
	}
	// A request for a capability is filed as an approval, with the path
	// and the reason the model wrote.
	c.call("request_capability", map[string]any{"capability": "read_outside_fence", "path": "/outside/" + secret, "reason": "to read " + secret})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("kLw9pT")) {
			t.Errorf("%s holds the secret", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quiver-mcp/quiver/registry"
)

// One client opening sessions in a loop cannot take all the memory: past
// MaxSessions a new session is refused with 503 (red team: 20,000 in 16 s).
func TestHTTPSessionsAreBounded(t *testing.T) {
	cfg, err := registry.ParseConfig("test.yaml", []byte(rigServer), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Options{MaxSessions: 2, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	srv := httptest.NewServer(s.HTTPHandler())
	t.Cleanup(srv.Close)
	initialize := func() int {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL,
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := 0; i < 2; i++ {
		if code := initialize(); code != http.StatusOK {
			t.Fatalf("session %d: %d", i+1, code)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.relay.sessionCount() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if code := initialize(); code != http.StatusServiceUnavailable {
		t.Fatalf("a third session past MaxSessions 2: %d, want 503", code)
	}
}

// One session's event streams are bounded too (red team: 4,000 GET
// streams on one session, a file and 21 KB each).
func TestStreamsPerSessionAreBounded(t *testing.T) {
	var c streamCount
	for i := 0; i < maxStreams; i++ {
		if !c.open("s") {
			t.Fatalf("stream %d refused", i+1)
		}
	}
	if c.open("s") {
		t.Fatal("a stream past maxStreams was let through")
	}
	if !c.open("other") {
		t.Fatal("another session's stream was refused")
	}
	c.close("s")
	if !c.open("s") {
		t.Fatal("a closed stream's place was not freed")
	}
}

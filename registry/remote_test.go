package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/internal/exampleserver"
)

// headerLog remembers the Authorization header of every request.
type headerLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *headerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Header.Get("Authorization"))
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *headerLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// remoteExample serves the example server (in process) over streamable
// HTTP at /mcp, or over SSE at /sse, behind wrap, and returns the endpoint
// URL.
func remoteExample(t *testing.T, transport string, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	srv := exampleserver.New(exampleserver.Options{TestTools: true})
	if transport == TransportSSE {
		ts := httptest.NewUnstartedServer(nil)
		base := "http://" + ts.Listener.Addr().String()
		ts.Config.Handler = wrap(server.NewSSEServer(srv, server.WithBaseURL(base)))
		ts.Start()
		t.Cleanup(ts.Close)
		return base + "/sse"
	}
	ts := httptest.NewServer(wrap(server.NewStreamableHTTPServer(srv)))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

func TestRemoteServers(t *testing.T) {
	for _, tr := range []string{TransportHTTP, TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			headers := &headerLog{}
			url := remoteExample(t, tr, headers.wrap)
			h := startRegistry(t, "servers:\n  remote:\n    url: ${URL}\n    transport: "+tr+"\n    headers:\n      Authorization: Bearer ${TOKEN}\n",
				map[string]string{"URL": url, "TOKEN": "remote-token-123"}, Options{})
			cat := h.ready()
			st, _ := cat.Status("remote")
			if st.State != StateUp || st.Transport != tr {
				t.Fatalf("status %+v", st)
			}
			if _, ok := cat.Lookup("remote__echo"); !ok {
				t.Fatalf("catalog %v", exposedNames(cat))
			}
			const args = `{"value":12345678901234567890}`
			if got, err := h.call("remote__echo", args); err != nil || got != args {
				t.Errorf("echo over %s: %q, %v", tr, got, err)
			}
			seen := headers.all()
			if len(seen) == 0 {
				t.Fatal("no request reached the server")
			}
			for _, a := range seen {
				if a != "Bearer remote-token-123" {
					t.Errorf("a request carried Authorization %q; want the configured header on every request", a)
					break
				}
			}
			if tr == TransportHTTP && len(h.logs.find("listening", "server", "remote")) == 0 {
				t.Errorf("the transport's own log lines do not reach quiver's logger with the server's name:\n%s", h.logs)
			}
			if strings.Contains(h.logs.String(), "remote-token-123") {
				t.Errorf("the header's secret reached the log:\n%s", h.logs)
			}
		})
	}
}

// bodyLog remembers the JSON-RPC methods POSTed to a server.
type bodyLog struct {
	mu      sync.Mutex
	methods []string
}

func (l *bodyLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			var m struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(b, &m)
			l.mu.Lock()
			l.methods = append(l.methods, m.Method)
			l.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		h.ServeHTTP(w, r)
	})
}

func (l *bodyLog) has(method string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.methods, method)
}

// TestRemoteCallCancelledIsToldToTheServer: a call to a remote server
// whose caller gives up ends with a notifications/cancelled to the server,
// which must not read a dropped HTTP exchange as one.
func TestRemoteCallCancelledIsToldToTheServer(t *testing.T) {
	for _, tr := range []string{TransportHTTP, TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			bodies := &bodyLog{}
			url := remoteExample(t, tr, bodies.wrap)
			h := startRegistry(t, "servers:\n  remote:\n    url: ${URL}\n    transport: "+tr+"\n", map[string]string{"URL": url}, Options{})
			h.ready()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if _, err := h.reg.Call(ctx, "remote__sleep", []byte(`{"ms":30000}`), nil); err == nil {
				t.Fatal("a 30 s sleep returned within 300 ms")
			}
			eventually(t, 5*time.Second, "notifications/cancelled at the server", func() bool { return bodies.has("notifications/cancelled") })
		})
	}
}

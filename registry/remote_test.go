package registry

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

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
// HTTP at /mcp, or over SSE at /sse, and returns the endpoint URL.
func remoteExample(t *testing.T, transport string, headers *headerLog) string {
	t.Helper()
	srv := exampleserver.New(exampleserver.Options{TestTools: true})
	if transport == TransportSSE {
		ts := httptest.NewUnstartedServer(nil)
		base := "http://" + ts.Listener.Addr().String()
		ts.Config.Handler = headers.wrap(server.NewSSEServer(srv, server.WithBaseURL(base)))
		ts.Start()
		t.Cleanup(ts.Close)
		return base + "/sse"
	}
	ts := httptest.NewServer(headers.wrap(server.NewStreamableHTTPServer(srv)))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

func TestRemoteServers(t *testing.T) {
	for _, tr := range []string{TransportHTTP, TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			headers := &headerLog{}
			url := remoteExample(t, tr, headers)
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

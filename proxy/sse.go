package proxy

import (
	"bytes"
	"net/http"
	"strings"
)

// sseResponses answers a POSTed request with an SSE stream when the client
// accepts one, as the reference SDKs do. mcp-go answers with plain JSON
// unless the call sends notifications first; both are valid, but a client
// that opened several POST streams at once expects streams, and the MCP
// conformance suite marks JSON answers as merely informational.
func sseResponses(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			next.ServeHTTP(w, r)
			return
		}
		sw := &sseWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		sw.finish()
	})
}

// sseWriter turns a 200 application/json answer into one SSE message
// event; every other answer (202, errors, streams mcp-go opens itself)
// passes through untouched.
type sseWriter struct {
	http.ResponseWriter
	wroteHeader, convert bool
	body                 bytes.Buffer
}

func (w *sseWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	h := w.Header()
	if code == http.StatusOK && strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		w.convert = true
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Del("Content-Length")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *sseWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.convert {
		return w.body.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes through for streams mcp-go writes itself; a converted
// answer is written whole by finish.
func (w *sseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.convert {
		f.Flush()
	}
}

func (w *sseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *sseWriter) finish() {
	body := bytes.TrimSpace(w.body.Bytes())
	if !w.convert || len(body) == 0 {
		return
	}
	var b bytes.Buffer
	b.WriteString("event: message\n")
	for _, line := range bytes.Split(body, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, _ = w.ResponseWriter.Write(b.Bytes())
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

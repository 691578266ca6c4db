package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A ReadyCheck says what the process still waits for before it can
// serve: "" when that part is ready.
type ReadyCheck func(ctx context.Context) string

// Handler serves the operators' endpoints, without the MCP token (they
// say nothing a request could use): GET /healthz is 200 while the process
// runs; GET /readyz is 200 once every check is ready and 503 before, with
// what it waits for; GET /metrics is the Prometheus text format (404 when
// metrics are off).
func (t *Telemetry) Handler(ready ...ReadyCheck) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		var waits []string
		for _, check := range ready {
			if why := check(ctx); why != "" {
				waits = append(waits, why)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if len(waits) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: waiting for %s\n", strings.Join(waits, "; "))
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if t.metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(t.metrics.reg, promhttp.HandlerOpts{Registry: t.metrics.reg}))
	}
	return mux
}

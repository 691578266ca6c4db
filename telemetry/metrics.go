package telemetry

import (
	"slices"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are quiver's Prometheus metrics, on a registry of their own
// with the Go runtime's and the process's.
type metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	pending  prometheus.Gauge
	searches prometheus.Counter
	servers  atomic.Pointer[func() map[string]bool]
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quiver_calls_total",
			Help: "Requests from hosts that went through the gate (tools/call, resources/read, prompts/get), by server and the code they ended with (allow.*, deny.*, error.*).",
		}, []string{"server", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "quiver_call_duration_seconds",
			Help:    "Time a server took to answer a forwarded request, by server.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"server"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "quiver_approvals_pending",
			Help: "Calls waiting for a person's approval now.",
		}),
		searches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quiver_search_total",
			Help: "search_tools calls.",
		}),
	}
	m.reg.MustRegister(m.calls, m.duration, m.pending, m.searches,
		upCollector{servers: &m.servers, desc: prometheus.NewDesc("quiver_downstream_up",
			"1 when the server is up (its tools are offered), 0 while it starts, after it failed, or stopped.", []string{"server"}, nil)},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// upCollector reads the servers' states at each scrape: nothing to keep
// in step with the registry's catalog.
type upCollector struct {
	servers *atomic.Pointer[func() map[string]bool]
	desc    *prometheus.Desc
}

func (c upCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c upCollector) Collect(ch chan<- prometheus.Metric) {
	servers := c.servers.Load()
	if servers == nil {
		return
	}
	up := (*servers)()
	names := make([]string, 0, len(up))
	for name := range up {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v := 0.0
		if up[name] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, name)
	}
}

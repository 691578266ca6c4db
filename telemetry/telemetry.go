package telemetry

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/quiver-mcp/quiver/proxy"
)

// Options are what New needs to know.
type Options struct {
	// Metrics turns the Prometheus metrics on (serve's --metrics).
	Metrics bool
	// Getenv reads the OTEL_* variables; default none set (no traces).
	Getenv func(string) string
	// Exporter, when set, receives each span as it ends instead of the
	// OTLP exporter the variables describe (tests give an in-memory one).
	Exporter SpanExporter
}

// A Telemetry is one process's metrics and tracer. Its Step is a
// proxy.Observer.
type Telemetry struct {
	metrics *metrics // nil without Options.Metrics
	tracing *tracing // nil when no exporter is configured
	prop    propagation.TextMapPropagator
}

// New builds the metrics and, when the environment asks for them, the
// tracer. ctx bounds the exporter's setup only.
func New(ctx context.Context, o Options) (*Telemetry, error) {
	t := &Telemetry{prop: propagation.TraceContext{}}
	if o.Metrics {
		t.metrics = newMetrics()
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	tr, err := newTracing(ctx, getenv, o.Exporter)
	if err != nil {
		return nil, err
	}
	t.tracing = tr
	return t, nil
}

// Enabled says whether t does anything: without metrics or traces the
// proxy is better off with no observer at all.
func (t *Telemetry) Enabled() bool { return t.metrics != nil || t.tracing != nil }

// SetServers gives the metrics the servers' states: servers reports each
// configured server and whether it is up now, read at every scrape for
// quiver_downstream_up. (The proxy that knows them is built after its
// observer.)
func (t *Telemetry) SetServers(servers func() map[string]bool) {
	if t.metrics != nil {
		t.metrics.servers.Store(&servers)
	}
}

// Tracing says whether spans are exported.
func (t *Telemetry) Tracing() bool { return t.tracing != nil }

// Shutdown sends the spans still buffered and stops the exporter.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t.tracing == nil {
		return nil
	}
	return t.tracing.provider.Shutdown(ctx)
}

// Attribute keys on quiver's spans. The request's span follows the
// OpenTelemetry conventions for MCP (mcp.method.name, gen_ai.tool.name).
const (
	attrMethod   = "mcp.method.name"
	attrTool     = "gen_ai.tool.name"
	attrServer   = "quiver.server"
	attrDecision = "quiver.decision.code"
	attrError    = "quiver.error.code"
)

// stepSpan names the span of a step under a request's: quiver.gate,
// quiver.approval, quiver.downstream, quiver.exit.
func stepSpan(k proxy.StepKind) string { return "quiver." + string(k) }

// Step is proxy.Observer's one method: it counts the step and, with
// traces on, opens its span.
func (t *Telemetry) Step(ctx context.Context, s proxy.Step) (context.Context, func(code string)) {
	var span trace.Span
	if t.tracing != nil {
		ctx, span = t.startSpan(ctx, s)
	}
	m := t.metrics
	start := time.Now()
	switch s.Kind {
	case proxy.StepSearch:
		if m != nil {
			m.searches.Inc()
		}
	case proxy.StepApproval:
		if m != nil {
			m.pending.Inc()
		}
	}
	return ctx, func(code string) {
		if m != nil {
			switch s.Kind {
			case proxy.StepRequest:
				if code != "" {
					m.calls.WithLabelValues(s.Server, code).Inc()
				}
			case proxy.StepApproval:
				m.pending.Dec()
			case proxy.StepDownstream:
				m.duration.WithLabelValues(s.Server).Observe(time.Since(start).Seconds())
			}
		}
		if span != nil {
			endSpan(span, s.Kind, code)
		}
	}
}

// startSpan opens the span of step s: a request's continues the trace its
// _meta names (traceparent, tracestate), a downstream call's is written
// into the _meta (and headers) the server gets.
func (t *Telemetry) startSpan(ctx context.Context, s proxy.Step) (context.Context, trace.Span) {
	attrs := make([]attribute.KeyValue, 0, 3)
	if s.Server != "" {
		attrs = append(attrs, attribute.String(attrServer, s.Server))
	}
	switch s.Kind {
	case proxy.StepRequest, proxy.StepSearch:
		ctx = t.prop.Extract(ctx, metaCarrier(s.Meta))
		attrs = append(attrs, attribute.String(attrMethod, s.Method), attribute.String(attrTool, s.Tool))
		return t.tracing.tracer.Start(ctx, s.Method+" "+s.Tool, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	case proxy.StepDownstream:
		attrs = append(attrs, attribute.String(attrTool, s.Tool))
		ctx, span := t.tracing.tracer.Start(ctx, stepSpan(s.Kind), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
		if s.Meta != nil {
			t.prop.Inject(ctx, metaCarrier(s.Meta))
		}
		return ctx, span
	}
	return t.tracing.tracer.Start(ctx, stepSpan(s.Kind), trace.WithAttributes(attrs...))
}

// endSpan ends a step's span with its code: the decision of the gate, the
// approval and the request, or the failure of a downstream call.
func endSpan(span trace.Span, kind proxy.StepKind, code string) {
	switch kind {
	case proxy.StepGate, proxy.StepApproval, proxy.StepRequest:
		if code != "" {
			span.SetAttributes(attribute.String(attrDecision, code))
		}
		if strings.HasPrefix(code, "error.") {
			span.SetStatus(codes.Error, code)
		}
	case proxy.StepDownstream:
		if code != "" {
			span.SetAttributes(attribute.String(attrError, code))
			span.SetStatus(codes.Error, code)
		}
	}
	span.End()
}

// metaCarrier reads and writes trace context in a request's _meta
// fields: only string values are trace context.
type metaCarrier map[string]any

func (c metaCarrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

func (c metaCarrier) Set(key, value string) {
	if c != nil {
		c[key] = value
	}
}

func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

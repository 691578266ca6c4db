// Package telemetry is quiver's metrics, traces and health endpoints for
// the people who run it. It watches requests through proxy.Observer (the
// proxy calls Step where each step of a request already passes once) and
// turns the steps into Prometheus metrics on a registry of its own and,
// when the standard OTEL_* variables name an OTLP endpoint, into
// OpenTelemetry spans. Handler serves /healthz, /readyz and /metrics on
// the --metrics listener.
//
// It never sees an argument value: a span carries the tool, the server
// and the gate's decision code, nothing the model wrote. It installs
// nothing global (no default Prometheus registry, no global tracer
// provider), so two in one process do not meet. See ARCHITECTURE.md,
// "Observing a request".
package telemetry

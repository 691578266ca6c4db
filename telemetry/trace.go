package telemetry

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// A SpanExporter receives finished spans (the SDK's own interface).
type SpanExporter = sdktrace.SpanExporter

// tracing is the tracer of one process, with its provider to flush.
type tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// newTracing builds the tracer the OTEL_* variables ask for, or returns
// nil (no spans, no cost) when none names an endpoint. The SDK and the
// exporters read the variables themselves: the endpoint and its headers
// (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS, _TIMEOUT), the sampler
// (OTEL_TRACES_SAMPLER, _ARG), the batching (OTEL_BSP_*) and the
// service's name (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES); quiver
// reads only whether they are set and the protocol.
func newTracing(ctx context.Context, getenv func(string) string, exp SpanExporter) (*tracing, error) {
	// A given exporter gets each span as it ends (tests read them at
	// once); the OTLP one gets them in batches.
	export := sdktrace.WithSyncer(exp)
	if exp == nil {
		if !tracesWanted(getenv) {
			return nil, nil
		}
		var err error
		if exp, err = otlpExporter(ctx, getenv); err != nil {
			return nil, err
		}
		export = sdktrace.WithBatcher(exp)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "quiver")),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("traces: describe the service: %w", err)
	}
	tp := sdktrace.NewTracerProvider(export, sdktrace.WithResource(res))
	return &tracing{provider: tp, tracer: tp.Tracer("github.com/quiver-mcp/quiver")}, nil
}

// tracesWanted says whether the variables ask for traces: an OTLP
// endpoint is named, and neither OTEL_SDK_DISABLED nor
// OTEL_TRACES_EXPORTER=none turns them off.
func tracesWanted(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// otlpExporter is the OTLP exporter of the protocol the variables name:
// http/protobuf (the default) or grpc.
func otlpExporter(ctx context.Context, getenv func(string) string) (SpanExporter, error) {
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp SpanExporter
	var err error
	switch proto {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("traces: OTEL_EXPORTER_OTLP_PROTOCOL %q: quiver sends http/protobuf or grpc", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("traces: the OTLP exporter: %w", err)
	}
	return exp, nil
}

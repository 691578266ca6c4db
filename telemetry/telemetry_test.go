package telemetry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/quiver-mcp/quiver/telemetry"
)

// A host's trace: 4bf92f… is the trace, 00f067… the host's span.
const (
	hostTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	hostSpan   = "00f067aa0ba902b7"
	hostParent = "00-" + hostTrace + "-" + hostSpan + "-01"
	argValue   = "arg-value-7f3c" // must never reach a span
)

// tree draws the span tree under the newest root span named root: one
// span a line, children indented under their parent in the order they
// started, with the codes they carry.
func tree(spans tracetest.SpanStubs, root string) string {
	var top *tracetest.SpanStub
	for i := range spans {
		if spans[i].Name == root {
			top = &spans[i]
		}
	}
	if top == nil {
		return "(no span " + root + ")"
	}
	var b strings.Builder
	var draw func(s tracetest.SpanStub, depth int)
	draw = func(s tracetest.SpanStub, depth int) {
		fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), s.Name)
		for _, kv := range s.Attributes {
			if k := string(kv.Key); k == "quiver.decision.code" || k == "quiver.error.code" {
				fmt.Fprintf(&b, " %s=%s", k, kv.Value.String())
			}
		}
		b.WriteString("\n")
		var kids []tracetest.SpanStub
		for _, c := range spans {
			if c.Parent.SpanID() == s.SpanContext.SpanID() && c.SpanContext.TraceID() == s.SpanContext.TraceID() {
				kids = append(kids, c)
			}
		}
		slices.SortFunc(kids, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
		for _, c := range kids {
			draw(c, depth+1)
		}
	}
	draw(*top, 0)
	return b.String()
}

func TestSpanTree(t *testing.T) {
	r := newRig(t, false)

	t.Run("allowed_call_continues_the_hosts_trace_into_the_server", func(t *testing.T) {
		r.spans.Reset()
		text, isErr := r.call("ex__trace_seen", map[string]any{"note": argValue}, map[string]any{"traceparent": hostParent})
		if isErr {
			t.Fatalf("refused: %s", text)
		}
		spans := r.spans.GetSpans()
		want := `tools/call ex__trace_seen quiver.decision.code=allow.policy
  quiver.gate quiver.decision.code=allow.policy
  quiver.downstream
  quiver.exit
`
		if got := tree(spans, "tools/call ex__trace_seen"); got != want {
			t.Fatalf("span tree:\n%s\nwant:\n%s", got, want)
		}
		var req, down tracetest.SpanStub
		for _, s := range spans {
			switch s.Name {
			case "tools/call ex__trace_seen":
				req = s
			case "quiver.downstream":
				down = s
			}
		}
		if req.SpanContext.TraceID().String() != hostTrace || req.Parent.SpanID().String() != hostSpan || !req.Parent.IsRemote() {
			t.Errorf("the call's span does not continue the host's traceparent: trace %s parent %s", req.SpanContext.TraceID(), req.Parent.SpanID())
		}
		if req.SpanKind != trace.SpanKindServer || down.SpanKind != trace.SpanKindClient {
			t.Errorf("kinds: request %v, downstream %v", req.SpanKind, down.SpanKind)
		}
		forwarded := "00-" + hostTrace + "-" + down.SpanContext.SpanID().String() + "-01"
		if text != "traceparent="+forwarded {
			t.Errorf("the server's _meta had %q, want the downstream span's %s", text, forwarded)
		}
		if h := r.traceHeaders(); !slices.Contains(h, forwarded) {
			t.Errorf("no request to the remote server carried the header traceparent: %s (it saw %q)", forwarded, h)
		}
		for _, s := range spans {
			for _, kv := range s.Attributes {
				if strings.Contains(kv.Value.String(), argValue) || strings.Contains(s.Name, argValue) {
					t.Errorf("span %s carries an argument's value: %s=%s", s.Name, kv.Key, kv.Value.String())
				}
			}
		}
	})

	t.Run("refused_call_ends_at_the_gate", func(t *testing.T) {
		r.spans.Reset()
		text, isErr := r.call("ex__current_time", nil, nil)
		if !isErr || !strings.HasPrefix(text, "deny.rule") {
			t.Fatalf("want a deny.rule refusal, got %q", text)
		}
		want := `tools/call ex__current_time quiver.decision.code=deny.rule
  quiver.gate quiver.decision.code=deny.rule
`
		if got := tree(r.spans.GetSpans(), "tools/call ex__current_time"); got != want {
			t.Fatalf("span tree:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("approved_call_shows_the_ask_and_the_wait", func(t *testing.T) {
		r.spans.Reset()
		text, _ := r.call("ex__notes_delete", map[string]any{"id": "n404"}, nil)
		if strings.HasPrefix(text, "deny.") {
			t.Fatalf("approved, still refused: %s", text)
		}
		// Allowed once: a permit for this call, which the gate then finds.
		want := `tools/call ex__notes_delete quiver.decision.code=allow.permit
  quiver.gate quiver.decision.code=ask.policy
  quiver.approval quiver.decision.code=allow.permit
  quiver.downstream
  quiver.exit
`
		if got := tree(r.spans.GetSpans(), "tools/call ex__notes_delete"); got != want {
			t.Fatalf("span tree:\n%s\nwant:\n%s", got, want)
		}
	})
}

func TestNoTracesWithoutEndpoint(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		{},
		{"OTEL_SERVICE_NAME": "quiver"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"},
	} {
		tel, err := telemetry.New(context.Background(), telemetry.Options{Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		if tel.Tracing() || tel.Enabled() {
			t.Errorf("%v: traces on", env)
		}
	}
	tel, err := telemetry.New(context.Background(), telemetry.Options{Getenv: func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"}[k]
	}})
	if err == nil || !strings.Contains(err.Error(), "http/protobuf or grpc") {
		t.Errorf("an unknown protocol: %v, %v", tel, err)
	}
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

func TestHealth(t *testing.T) {
	t.Parallel()
	tel, err := telemetry.New(context.Background(), telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	waiting := "servers to start or fail: slow"
	h := tel.Handler(func(context.Context) string { return "" }, func(context.Context) string { return waiting })
	if code, body := get(t, h, "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, h, "/readyz"); code != 503 || !strings.Contains(body, waiting) {
		t.Errorf("/readyz while a server starts: %d %q", code, body)
	}
	waiting = ""
	if code, body := get(t, h, "/readyz"); code != 200 {
		t.Errorf("/readyz once ready: %d %q", code, body)
	}
	if code, _ := get(t, h, "/metrics"); code != 404 {
		t.Errorf("/metrics without --metrics: %d, want 404", code)
	}
}

func TestTracesFromEnvironment(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
	} {
		tel, err := telemetry.New(context.Background(), telemetry.Options{Getenv: func(k string) string { return env[k] }})
		if err != nil || !tel.Tracing() {
			t.Errorf("%v: traces off (%v)", env, err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = tel.Shutdown(ctx) // nothing listens there; nothing was sent
		cancel()
	}
}

package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// otlpReceiver is an OTLP/HTTP trace endpoint: it decodes what quiver
// exports with the collector's own protobuf types.
type otlpReceiver struct {
	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string // service.name of each batch
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
		http.Error(w, fmt.Sprintf("not an OTLP/HTTP protobuf export: %s %s: %v", r.URL.Path, r.Header.Get("Content-Type"), err), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				o.service = append(o.service, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// tree draws the spans of the newest trace whose root is named root, as
// telemetry's test does: children under their parent, in start order,
// with the codes they carry.
func (o *otlpReceiver) tree(root string) (string, *tracepb.Span) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var top *tracepb.Span
	for _, s := range o.spans {
		if s.Name == root {
			top = s
		}
	}
	if top == nil {
		return "", nil
	}
	var b strings.Builder
	var draw func(s *tracepb.Span, depth int)
	draw = func(s *tracepb.Span, depth int) {
		b.WriteString(strings.Repeat("  ", depth) + s.Name)
		for _, kv := range s.Attributes {
			if kv.Key == "quiver.decision.code" || kv.Key == "quiver.error.code" || (depth == 0 && kv.Key == "quiver.server") {
				fmt.Fprintf(&b, " %s=%s", kv.Key, kv.GetValue().GetStringValue())
			}
		}
		b.WriteString("\n")
		var kids []*tracepb.Span
		for _, c := range o.spans {
			if bytes.Equal(c.ParentSpanId, s.SpanId) && bytes.Equal(c.TraceId, s.TraceId) {
				kids = append(kids, c)
			}
		}
		slices.SortFunc(kids, func(a, b *tracepb.Span) int { return int(int64(a.StartTimeUnixNano) - int64(b.StartTimeUnixNano)) })
		for _, c := range kids {
			draw(c, depth+1)
		}
	}
	draw(top, 0)
	return b.String(), top
}

// awaitCond polls cond until it holds, failing after timeout.
func awaitCond(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockedBuffer collects quiver's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestOperatingEndToEnd runs the real binary as an operator would: a
// --metrics listener, traces to an OTLP/HTTP endpoint named by
// OTEL_EXPORTER_OTLP_ENDPOINT, the log as JSON in a file.
func TestOperatingEndToEnd(t *testing.T) {
	t.Parallel()
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()

	// "slow" is a remote server that does not answer until released:
	// quiver is not ready while it starts.
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		// It quotes its key back, as careless servers do.
		http.Error(w, "down for the test (key "+r.URL.Query().Get("key")+")", http.StatusServiceUnavailable)
	}))
	defer slow.Close()
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })

	logFile := filepath.Join(t.TempDir(), "logs", "quiver.log")
	const secretKey = "k3y-0f-the-slow-server-8d1e" // in slow's url: never in the log
	cfg := `
surface:
  reveal: direct
policy:
  rules:
    - {tool: "example__current_time", action: deny}
servers:
  example:
    command: quiver
    args: [example-server, --test-tools]
  slow:
    url: ` + slow.URL + `/mcp?key=${QUIVER_E2E_KEY}
    timeout: 60s
`
	stderr := &lockedBuffer{}
	h := startQuiver(t, cfg, hostOptions{
		args: []string{"--metrics", "127.0.0.1:0", "--log-level", "info", "--log-format", "json", "--log-file", logFile},
		env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
			"OTEL_SERVICE_NAME=quiver-e2e", "OTEL_BSP_SCHEDULE_DELAY=50", "QUIVER_E2E_KEY=" + secretKey},
		stderr: stderr,
	})

	// The log goes to the file, one JSON object a line; the metrics
	// listener's address is in it.
	var metricsURL string
	awaitCond(t, "the log file names the metrics listener", 10*time.Second, func() bool {
		b, _ := os.ReadFile(logFile)
		for _, line := range strings.Split(string(b), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "serving metrics" {
				metricsURL, _ = rec["url"].(string)
			}
		}
		return metricsURL != ""
	})
	base := strings.TrimSuffix(metricsURL, "/metrics")

	if code, body := httpGet(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz while starting: %d %s", code, body)
	}
	code, body := httpGet(t, base+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "slow") {
		t.Errorf("/readyz while slow starts: %d %q, want 503 naming slow", code, body)
	}
	releaseOnce.Do(func() { close(release) })
	awaitCond(t, "/readyz turns 200 once slow has failed", 20*time.Second, func() bool {
		code, _ := httpGet(t, base+"/readyz")
		return code == 200
	})
	h.waitTools("example__echo")

	const hostTrace, hostSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + hostTrace + "-" + hostSpan + "-01"}}
		res, err := h.c.CallTool(h.ctx(), req)
		if err != nil {
			t.Fatalf("tools/call %s: %v", name, err)
		}
		return res
	}
	for range 2 {
		if res := call("example__echo", map[string]any{"text": "hello"}); res.IsError {
			t.Fatalf("echo refused: %s", toolresult.Text(res))
		}
	}
	if res := call("example__current_time", nil); !res.IsError || !strings.HasPrefix(toolresult.Text(res), "deny.rule") {
		t.Fatalf("current_time should be refused by the rule: %s", toolresult.Text(res))
	}

	_, metrics := httpGet(t, base+"/metrics")
	for _, want := range []string{
		`quiver_calls_total{code="allow.policy",server="example"} 2`,
		`quiver_calls_total{code="deny.rule",server="example"} 1`,
		`quiver_call_duration_seconds_count{server="example"} 2`,
		`quiver_downstream_up{server="example"} 1`,
		`quiver_downstream_up{server="slow"} 0`,
		`quiver_approvals_pending 0`,
		`quiver_search_total 0`,
	} {
		if !strings.Contains(metrics, "\n"+want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	var excerpt []string
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "quiver_") && !strings.Contains(l, "_bucket") {
			excerpt = append(excerpt, l)
		}
	}
	t.Logf("/metrics (quiver_*, buckets left out):\n%s", strings.Join(excerpt, "\n"))

	var tree string
	var root *tracepb.Span
	awaitCond(t, "the refused call's span tree reaches the OTLP endpoint", 10*time.Second, func() bool {
		tree, root = recv.tree("tools/call example__current_time")
		return root != nil && strings.Count(tree, "\n") == 2
	})
	if want := "tools/call example__current_time quiver.server=example quiver.decision.code=deny.rule\n  quiver.gate quiver.decision.code=deny.rule\n"; tree != want {
		t.Errorf("refused call's span tree:\n%s\nwant:\n%s", tree, want)
	}
	tree, root = recv.tree("tools/call example__echo")
	want := `tools/call example__echo quiver.server=example quiver.decision.code=allow.policy
  quiver.gate quiver.decision.code=allow.policy
  quiver.downstream
  quiver.exit
`
	if tree != want {
		t.Errorf("allowed call's span tree:\n%s\nwant:\n%s", tree, want)
	}
	t.Logf("span tree of one allowed call, as the OTLP endpoint received it:\n%s", tree)
	if root != nil && (hex.EncodeToString(root.TraceId) != hostTrace || hex.EncodeToString(root.ParentSpanId) != hostSpan) {
		t.Errorf("the call's span does not continue the host's traceparent: trace %x parent %x", root.TraceId, root.ParentSpanId)
	}
	recv.mu.Lock()
	services := slices.Compact(slices.Clone(recv.service))
	recv.mu.Unlock()
	if !slices.Equal(services, []string{"quiver-e2e"}) {
		t.Errorf("service.name %v, want OTEL_SERVICE_NAME's quiver-e2e", services)
	}
	// The log in the file is redacted as on stderr: slow's failure
	// quotes its answer, without the key.
	awaitCond(t, "the log file says slow failed", 10*time.Second, func() bool {
		b, _ := os.ReadFile(logFile)
		return strings.Contains(string(b), `"server":"slow"`) && strings.Contains(string(b), `down for the test (key [redacted:QUIVER_E2E_KEY])`)
	})
	if b, _ := os.ReadFile(logFile); strings.Contains(string(b), secretKey) {
		t.Errorf("the log file shows slow's key:\n%s", b)
	}
	if strings.Contains(stderr.String(), "serving metrics") {
		t.Errorf("with --log-file the log must not go to stderr too:\n%s", stderr.String())
	}
}

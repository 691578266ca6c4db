package telemetry_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/quiver-mcp/quiver/internal/exampleserver"
	"github.com/quiver-mcp/quiver/internal/toolresult"
	"github.com/quiver-mcp/quiver/proxy"
	"github.com/quiver-mcp/quiver/registry"
	"github.com/quiver-mcp/quiver/telemetry"
)

// The rig is a real proxy with its real registry, watched by a real
// Telemetry: the downstream is the example server over streamable HTTP
// in this process (so the HTTP headers quiver sends it can be seen), the
// host an mcp-go client on the proxy's stdio, the spans go to the SDK's
// in-memory exporter.

// rigConfig lets current_time be refused by a rule; notes_delete is
// destructive, so the default policy asks before it runs.
const rigConfig = `
surface:
  reveal: direct
policy:
  approval_timeout: 10s
  rules:
    - {tool: "ex__current_time", action: deny}
servers:
  ex:
    url: URL/mcp
`

type rig struct {
	t       *testing.T
	p       *proxy.Server
	tel     *telemetry.Telemetry
	spans   *tracetest.InMemoryExporter
	c       *client.Client
	mu      sync.Mutex
	headers []string // the traceparent header of each request to the server
	// asked, when set, hears of each approval card, which then waits for
	// release.
	asked, release chan struct{}
}

// seenTool answers with the traceparent of its call's _meta.
func seenTool() server.ServerTool {
	return server.ServerTool{
		Tool: mcp.NewTool("trace_seen", mcp.WithDescription("Say which trace context this call came with."),
			mcp.WithString("note", mcp.Description("Anything; it is not used.")),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
		Handler: func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tp := ""
			if req.Params.Meta != nil {
				tp, _ = req.Params.Meta.AdditionalFields["traceparent"].(string)
			}
			return mcp.NewToolResultText("traceparent=" + tp), nil
		},
	}
}

// approve plays the person in front of the host: every card is allowed
// once (after release, when the test holds the cards).
func (r *rig) approve(ctx context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if r.asked != nil {
		r.asked <- struct{}{}
		select {
		case <-r.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": "allow_once"}}}, nil
}

type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, req)
}

func newRig(t *testing.T, metrics bool) *rig {
	t.Helper()
	r := &rig{t: t, spans: tracetest.NewInMemoryExporter()}
	ds := exampleserver.New(exampleserver.Options{})
	ds.AddTools(seenTool())
	mcpHTTP := server.NewStreamableHTTPServer(ds)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if tp := req.Header.Get("traceparent"); tp != "" {
			r.mu.Lock()
			r.headers = append(r.headers, tp)
			r.mu.Unlock()
		}
		mcpHTTP.ServeHTTP(w, req)
	}))
	t.Cleanup(hs.Close)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tel, err := telemetry.New(ctx, telemetry.Options{Metrics: metrics, Exporter: r.spans})
	if err != nil {
		t.Fatal(err)
	}
	r.tel = tel
	cfg, err := registry.ParseConfig("servers.yaml", []byte(strings.ReplaceAll(rigConfig, "URL", hs.URL)), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(cfg, proxy.Options{StateDir: t.TempDir(), Observer: tel, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
	tel.SetServers(func() map[string]bool {
		up := map[string]bool{}
		for _, s := range p.Catalog().Servers {
			up[s.Name] = s.State == registry.StateUp
		}
		return up
	})
	p.Start(ctx)

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan struct{})
	go func() { defer close(served); _ = p.ServeStdio(ctx, inR, outW); outW.Close() }()
	t.Cleanup(func() { inW.Close(); cancel(); <-served; p.Close() })
	r.c = client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))),
		client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION), client.WithElicitationHandler(elicitFunc(r.approve)))
	if err := r.c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "telemetry-rig", Version: "1"}
	if _, err := r.c.Initialize(r.ctx(), init); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the example server did not start within 20s")
	}
	return r
}

func (r *rig) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	r.t.Cleanup(cancel)
	return ctx
}

// call runs a tools/call with meta as its _meta and returns its text and
// whether it is an error.
func (r *rig) call(name string, args map[string]any, meta map[string]any) (string, bool) {
	r.t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	if meta != nil {
		req.Params.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	res, err := r.c.CallTool(r.ctx(), req)
	if err != nil {
		r.t.Fatalf("tools/call %s: %v", name, err)
	}
	return toolresult.Text(res), res.IsError
}

func (r *rig) traceHeaders() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.headers...)
}

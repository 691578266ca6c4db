package registry

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestHealthCheckPingsOnlyLegacyPeers: the health check pings a server on
// 2025-11-25, whose protocol has ping, and sends nothing to one on
// 2026-07-28, which removed it (SEP-2575: liveness is the transport's).
func TestHealthCheckPingsOnlyLegacyPeers(t *testing.T) {
	for _, tc := range []struct {
		version string
		pings   bool
	}{
		{mcp.LATEST_LEGACY_PROTOCOL_VERSION, true},
		{"2026-07-28", false},
	} {
		t.Run(tc.version, func(t *testing.T) {
			var pings atomic.Int32
			hooks := &server.Hooks{}
			hooks.AddBeforePing(func(context.Context, any, *mcp.PingRequest) { pings.Add(1) })
			cl, err := client.NewInProcessClientWithOptions(server.NewMCPServer("peer", "1", server.WithHooks(hooks)), client.WithProtocolVersion(tc.version))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if err := cl.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = tc.version
			if _, err := cl.Initialize(context.Background(), init); err != nil {
				t.Fatal(err)
			}
			if got := cl.ProtocolVersion(); got != tc.version {
				t.Fatalf("negotiated %q, want %q", got, tc.version)
			}
			c := &conn{reg: &Registry{opts: Options{HealthInterval: 5 * time.Millisecond}, log: slog.New(slog.NewTextHandler(io.Discard, nil))},
				srv: Server{Name: "peer"}}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			c.watch(ctx, cl, make(chan struct{}))
			if ctx.Err() == nil {
				t.Fatal("the health check found a live server dead")
			}
			if got := pings.Load(); (got > 0) != tc.pings {
				t.Errorf("%d pings reached a server on %s; want some: %v", got, tc.version, tc.pings)
			}
		})
	}
}

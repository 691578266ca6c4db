package proxy

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/internal/cputime"
)

// BenchmarkDispatch measures quiver's own work on a call — session,
// gate, ledger, forwarding, output bounds — with the host in process, so
// no upstream transport hides it; the baseline is the same downstream
// called directly over stdio, in the same run.
func BenchmarkDispatch(b *testing.B) {
	b.Run("ledger", func(b *testing.B) {
		_, proxied := newTestServer(b, "surface: {reveal: direct}")
		benchmarkDispatch(b, proxied)
	})
	// The host on stdio, through ServeStdio and its exit (over pipes, in
	// this process): the path quiver serve takes, results as bytes.
	b.Run("ledger-stdio", func(b *testing.B) {
		s, _ := newTestServer(b, "surface: {reveal: direct}")
		benchmarkDispatch(b, stdioClient(b, s))
	})
	// Without a state dir there is no ledger: what the durable record of
	// each call costs is the difference.
	b.Run("no-ledger", func(b *testing.B) {
		_, proxied := newTestServerWith(b, "surface: {reveal: direct}", Options{})
		benchmarkDispatch(b, proxied)
	})
}

// stdioClient serves s on stdio over pipes and returns a client of it.
func stdioClient(b *testing.B, s *Server) *client.Client {
	in, out := servePipes(b, s)
	c := client.NewClient(transport.NewIO(out, in, nil), client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	b.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := c.Initialize(context.Background(), init); err != nil {
		b.Fatal(err)
	}
	return c
}

// allocs is how many heap objects this process has allocated so far
// (exact; it stops the world, so it is read outside the timed calls).
func allocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

func benchmarkDispatch(b *testing.B, proxied *client.Client) {
	tr := transport.NewStdioWithOptions(os.Args[0], []string{childEnv + "=1"}, nil)
	direct := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	if err := direct.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := direct.Initialize(context.Background(), init); err != nil {
		b.Fatal(err)
	}
	call := func(c *client.Client, name string) {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, map[string]any{"value": 1}
		if res, err := c.CallTool(context.Background(), req); err != nil || res.IsError {
			b.Fatalf("%s: %v %v", name, err, res)
		}
	}
	var d, q time.Duration
	var da, qa uint64
	b.ResetTimer()
	cpu0 := cputime.Process()
	for range b.N {
		a0 := allocs()
		t0 := time.Now()
		call(direct, "echo")
		d += time.Since(t0)
		a1 := allocs()
		t1 := time.Now()
		call(proxied, "example__echo")
		q += time.Since(t1)
		da, qa = da+a1-a0, qa+allocs()-a1
	}
	cpu := cputime.Process() - cpu0
	n := float64(b.N)
	// The process's CPU for a direct call and a proxied one, quiver's
	// background work (the ledger's flush) included: what a change to
	// quiver saves shows here whatever the machine's load.
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/op")
	// Both calls run the same mcp-go client in this process: what the
	// proxied one allocates beyond the direct one is quiver's (and the
	// in-process transport's, which is less than stdio's).
	b.ReportMetric(float64(qa)/n-float64(da)/n, "quiver-allocs/op")
	b.ReportMetric(float64(d.Nanoseconds())/n, "direct-ns/op")
	b.ReportMetric(float64(q.Nanoseconds())/n, "quiver-ns/op")
	b.ReportMetric(float64((q-d).Microseconds())/n, "added-µs/op")
	b.ReportMetric(float64(q)/float64(d), "ratio")
}

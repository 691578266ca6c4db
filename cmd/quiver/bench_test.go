package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// connect starts command over stdio and returns an initialized client.
func connect(b *testing.B, args ...string) *client.Client {
	b.Helper()
	tr := transport.NewStdioWithOptions(quiverBin, nil, args)
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, init); err != nil {
		b.Fatal(err)
	}
	return c
}

// pair starts the example server directly and quiver in front of another
// copy of it (direct mode, so no search is needed), and waits until quiver
// lists the downstream tools.
func pair(b *testing.B) (direct, proxied *client.Client) {
	b.Helper()
	dir := b.TempDir()
	direct = connect(b, "example-server", "--test-tools", "--notes", filepath.Join(dir, "direct.json"))
	cfg := filepath.Join(dir, "servers.yaml")
	// search_text reads this package's folder ("."): let the fence allow
	// it, and say where the example server puts a relative path (the
	// folder it runs in, which is quiver's and this test's).
	wd, _ := os.Getwd()
	os.WriteFile(cfg, []byte(exampleConfig("direct", "    path_base: cwd\nfence:\n  allowed_dirs: ["+wd+"]\n")), 0o600)
	proxied = connect(b, "serve", "--config", cfg, "--state-dir", dir, "--log-level", "error")
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := proxied.ListTools(context.Background(), mcp.ListToolsRequest{})
		if err == nil && slices.ContainsFunc(res.Tools, func(t mcp.Tool) bool { return t.Name == "example__echo" }) {
			return direct, proxied
		}
		if time.Now().After(deadline) {
			b.Fatal("quiver never listed the example server's tools")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func callOnce(b *testing.B, c *client.Client, name string, args map[string]any) {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %v", name, err, res)
	}
}

// BenchmarkProxyCall measures a tools/call round trip through quiver
// against the same downstream server called directly, in one run, and
// reports the ratio. At concurrency 16 the calls run in parallel; a proxy
// that serialised them would show a ratio far above the single-call one.
func BenchmarkProxyCall(b *testing.B) {
	for _, tc := range []struct {
		name        string
		concurrency int
		tool        string
		args        map[string]any
	}{
		{"echo/concurrency=1", 1, "echo", map[string]any{"value": 1}},
		{"echo/concurrency=16", 16, "echo", map[string]any{"value": 1}},
		{"search_text/concurrency=1", 1, "search_text", map[string]any{"dir": ".", "pattern": "func "}},
		{"sleep10ms/concurrency=16", 16, "sleep", map[string]any{"ms": 10}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			direct, proxied := pair(b)
			run := func(c *client.Client, name string) time.Duration {
				start := time.Now()
				var wg sync.WaitGroup
				per := (b.N + tc.concurrency - 1) / tc.concurrency
				for range tc.concurrency {
					wg.Go(func() {
						for range per {
							callOnce(b, c, name, tc.args)
						}
					})
				}
				wg.Wait()
				return time.Since(start)
			}
			b.ResetTimer()
			d := run(direct, tc.tool)
			q := run(proxied, "example__"+tc.tool)
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(d.Nanoseconds())/n, "direct-ns/op")
			b.ReportMetric(float64(q.Nanoseconds())/n, "quiver-ns/op")
			b.ReportMetric(float64(q-d)/n/1e3, "added-µs/op")
			b.ReportMetric(float64(q)/float64(d), "ratio")
		})
	}
}

// BenchmarkColdStart measures the time from starting quiver to the answer
// of its first tools/list, with a downstream server that takes 5 s to
// start: quiver must not wait for it (target: under 100 ms). Each quiver
// is killed after its answer (its server dies with it), so the loop does
// not wait out graceful shutdowns.
func BenchmarkColdStart(b *testing.B) {
	dir := b.TempDir()
	cfg := filepath.Join(dir, "servers.yaml")
	os.WriteFile(cfg, []byte("servers:\n  slow:\n    command: quiver\n    args: [example-server, --start-delay, 5s]\n"), 0o600)
	var total time.Duration
	for b.Loop() {
		var cmd *exec.Cmd
		start := time.Now()
		tr := transport.NewStdioWithOptions(quiverBin, nil, []string{"serve", "--config", cfg, "--state-dir", dir, "--log-level", "error"},
			transport.WithCommandFunc(func(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
				cmd = exec.Command(command, args...)
				cmd.Env = append(os.Environ(), env...)
				return cmd, nil
			}))
		c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
		if err := c.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
		init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
		if _, err := c.Initialize(context.Background(), init); err != nil {
			b.Fatal(err)
		}
		if _, err := c.ListTools(context.Background(), mcp.ListToolsRequest{}); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		b.StopTimer()
		_ = cmd.Process.Kill()
		c.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "ms-to-first-list")
}

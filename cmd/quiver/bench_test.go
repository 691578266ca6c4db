package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// relayEnv makes the test binary a byte relay instead of running tests:
// it starts the command in its arguments and copies stdin to the child and
// the child's stdout to its own, decoding nothing. It is the floor of any
// stdio hop: two more pipe writes and wake-ups.
const relayEnv = "QUIVER_BENCH_RELAY"

// relay is the byte relay relayEnv asks for; it returns the exit code.
func relay(argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err1 := cmd.StdinPipe()
	out, err2 := cmd.StdoutPipe()
	if err := errors.Join(err1, err2, cmd.Start()); err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 1
	}
	go func() { io.Copy(in, os.Stdin); in.Close() }()
	io.Copy(os.Stdout, out)
	cmd.Wait()
	return 0
}

// A hop is one way of reaching the example server's tools.
type hop struct {
	name   string
	c      *client.Client
	prefix string // before the tool's name: "example__" through quiver
	proc   *exec.Cmd
}

// hops starts the example server four ways: directly, behind the byte
// relay (the floor), and behind quiver over stdio and over streamable
// HTTP (quiver in direct mode, so no search is needed; the ledger on, as
// it is in use). Each quiver lists the downstream tools before it returns.
func hops(b *testing.B) []hop {
	b.Helper()
	dir := b.TempDir()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	direct, directProc := connect(b, quiverBin, nil, "example-server", "--test-tools", "--notes", filepath.Join(dir, "direct.json"))
	relayed, relayProc := connect(b, exe, []string{relayEnv + "=1"}, quiverBin, "example-server", "--test-tools", "--notes", filepath.Join(dir, "relay.json"))
	cfg := filepath.Join(dir, "servers.yaml")
	// search_text reads this package's folder ("."): run the example
	// server there, as the direct hop does (without cwd: it would run in
	// an empty folder of quiver's), let the fence allow it, and say where
	// the server puts a relative path.
	wd, _ := os.Getwd()
	os.WriteFile(cfg, []byte(exampleConfig("direct", fmt.Sprintf("    cwd: %q\n    path_base: cwd\nfence:\n  allowed_dirs: [%q]\n", wd, wd))), 0o600)
	proxied, proxiedProc := connect(b, quiverBin, profileEnv(b, dir, "stdio"), "serve", "--config", cfg, "--state-dir", filepath.Join(dir, "stdio"), "--log-level", "error")
	overHTTP, httpProc := connectHTTP(b, cfg, filepath.Join(dir, "http"), profileEnv(b, dir, "http"))
	for _, c := range []*client.Client{proxied, overHTTP} {
		waitListed(b, c, "example__echo")
	}
	return []hop{{"relay", relayed, "", relayProc()}, {"direct", direct, "", directProc()}, {"quiver", proxied, "example__", proxiedProc()}, {"quiver-http", overHTTP, "example__", httpProc}}
}

// connect starts command over stdio and returns an initialized client,
// and the command's process.
func connect(b *testing.B, command string, env []string, args ...string) (*client.Client, func() *exec.Cmd) {
	b.Helper()
	var proc *exec.Cmd
	tr := transport.NewStdioWithOptions(command, env, args, transport.WithCommandFunc(func(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
		cmd := exec.Command(command, args...)
		proc = cmd
		cmd.Env = append(os.Environ(), env...)
		if len(env) > 0 && strings.HasPrefix(env[0], "QUIVER_PROFILE_PREFIX=") {
			profiled(b, cmd, strings.TrimPrefix(env[0], "QUIVER_PROFILE_PREFIX="))
		}
		return cmd, nil
	}))
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	// Closed after profiled's cleanup (registered as the child starts).
	b.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	initialize(b, c)
	return c, func() *exec.Cmd { return proc }
}

// connectHTTP runs quiver serve --http with cfg and returns an initialized
// streamable HTTP client of it.
func connectHTTP(b *testing.B, cfg, state string, env []string) (*client.Client, *exec.Cmd) {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(quiverBin, "serve", "--http", addr, "--config", cfg, "--state-dir", state, "--log-level", "error")
	cmd.Env = append(environWithout("QUIVER_AUTH_TOKEN"), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	if len(env) > 0 {
		profiled(b, cmd, strings.TrimPrefix(env[0], "QUIVER_PROFILE_PREFIX="))
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("quiver --http never listened")
		}
	}
	tr, err := transport.NewStreamableHTTP("http://" + addr + "/mcp")
	if err != nil {
		b.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	initialize(b, c)
	return c, cmd
}

// cpuTime is the CPU time (user and system) process p has used so far,
// or 0 where /proc cannot tell. On a loaded machine a hop's CPU time per
// call is the figure that moves least: wall times wait for the scheduler.
func cpuTime(p *exec.Cmd) time.Duration {
	if p == nil || p.Process == nil {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis; utime and stime
	// are the 14th and 15th of the line, in clock ticks (100 a second).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

// loadAvg is the machine's one-minute load average ("?" where /proc
// cannot tell): the figures of a shared machine mean little without it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

func initialize(b *testing.B, c *client.Client) {
	b.Helper()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, init); err != nil {
		b.Fatal(err)
	}
}

func waitListed(b *testing.B, c *client.Client, tool string) {
	b.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
		if err == nil && slices.ContainsFunc(res.Tools, func(t mcp.Tool) bool { return t.Name == tool }) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("quiver never listed %s", tool)
		}
	}
}

// profileEnv asks a quiver built with -tags benchprofile (see
// benchprofile.go) to profile itself, when QUIVER_BENCH_PROFILE names a
// folder for the profiles:
//
//	QUIVER_BENCH_PROFILE=/tmp/prof go test ./cmd/quiver -run '^$' -bench ProxyCall -benchtime 1500x
func profileEnv(b *testing.B, dir, name string) []string {
	p := os.Getenv("QUIVER_BENCH_PROFILE")
	if p == "" {
		return nil
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		b.Fatal(err)
	}
	return []string{"QUIVER_PROFILE_PREFIX=" + filepath.Join(p, strings.NewReplacer("/", "_", "=", "").Replace(b.Name())+"-"+name)}
}

// profiled has a profiling quiver write its profiles (SIGUSR1) before the
// benchmark ends it: the last run's files are the ones left.
func profiled(b *testing.B, cmd *exec.Cmd, prefix string) {
	b.Cleanup(func() {
		os.Remove(prefix + ".done")
		if cmd.Process == nil || profileSignal == nil || cmd.Process.Signal(profileSignal) != nil {
			return
		}
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(prefix + ".done"); err == nil {
				return
			}
		}
	})
}

func callOnce(b *testing.B, c *client.Client, name string, args map[string]any) {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %v", name, err, res)
	}
}

// blockSize is how many calls a hop makes before the next hop takes its
// turn: the hops alternate (ABAB) in blocks, so that a machine whose load
// changes during the run weighs on each of them alike.
const blockSize = 250

// BenchmarkProxyCall measures a tools/call round trip four ways in one
// run: the example server directly, behind a byte relay (the floor of any
// stdio hop), and behind quiver over stdio and over streamable HTTP, with
// quiver's ledger on. The hops take turns in blocks of blockSize calls;
// b.N calls go each way. It reports each hop's median latency (p50-µs)
// and its throughput (calls/s: calls over the time the hop's blocks
// took), and the figures the targets are set on: the p50 each hop adds
// to direct's, and its throughput as a fraction of direct's. At
// concurrency 16 a proxy that serialised calls would show a throughput
// far below direct's.
//
//	go test ./cmd/quiver -run '^$' -bench ProxyCall -benchtime 1500x -v
//
// prints each row's figures side by side as a table as well.
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
			hs := hops(b)
			lat := make([][]time.Duration, len(hs))
			took := make([]time.Duration, len(hs))
			cpu := make([]time.Duration, len(hs))
			block := func(h int, n int) {
				var mu sync.Mutex
				var wg sync.WaitGroup
				cpu0 := cpuTime(hs[h].proc)
				start := time.Now()
				for w := range tc.concurrency {
					wg.Go(func() {
						var mine []time.Duration
						for i := w; i < n; i += tc.concurrency {
							t0 := time.Now()
							callOnce(b, hs[h].c, hs[h].prefix+tc.tool, tc.args)
							mine = append(mine, time.Since(t0))
						}
						mu.Lock()
						lat[h] = append(lat[h], mine...)
						mu.Unlock()
					})
				}
				wg.Wait()
				took[h] += time.Since(start)
				cpu[h] += cpuTime(hs[h].proc) - cpu0
			}
			load0 := loadAvg()
			// Warm every hop up (connections, caches, the ledger's file).
			for h := range hs {
				block(h, min(50, b.N))
				lat[h], took[h], cpu[h] = nil, 0, 0
			}
			b.ResetTimer()
			for done, round := 0, 0; done < b.N; done, round = done+blockSize, round+1 {
				n := min(blockSize, b.N-done)
				for i := range hs {
					block((i+round)%len(hs), n) // each hop goes first in turn
				}
			}
			b.StopTimer()
			p50 := make([]float64, len(hs))
			tput := make([]float64, len(hs))
			for h := range hs {
				slices.Sort(lat[h])
				p50[h] = float64(lat[h][len(lat[h])/2].Nanoseconds()) / 1e3
				tput[h] = float64(len(lat[h])) / took[h].Seconds()
				b.ReportMetric(p50[h], hs[h].name+"-p50-µs")
				if hs[h].name != "direct" {
					b.ReportMetric(float64(cpu[h].Microseconds())/float64(len(lat[h])), hs[h].name+"-cpu-µs/call")
				}
			}
			const direct = 1
			for h := range hs {
				if h == direct {
					continue
				}
				b.ReportMetric(p50[h]-p50[direct], hs[h].name+"-added-p50-µs")
				b.ReportMetric(tput[h]/tput[direct], hs[h].name+"-tput-ratio")
			}
			var t strings.Builder
			fmt.Fprintf(&t, "%s, %d calls a hop, blocks of %d, load average %s before, %s after:\n%-12s %10s %10s %10s %10s %12s\n", tc.name, b.N, blockSize, load0, loadAvg(), "hop", "p50 µs", "added µs", "calls/s", "÷ direct", "CPU µs/call")
			for h := range hs {
				fmt.Fprintf(&t, "%-12s %10.1f %10.1f %10.0f %10.2f %12.1f\n", hs[h].name, p50[h], p50[h]-p50[direct], tput[h], tput[h]/tput[direct], float64(cpu[h].Microseconds())/float64(len(lat[h])))
			}
			b.Log("\n" + t.String())
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

package gate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

var moveTool = &Tool{Name: "fs__move_file", Server: "fs",
	Schema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"source":{"type":"string","description":"File to move"},"destination":{"type":"string","description":"Where to move it"},"overwrite":{"type":"boolean","default":false}},"required":["source","destination"],"additionalProperties":false}`)}

// BenchmarkEvaluate measures a typical call with two path arguments inside
// the fence (a few directories deep, one existing, one new), and reports
// p50/p99 latency and the ratio to a baseline that only checks the same
// arguments are valid JSON.
func BenchmarkEvaluate(b *testing.B) {
	f := newFixture(b)
	src := filepath.Join(f.root, "project", "src", "main.go")
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		b.Fatal(err)
	}
	os.WriteFile(src, []byte("package main"), 0o644)
	g := f.gate(b, Policy{Rules: []Rule{{Tool: "fs__delete*", Action: "ask"}}})
	tool := *moveTool
	tool.Bases = []string{f.root}
	args := json.RawMessage(`{"source":` + js(src) + `,"destination":"project/build/main.go","overwrite":true}`)
	c := Call{Session: "s", Name: tool.Name, Tool: &tool, Visible: true, Args: args, Turn: 1}
	ctx := context.Background()
	if d := g.Evaluate(ctx, c); d.Verdict != Allow {
		b.Fatalf("setup: %s %s %s", d.Verdict, d.Code, d.Reason)
	}

	// Baseline in the same process: json.Valid on the same bytes.
	const baseN = 200000
	t0 := time.Now()
	for i := 0; i < baseN; i++ {
		if !json.Valid(args) {
			b.Fatal("invalid")
		}
	}
	base := float64(time.Since(t0).Nanoseconds()) / baseN

	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		s := time.Now()
		d := g.Evaluate(ctx, c)
		lat = append(lat, time.Since(s))
		if d.Verdict != Allow {
			b.Fatal(d.Code)
		}
	}
	total := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	perOp := float64(total.Nanoseconds()) / float64(b.N)
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(base, "baseline-ns/op")
	b.ReportMetric(perOp/base, "x-baseline")
}

// BenchmarkLedgerLifecycle records full call lifecycles (decision,
// approval, start, end: four writes) and reports calls per second.
func BenchmarkLedgerLifecycle(b *testing.B) {
	for _, par := range []int{1, 8} {
		b.Run(map[int]string{1: "serial", 8: "8-goroutines"}[par], func(b *testing.B) {
			l := openTestLedger(b, filepath.Join(b.TempDir(), "ledger.db"))
			ctx := context.Background()
			b.SetParallelism(par)
			b.ResetTimer()
			start := time.Now()
			if par == 1 {
				for i := 0; i < b.N; i++ {
					if err := lifecycle(ctx, l, "s", i); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						i++
						if err := lifecycle(ctx, l, "s", i); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		})
	}
}

// FuzzEvaluate feeds random argument bytes to every kind of tool: Evaluate
// must never panic (its recover would answer deny.internal) and every
// decision must carry a code and a reason.
func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"path":"/etc/passwd"}`, `{"path":"../x","path":"y"}`,
		`{"paths":[["a"],{"file":"file:///x"}]}`, `{"command":"ls","justification":"because"}`,
		`{"source":"~/x","destination":"%2e%2e/y"}`, `{"n":1e400,"path":"\u0000"}`,
		`{"a":{"b":{"c":{"dir":"/"}}}}`, `{"cwd":"file://host/x"}`, `{"limit":-1,"path":"a"}`,
	} {
		f.Add([]byte(s), uint8(0))
	}
	fx := newFixture(f)
	g := fx.gate(f, Policy{
		StrictArgs: false,
		Rules: []Rule{
			{Tool: "x__*", Args: map[string]Match{"path": {Prefix: "/etc"}}, Action: "deny"},
			{Tool: "*", Args: map[string]Match{"mode": {Regex: "^rm"}}, Fence: "outside", Action: "ask"},
		},
	})
	open := json.RawMessage(`{"type":"object"}`)
	tools := []*Tool{
		readTool, writeTool, deleteTool, runTool, fetchTool, moveTool,
		{Name: "x__any", Schema: open, Bases: []string{fx.root}, PathArgs: []string{"notebook"}},
		{Name: "x__ro", Class: ClassRead, Schema: open},
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, args []byte, pick uint8) {
		tl := tools[int(pick)%len(tools)]
		c := Call{Session: "s", Name: tl.Name, Tool: tl, Visible: true, Args: args, Turn: int(pick),
			ReadOnlyActivity: pick&0x80 != 0, Pins: map[string]any{"pinned": int(pick)}}
		d := g.Evaluate(ctx, c)
		if d.Code == "" || d.Reason == "" {
			t.Fatalf("decision without code or reason: %+v", d)
		}
		if d.Code == CodeInternal {
			t.Fatalf("Evaluate recovered from a panic on %q: %s", args, d.Reason)
		}
		if d.Verdict != Deny && !json.Valid(d.Args) {
			t.Fatalf("forwarded args are not JSON: %q", d.Args)
		}
	})
}

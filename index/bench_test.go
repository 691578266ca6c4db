package index

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/quiver-mcp/quiver/internal/cputime"
)

// syntheticCatalog grows the real catalog to n entries by copying it under
// new server names ("github" -> "github-3"), so term statistics stay those
// of real tools while the index grows like a big installation's.
func syntheticCatalog(tb testing.TB, n int) []Entry {
	tb.Helper()
	base := testCatalog(tb)
	out := make([]Entry, 0, n)
	for copyNo := 0; len(out) < n; copyNo++ {
		for _, e := range base {
			if len(out) == n {
				break
			}
			if copyNo > 0 {
				srv := fmt.Sprintf("%s-%d", e.Server, copyNo)
				e.Name = srv + "__" + toolPart(e)
				e.Server = srv
				e.Keywords = []string{srv}
			}
			out = append(out, e)
		}
	}
	return out
}

// minSearches is the fewest searches a percentile is taken over, whatever
// -benchtime says: a p99 of fewer says little, and one command
// (`-bench . -benchtime 5x`) then prints build and search figures alike.
const minSearches = 2000

// latencies runs search over the dev queries max(b.N, minSearches) times
// in total and returns the per-search wall and thread CPU durations, each
// sorted.
func latencies(b *testing.B, qs []evalQuery, search func(string) error) (wall, cpu []time.Duration) {
	b.Helper()
	runtime.LockOSThread() // cputime.Thread is this goroutine's
	defer runtime.UnlockOSThread()
	n := max(b.N, minSearches)
	wall = make([]time.Duration, 0, n)
	cpu = make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		q := qs[i%len(qs)].Query
		start, c0 := time.Now(), cputime.Thread()
		if err := search(q); err != nil {
			b.Fatal(err)
		}
		cpu = append(cpu, cputime.Thread()-c0)
		wall = append(wall, time.Since(start))
	}
	slices.Sort(wall)
	slices.Sort(cpu)
	return wall, cpu
}

func percentile(durs []time.Duration, p float64) float64 {
	if len(durs) == 0 {
		return 0
	}
	i := int(float64(len(durs)-1) * p)
	return float64(durs[i].Microseconds()) / 1000
}

// benchSearch measures quiver's Search and plain bluge's on the same
// entries and queries, and reports quiver's p50/p99 and the p99 ratio:
// wall time (the target's measure, good on a quiet machine) and the
// search's own CPU time (p99-cpu-ms: what it costs whatever the load), and
// the slowest query's best of ten.
func benchSearch(b *testing.B, entries []Entry) {
	qs := testQueries(b)
	ix, err := Build(entries)
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	base, err := buildBaseline(entries)
	if err != nil {
		b.Fatal(err)
	}
	defer base.reader.Close()
	ctx := context.Background()

	b.ResetTimer()
	qd, qc := latencies(b, qs, func(text string) error {
		_, err := ix.Search(ctx, Query{Text: text})
		return err
	})
	b.StopTimer()
	bd, _ := latencies(b, qs, func(text string) error {
		_, err := base.search(text, defaultLimit)
		return err
	})
	b.ReportMetric(worstQuery(qs, func(text string) error {
		_, err := ix.Search(ctx, Query{Text: text})
		return err
	}), "worst-query-ms")
	b.ReportMetric(percentile(qd, 0.5), "p50-ms")
	b.ReportMetric(percentile(qd, 0.99), "p99-ms")
	b.ReportMetric(percentile(qc, 0.99), "p99-cpu-ms")
	b.ReportMetric(percentile(bd, 0.99), "bluge-p99-ms")
	if p := percentile(bd, 0.99); p > 0 {
		b.ReportMetric(percentile(qd, 0.99)/p, "p99-ratio")
	}
}

// BenchmarkSearch: the real 1,715-tool catalog; target p99 < 1 ms.
func BenchmarkSearch(b *testing.B) {
	benchSearch(b, testCatalog(b))
}

// BenchmarkSearch10k: a 10,000-tool catalog; target p99 < 5 ms.
func BenchmarkSearch10k(b *testing.B) {
	benchSearch(b, syntheticCatalog(b, 10000))
}

// BenchmarkBuild10k: a full rebuild of a 10,000-tool catalog (what a
// catalog change costs); target < 500 ms. The baseline builds plain bluge.
func BenchmarkBuild10k(b *testing.B) {
	entries := syntheticCatalog(b, 10000)
	var baseDur time.Duration
	cpu0 := cputime.Process()
	for i := 0; i < b.N; i++ {
		ix, err := Build(entries)
		if err != nil {
			b.Fatal(err)
		}
		ix.Close()
	}
	b.StopTimer()
	b.ReportMetric(float64((cputime.Process()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
	start := time.Now()
	base, err := buildBaseline(entries)
	if err != nil {
		b.Fatal(err)
	}
	baseDur = time.Since(start)
	base.reader.Close()
	b.ReportMetric(float64(baseDur.Milliseconds()), "bluge-build-ms")
}

// BenchmarkHeap10k reports the live heap a 10,000-tool index holds (the
// entries themselves excluded); target < 100 MiB.
func BenchmarkHeap10k(b *testing.B) {
	entries := syntheticCatalog(b, 10000)
	var ms runtime.MemStats
	var mib float64
	for i := 0; i < b.N; i++ {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		ix, err := Build(entries)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		mib = float64(ms.HeapAlloc-before) / (1 << 20)
		runtime.KeepAlive(ix)
		ix.Close()
	}
	b.ReportMetric(mib, "heap-MiB")
}

// worstQuery is the slowest query's fastest time over ten runs: what the
// index costs, without the pauses a shared machine adds to every p99.
func worstQuery(qs []evalQuery, search func(string) error) float64 {
	var worst time.Duration
	for _, q := range qs {
		best := time.Duration(1 << 62)
		for k := 0; k < 10; k++ {
			start := time.Now()
			if search(q.Query) != nil {
				return -1
			}
			best = min(best, time.Since(start))
		}
		worst = max(worst, best)
	}
	return float64(worst.Microseconds()) / 1000
}

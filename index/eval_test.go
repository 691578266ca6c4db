package index

// Figures on the development queries (testdata/queries-dev.jsonl, 74 with
// an answer + 4 "none"; 1,715 tools from 62 servers), `go test ./index -run
// TestEval -v`, quiver vs plain bluge (standard analyzer, name + description,
// BM25). Ranking is tuned on the odd ids; the even ids are the check.
//
//	style            n  | quiver R@1  R@5  MRR10 | bluge R@1  R@5  MRR10
//	all              74 |        0.61 0.86 0.70  |       0.26 0.43 0.33
//	tune (odd ids)   37 |        0.65 0.89 0.74  |       0.27 0.43 0.33
//	held (even ids)  37 |        0.57 0.84 0.67  |       0.24 0.43 0.33
//	named-service    15 |        0.67 0.93 0.76  |       0.33 0.60 0.44
//	intent           24 |        0.38 0.75 0.49  |       0.08 0.17 0.12
//	terse            15 |        0.73 0.93 0.83  |       0.40 0.73 0.52
//	long             12 |        0.58 0.83 0.71  |       0.25 0.42 0.34
//	typo              8 |        1.00 1.00 1.00  |       0.38 0.38 0.38
//
// Any relevant tool in the top 1 / 5: 0.65 / 0.89. Style "none": 4 of 4
// answered Weak; 15 of the 74 answerable queries are also Weak. A caution:
// about 0.05 of the Recall@5 comes from vocabulary groups (drain/cordon,
// mute/silence, bounce/suppression, flag/toggle, ...) that are general but
// were written after reading the dev queries; without them Recall@5 is 0.80.
// Measured and dropped: catalog co-occurrence expansion (cosine of entry
// sets over name/title/lead, top 3 associates): 0.81-0.82 on every setting.
//
// Benchmarks (2 shared cores, `go test ./index -run X -bench .`): Search on
// 1,715 tools p50 0.16 ms, p99 0.72 ms, slowest query 0.46 ms (best of 10);
// on 10,000 tools p50 0.56-0.59 ms, p99 2.4-3.0 ms, slowest query 2.1 ms;
// 0.4-0.6x plain bluge's p99 in the same run. Build of 10,000 tools 535-595
// ms wall, ~800 ms CPU (plain bluge ~435 ms in the same run); heap 19-34 MiB.

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/blugelabs/bluge"
)

// recall5Floor is set just under what the index reaches on the development
// queries, so that a change that loses ranking quality fails the test.
const (
	recall5Floor      = 0.84
	recall1Floor      = 0.59
	mrr10Floor        = 0.68
	freshRecall5Floor = 0.64
)

// styleRecall5Floors are one query under what each style reaches.
var styleRecall5Floors = map[string]float64{
	"named-service": 0.86, "intent": 0.70, "terse": 0.86, "long": 0.75, "typo": 0.87,
}

// searchFunc answers a query with ranked exposed names and a weak verdict.
type searchFunc func(text string) (names []string, weak bool, err error)

// evalStats accumulates the figures of one style (or all).
type evalStats struct {
	n, r1, r5, any1, any5 int
	mrr                   float64
	weak                  int // results reported Weak
}

func (s *evalStats) add(names []string, q evalQuery, weak bool) {
	s.n++
	if weak {
		s.weak++
	}
	rel := map[string]bool{}
	for _, r := range q.Relevant {
		rel[r] = true
	}
	for i, n := range names {
		if i >= 10 {
			break
		}
		if n == q.Primary {
			if i < 1 {
				s.r1++
			}
			if i < 5 {
				s.r5++
			}
			s.mrr += 1 / float64(i+1)
		}
	}
	for i, n := range names {
		if rel[n] {
			if i < 1 {
				s.any1++
			}
			if i < 5 {
				s.any5++
			}
			break
		}
	}
}

func (s evalStats) ratio(k int) float64 {
	if s.n == 0 {
		return 0
	}
	return float64(k) / float64(s.n)
}

// The development queries are split in two fixed halves by the parity of
// their id: ranking is tuned on the odd half ("tune") and every change is
// checked on the even half ("held"), which no knob was chosen on, so a gain
// that only fits the tuned lines shows as a gap between the two.
const (
	halfTune = "tune (odd ids)"
	halfHeld = "held (even ids)"
)

func half(q evalQuery) string {
	id := strings.TrimLeft(q.ID, "abcdefghijklmnopqrstuvwxyz")
	if n, err := strconv.Atoi(id); err == nil && n%2 == 0 {
		return halfHeld
	}
	return halfTune
}

// evaluate runs every query through f. Queries of style "none" only count
// how often the answer is still confident.
func evaluate(t testing.TB, qs []evalQuery, f searchFunc, misses bool) map[string]*evalStats {
	t.Helper()
	stats := map[string]*evalStats{"all": {}}
	for _, q := range qs {
		names, weak, err := f(q.Query)
		if err != nil {
			t.Fatalf("search %q: %v", q.Query, err)
		}
		if stats[q.Style] == nil {
			stats[q.Style] = &evalStats{}
		}
		stats[q.Style].add(names, q, weak)
		if q.Style != "none" {
			stats["all"].add(names, q, weak)
			h := half(q)
			if stats[h] == nil {
				stats[h] = &evalStats{}
			}
			stats[h].add(names, q, weak)
		}
		if misses && q.Style != "none" && (len(names) == 0 || names[0] != q.Primary) {
			rank := "-"
			for i, n := range names {
				if n == q.Primary {
					rank = fmt.Sprint(i + 1)
				}
			}
			top := names
			if len(top) > 3 {
				top = top[:3]
			}
			t.Logf("miss %s [%s] rank %s weak=%v %q want %s got %v", q.ID, q.Style, rank, weak, q.Query, q.Primary, top)
		}
		if misses && q.Style == "none" && !weak {
			t.Logf("confident none %s %q got %v", q.ID, q.Query, names)
		}
	}
	return stats
}

func quiverSearch(ix *Index) searchFunc {
	return func(text string) ([]string, bool, error) {
		res, err := ix.Search(context.Background(), Query{Text: text, Limit: 10})
		if err != nil {
			return nil, false, err
		}
		names := make([]string, len(res.Hits))
		for i, h := range res.Hits {
			names[i] = h.Entry.Name
		}
		return names, res.Weak, nil
	}
}

// baselineIndex is plain bluge as a project would start: the standard
// analyzer, exposed name and description, BM25, no boosts.
type baselineIndex struct {
	reader *bluge.Reader
}

func buildBaseline(entries []Entry) (*baselineIndex, error) {
	w, err := bluge.OpenWriter(bluge.InMemoryOnlyConfig())
	if err != nil {
		return nil, err
	}
	defer w.Close()
	b := bluge.NewBatch()
	for _, e := range entries {
		doc := bluge.NewDocument(e.Name).
			AddField(bluge.NewTextField("name", e.Name)).
			AddField(bluge.NewTextField("desc", e.Description))
		b.Insert(doc)
	}
	if err := w.Batch(b); err != nil {
		return nil, err
	}
	r, err := w.Reader()
	if err != nil {
		return nil, err
	}
	return &baselineIndex{reader: r}, nil
}

func (b *baselineIndex) search(text string, limit int) ([]string, error) {
	q := bluge.NewBooleanQuery().
		AddShould(bluge.NewMatchQuery(text).SetField("name")).
		AddShould(bluge.NewMatchQuery(text).SetField("desc"))
	it, err := b.reader.Search(context.Background(), bluge.NewTopNSearch(limit, q))
	if err != nil {
		return nil, err
	}
	var names []string
	for {
		m, err := it.Next()
		if err != nil {
			return nil, err
		}
		if m == nil {
			return names, nil
		}
		err = m.VisitStoredFields(func(f string, v []byte) bool {
			if f == "_id" {
				names = append(names, string(v))
				return false
			}
			return true
		})
		if err != nil {
			return nil, err
		}
	}
}

func (b *baselineIndex) searchFunc() searchFunc {
	return func(text string) ([]string, bool, error) {
		names, err := b.search(text, 10)
		return names, false, err
	}
}

var styles = []string{"all", halfTune, halfHeld, "named-service", "intent", "terse", "long", "typo"}

// TestEval prints quiver's ranking figures next to plain bluge's on the
// development queries and fails if Recall@5 or MRR@10 drops under its
// floor.
// QUIVER_EVAL_MISSES=1 also logs every query whose primary is not first.
func TestEval(t *testing.T) {
	q := evalTable(t, testQueries(t))
	if r5 := q["all"].ratio(q["all"].r5); r5 < recall5Floor {
		t.Errorf("Recall@5 = %.3f, below the floor %.2f", r5, recall5Floor)
	}
	if mrr := q["all"].mrr / float64(q["all"].n); mrr < mrr10Floor {
		t.Errorf("MRR@10 = %.3f, below the floor %.2f", mrr, mrr10Floor)
	}
	if r1 := q["all"].ratio(q["all"].r1); r1 < recall1Floor {
		t.Errorf("Recall@1 = %.3f, below the floor %.2f", r1, recall1Floor)
	}
	for style, floor := range styleRecall5Floors {
		if st := q[style]; st == nil || st.ratio(st.r5) < floor {
			t.Errorf("%s: Recall@5 below the floor %.2f", style, floor)
		}
	}
}

// TestEvalFresh measures ranking on queries written by someone who had
// read the catalog but neither the index's code nor its vocabulary, after
// the ranking was tuned: the honest figure for queries quiver has never
// seen. Nothing may be tuned on them, or they stop being that; the floor
// only catches a change that loses ground on them.
func TestEvalFresh(t *testing.T) {
	q := evalTable(t, loadQueries(t, "testdata/queries-fresh.jsonl"))
	if r5 := q["all"].ratio(q["all"].r5); r5 < freshRecall5Floor {
		t.Errorf("fresh Recall@5 = %.3f, below the floor %.2f", r5, freshRecall5Floor)
	}
}

// evalTable ranks qs with quiver and with plain bluge, logs the figures
// side by side and returns quiver's.
func evalTable(t *testing.T, qs []evalQuery) map[string]*evalStats {
	t.Helper()
	entries := testCatalog(t)
	ix, err := Build(entries)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	base, err := buildBaseline(entries)
	if err != nil {
		t.Fatal(err)
	}
	defer base.reader.Close()

	q := evaluate(t, qs, quiverSearch(ix), os.Getenv("QUIVER_EVAL_MISSES") != "")
	b := evaluate(t, qs, base.searchFunc(), false)

	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%d tools, %d queries\n", ix.Len(), len(qs))
	fmt.Fprintf(&sb, "%-16s %4s | %-27s | %-27s | %s\n", "style", "n", "quiver R@1  R@5  MRR10", "bluge  R@1  R@5  MRR10", "quiver any@1 any@5 weak")
	for _, st := range styles {
		qs, bs := q[st], b[st]
		if qs == nil {
			continue
		}
		fmt.Fprintf(&sb, "%-16s %4d |        %.2f %.2f %.2f      |        %.2f %.2f %.2f      | %.2f %.2f %.2f\n",
			st, qs.n, qs.ratio(qs.r1), qs.ratio(qs.r5), qs.mrr/float64(qs.n),
			bs.ratio(bs.r1), bs.ratio(bs.r5), bs.mrr/float64(bs.n),
			qs.ratio(qs.any1), qs.ratio(qs.any5), qs.ratio(qs.weak))
	}
	if none := q["none"]; none != nil {
		fmt.Fprintf(&sb, "none: %d queries, top hit still confident (Weak=false) in %d\n", none.n, none.n-none.weak)
	}
	t.Log(sb.String())
	return q
}

// summary is one line of figures, for comparing ranking variants: the whole
// set, each half (R@5/R@1/MRR@10), and R@5 per style.
func summary(st map[string]*evalStats) string {
	fig := func(x *evalStats) string {
		if x == nil || x.n == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f/%.2f/%.2f", x.ratio(x.r5), x.ratio(x.r1), x.mrr/float64(x.n))
	}
	var per []string
	for _, s := range styles[3:] {
		if x := st[s]; x != nil {
			per = append(per, fmt.Sprintf("%s %.2f", s[:4], x.ratio(x.r5)))
		}
	}
	noneConf := 0
	if n := st["none"]; n != nil {
		noneConf = n.n - n.weak
	}
	return fmt.Sprintf("all %s | tune %s | held %s | weak %d none %d | R5 %s",
		fig(st["all"]), fig(st[halfTune]), fig(st[halfHeld]), st["all"].weak, noneConf, strings.Join(per, " "))
}

// TestEvalVariants measures ranking variants side by side; it is how every
// knob in defaultOptions was chosen. Run with QUIVER_EVAL_VARIANTS=1.
func TestEvalVariants(t *testing.T) {
	if os.Getenv("QUIVER_EVAL_VARIANTS") == "" {
		t.Skip("set QUIVER_EVAL_VARIANTS=1 to compare ranking variants")
	}
	entries := testCatalog(t)
	qs := testQueries(t)
	type variant struct {
		name string
		mod  func(*options)
	}
	f := func(name, title, lead, desc, server, param, head int, k1, b float64) func(*options) {
		return func(o *options) {
			o.weights = map[string]int{fieldName: name, fieldTitle: title, fieldLead: lead, fieldDesc: desc, fieldServer: server, fieldParam: param, fieldHead: head}
			o.k1, o.b = k1, b
		}
	}
	variants := []variant{
		{"default", func(*options) {}},
		{"no synonyms expansion", func(o *options) { o.relatedWeight = 0 }},
		{"no typo correction", func(o *options) { o.typoWeight = 0 }},
		{"no query things", func(o *options) { o.describeThings = false }},
		{"no server clause", func(o *options) { o.serverBoost = 0 }},
		{"no domain prior", func(o *options) { o.domainWeight = 0 }},
		{"whole descriptions", func(o *options) { o.descCap, o.descDistinct = 0, false }},
		{"k1 1.2", func(o *options) { o.k1 = 1.2 }},
		{"b 0.5", func(o *options) { o.b = 0.5 }},
		{"weights n3 t1 l3", f(3, 1, 3, 1, 4, 1, 2, 2, 0.75)},
		{"weights p0", f(4, 2, 2, 1, 4, 0, 2, 2, 0.75)},
		{"weights p2", f(4, 2, 2, 1, 4, 2, 2, 2, 0.75)},
	}
	for _, d := range []int{20, 40} {
		for _, cw := range []float64{0, 0.2, 0.4, 0.8} {
			for _, hw := range []float64{0, 0.2, 0.4} {
				variants = append(variants, variant{fmt.Sprintf("d%d cover %.1f head %.1f", d, cw, hw), func(o *options) {
					o.rerankDepth, o.coverWeight, o.headWeight = d, cw, hw
				}})
			}
		}
	}
	for _, v := range variants {
		o := defaultOptions()
		v.mod(&o)
		ix, err := build(entries, o)
		if err != nil {
			t.Fatal(err)
		}
		st := evaluate(t, qs, quiverSearch(ix), false)
		t.Logf("%-22s %s", v.name, summary(st))
		ix.Close()
	}
}

package index

// Evaluation. Three query sets over the same catalog (testdata/catalog.json,
// 1,715 tools from 62 servers):
//
//   - dev (queries-dev.jsonl): the set ranking is tuned on. Its figures are
//     optimistic by construction.
//   - fresh (queries-fresh.jsonl): written blind after the first round of
//     tuning; a judge. Nothing is tuned on it: it only decides whether a
//     general rule (a vocabulary group, a speller rule) stays.
//   - blind (queries-blind.jsonl): written from the catalog alone by someone
//     who saw neither the code, the vocabulary nor the other sets; the
//     second judge, read only to report figures and set floors.
//
// `go test ./index -run TestEval -v` prints the three side by side with
// plain bluge; the figures are in docs/BENCHMARKS.md. CI floors sit on the
// judges' overall Recall@5, Recall@1 and in-answer share, never on a dev
// style, so that a change which helps unseen queries but costs a dev query
// passes.
//
// Measures, per set and style, against each query's primary tool:
//
//	R@1, R@5    the primary is the first hit / among the first five
//	MRR@10      mean reciprocal rank of the primary within ten hits
//	in answer   the primary is named anywhere in the text search_tools
//	            answers with (AnswerFor: builtin's own answer)
//	bytes       that text's size, p50/p95, schemas of the bound tools
//	            included as the proxy's default surface sends them
//	weak        share of answerable queries flagged Weak (wrongly), and of
//	            "none" queries flagged Weak (rightly)

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/blugelabs/bluge"
)

// Floors on the judges, a query or three under what the index reaches
// (fresh: R@5 0.67, R@1 0.54, in answer 0.85; blind: 0.69, 0.47, 0.89), so
// a change that loses ground on unseen queries fails. They are not the
// targets of issue 11 (R@5 0.75, R@1 0.50, in answer 0.90), which lexical
// ranking reaches only for R@1 on the fresh set; docs/BENCHMARKS.md says
// so. The in-answer floors came down with issue 28: answers of whole
// server lists named the primary in 0.88 and 0.91 of the judges' answers
// in 7.1 and 6.8 KB (p50; 8.9 and 9.0 KB p95); budgeted answers of
// names chosen by score name it in 0.85 and 0.89 in under 3.8 KB.
const (
	freshRecall5Floor  = 0.65
	freshRecall1Floor  = 0.51
	freshInAnswerFloor = 0.82
	blindRecall5Floor  = 0.67
	blindRecall1Floor  = 0.45
	blindInAnswerFloor = 0.87
)

const (
	devFile   = "testdata/queries-dev.jsonl"
	freshFile = "testdata/queries-fresh.jsonl"
	blindFile = "testdata/queries-blind.jsonl"
)

// answerHits is how many hits search_tools shows by default.
const answerHits = 5

// outcome is what one search gave, as the evaluation sees it.
type outcome struct {
	names   []string // ranked exposed names, up to 10
	text    string   // the answer's text
	srvs    []string // the servers the answer lists more tools of, with how many
	servers []string // the servers the answer lists more tools of
	weak    bool
}

// searchFunc answers a query.
type searchFunc func(text string) (outcome, error)

// evalStats accumulates the figures of one style (or all).
type evalStats struct {
	n, r1, r5, inAnswer int
	server2             int // the primary's server is one the answer lists more tools of
	mrr                 float64
	weak                int // results reported Weak
	sizes               []int
}

func (s *evalStats) add(o outcome, q evalQuery) {
	s.n++
	if o.weak {
		s.weak++
	}
	s.sizes = append(s.sizes, len(o.text))
	for i, n := range o.names {
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
	if namedIn(o.text, q.Primary) {
		s.inAnswer++
	}
	for _, sv := range o.servers {
		if strings.HasPrefix(q.Primary, sv+"__") {
			s.server2++
			break
		}
	}
}

func (s *evalStats) ratio(k int) float64 {
	if s == nil || s.n == 0 {
		return 0
	}
	return float64(k) / float64(s.n)
}

func (s *evalStats) mrr10() float64 {
	if s == nil || s.n == 0 {
		return 0
	}
	return s.mrr / float64(s.n)
}

// size is the p-th percentile of the answers' sizes.
func (s *evalStats) size(p float64) int {
	if s == nil || len(s.sizes) == 0 {
		return 0
	}
	sz := append([]int(nil), s.sizes...)
	sort.Ints(sz)
	return sz[int(float64(len(sz)-1)*p+0.5)]
}

// evaluate runs every query through f. Queries of style "none" only count
// how often they are flagged Weak.
func evaluate(t testing.TB, qs []evalQuery, f searchFunc, misses bool) map[string]*evalStats {
	t.Helper()
	stats := map[string]*evalStats{"all": {}}
	for _, q := range qs {
		o, err := f(q.Query)
		if err != nil {
			t.Fatalf("search %q: %v", q.Query, err)
		}
		if stats[q.Style] == nil {
			stats[q.Style] = &evalStats{}
		}
		stats[q.Style].add(o, q)
		if q.Style != "none" {
			stats["all"].add(o, q)
		}
		if misses && q.Style != "none" && (len(o.names) == 0 || o.names[0] != q.Primary) {
			rank := "-"
			for i, n := range o.names {
				if n == q.Primary {
					rank = fmt.Sprint(i + 1)
				}
			}
			in := namedIn(o.text, q.Primary)
			top := o.names[:min(3, len(o.names))]
			t.Logf("miss %s [%s] rank %s inAnswer=%v weak=%v %q want %s got %v servers %v", q.ID, q.Style, rank, in, o.weak, q.Query, q.Primary, top, o.srvs)
		}
		if misses && q.Style == "none" && !o.weak {
			t.Logf("confident none %s %q got %v", q.ID, q.Query, o.names[:min(3, len(o.names))])
		}
	}
	return stats
}

func quiverSearch(ix *Index) searchFunc {
	return func(text string) (outcome, error) {
		ctx := context.Background()
		res, err := ix.Search(ctx, Query{Text: text, Limit: 10})
		if err != nil {
			return outcome{}, err
		}
		o := outcome{weak: res.Weak}
		for _, h := range res.Hits {
			o.names = append(o.names, h.Entry.Name)
		}
		// The answer is a search with the default limit.
		shown, err := ix.Search(ctx, Query{Text: text})
		if err != nil {
			return outcome{}, err
		}
		for _, s := range shown.Servers {
			o.srvs = append(o.srvs, fmt.Sprintf("%s(%d)", s.Name, len(s.More)))
			o.servers = append(o.servers, s.Name)
		}
		o.text = AnswerFor(ix, text)
		return o, nil
	}
}

// AnswerFor renders the answer search_tools gives for query over ix, text
// as the model reads it, with the bound tools' schemas as the proxy's
// default surface (reveal auto) sends them. answer_test.go (package
// index_test, which may import builtin) sets it before any test runs: the
// evaluation measures the real answer, not a copy of its code.
var AnswerFor func(ix *Index, query string) string

// namedIn reports whether an answer's text names the exposed name: whole,
// or as its tool part after its server's label ("More in github: a, b",
// "github: a, b; gitlab: c").
func namedIn(text, name string) bool {
	server, tool, _ := strings.Cut(name, "__")
	for _, line := range strings.Split(text, "\n") {
		label := ""
		for _, tok := range strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == ',' || r == ';' || r == '(' || r == ')' }) {
			if tok == name {
				return true
			}
			if l, ok := strings.CutSuffix(tok, ":"); ok {
				label = l
				continue
			}
			if label == server && strings.TrimRight(tok, ".…") == tool {
				return true
			}
		}
	}
	return false
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

// searchFunc is plain bluge answering with its first five names.
func (b *baselineIndex) searchFunc() searchFunc {
	return func(text string) (outcome, error) {
		names, err := b.search(text, 10)
		shown := names[:min(answerHits, len(names))]
		return outcome{names: names, text: strings.Join(shown, "\n")}, err
	}
}

var styles = []string{"all", "named-service", "intent", "terse", "long", "typo"}

// evalSet is one query set; qs is nil when its file is absent.
type evalSet struct {
	name, file string
	qs         []evalQuery
}

// loadSets loads the three sets; the blind one may not exist yet.
// QUIVER_EVAL_SETS=dev,fresh leaves the others out (while tuning, the
// blind set's figures are not to be looked at).
func loadSets(t testing.TB) []evalSet {
	t.Helper()
	sets := []evalSet{{name: "dev", file: devFile}, {name: "fresh", file: freshFile}, {name: "blind", file: blindFile}}
	only := os.Getenv("QUIVER_EVAL_SETS")
	for i := range sets {
		if only != "" && !slices.Contains(strings.Split(only, ","), sets[i].name) {
			continue
		}
		qs, err := readQueries(sets[i].file)
		if errors.Is(err, fs.ErrNotExist) && sets[i].name == "blind" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sets[i].qs = qs
	}
	return sets
}

// setFigures are quiver's and plain bluge's figures on one set.
type setFigures struct {
	set   evalSet
	q, b  map[string]*evalStats
	built bool
}

// evalAll ranks every present set with quiver and plain bluge.
func evalAll(t *testing.T, sets []evalSet) []setFigures {
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
	misses := os.Getenv("QUIVER_EVAL_MISSES")
	var out []setFigures
	for _, s := range sets {
		f := setFigures{set: s}
		if s.qs != nil {
			f.q = evaluate(t, s.qs, quiverSearch(ix), misses == s.name || misses == "all")
			f.b = evaluate(t, s.qs, base.searchFunc(), false)
			f.built = true
		}
		out = append(out, f)
	}
	return out
}

// table lays the sets out side by side, one row per style.
func table(figs []setFigures) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-13s", "")
	for _, f := range figs {
		n := 0
		if f.built {
			n = f.q["all"].n
		}
		fmt.Fprintf(&sb, "| %-5s %3d answerable, quiver / plain bluge           ", f.set.name, n)
	}
	fmt.Fprintf(&sb, "\n%-13s", "style")
	for range figs {
		fmt.Fprintf(&sb, "|  n  R@1  R@5  MRR  inAns  bytes p50/p95 | R@1  R@5  MRR ")
	}
	sb.WriteByte('\n')
	for _, st := range styles {
		fmt.Fprintf(&sb, "%-13s", st)
		for _, f := range figs {
			q, b := f.q[st], f.b[st]
			if !f.built || q == nil {
				fmt.Fprintf(&sb, "| %-54s", "(absent)")
				continue
			}
			fmt.Fprintf(&sb, "| %2d %.2f %.2f %.2f  %.2f  %5d/%5d   | %.2f %.2f %.2f ",
				q.n, q.ratio(q.r1), q.ratio(q.r5), q.mrr10(), q.ratio(q.inAnswer), q.size(0.5), q.size(0.95),
				b.ratio(b.r1), b.ratio(b.r5), b.mrr10())
		}
		sb.WriteByte('\n')
	}
	fmt.Fprintf(&sb, "%-13s", "weak flag")
	for _, f := range figs {
		if !f.built {
			fmt.Fprintf(&sb, "| %-54s", "(absent)")
			continue
		}
		none := f.q["none"]
		fmt.Fprintf(&sb, "| none flagged %d/%d, answerable flagged %.2f        ", none.weak, none.n, f.q["all"].ratio(f.q["all"].weak))
	}
	sb.WriteByte('\n')
	return sb.String()
}

// TestEval prints quiver's figures next to plain bluge's on the three sets
// and holds the fresh set's floors (the blind set's are TestEvalBlind's).
// QUIVER_EVAL_MISSES=dev|fresh|blind|all also logs every query whose
// primary is not first.
func TestEval(t *testing.T) {
	figs := evalAll(t, loadSets(t))
	t.Log(table(figs))
	if !figs[2].built {
		t.Logf("blind set %s absent: its column is empty and TestEvalBlind skips", blindFile)
	}
	checkFloors(t, "fresh", figs[1].q["all"], freshRecall5Floor, freshRecall1Floor, freshInAnswerFloor)
}

// TestEvalBlind holds the blind set's floors. Until the set is committed it
// skips, except in CI (CI=true), where a missing judge is a failure.
func TestEvalBlind(t *testing.T) {
	qs, err := readQueries(blindFile)
	if errors.Is(err, fs.ErrNotExist) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: the blind set is the second judge of ranking and CI needs it", blindFile)
		}
		t.Skipf("%s is not there yet: nothing to judge ranking with (CI=true makes this a failure)", blindFile)
	}
	if err != nil {
		t.Fatal(err)
	}
	figs := evalAll(t, []evalSet{{name: "blind", file: blindFile, qs: qs}})
	checkFloors(t, "blind", figs[0].q["all"], blindRecall5Floor, blindRecall1Floor, blindInAnswerFloor)
}

func checkFloors(t *testing.T, set string, all *evalStats, r5, r1, in float64) {
	t.Helper()
	if all == nil {
		t.Logf("%s set left out (QUIVER_EVAL_SETS): its floors are not checked", set)
		return
	}
	for _, c := range []struct {
		name       string
		got, floor float64
	}{
		{"Recall@5", all.ratio(all.r5), r5},
		{"Recall@1", all.ratio(all.r1), r1},
		{"in answer", all.ratio(all.inAnswer), in},
	} {
		if c.got < c.floor {
			t.Errorf("%s %s = %.3f, below the floor %.2f", set, c.name, c.got, c.floor)
		}
	}
}

// summary is one line of figures, for comparing ranking variants:
// R@5/R@1/MRR@10/in-answer per set, intent R@5, and the weak flag.
func summary(figs []setFigures) string {
	var parts []string
	for _, f := range figs {
		if !f.built {
			continue
		}
		a, none := f.q["all"], f.q["none"]
		parts = append(parts, fmt.Sprintf("%s %.2f/%.2f/%.2f/%.2f srv %.2f int %.2f wk %d/%d+%d %d/%dB",
			f.set.name, a.ratio(a.r5), a.ratio(a.r1), a.mrr10(), a.ratio(a.inAnswer), a.ratio(a.server2),
			f.q["intent"].ratio(f.q["intent"].r5), none.weak, none.n, a.weak, a.size(0.5), a.size(0.95)))
	}
	return strings.Join(parts, " | ")
}

// variant is one way of building the index, for TestEvalVariants.
type variant struct {
	name  string
	mod   func(*options)
	vocab []synonymGroup // nil: the default vocabulary
}

// evalVariant builds the catalog with v and ranks the sets.
func evalVariant(t *testing.T, sets []evalSet, v variant) []setFigures {
	t.Helper()
	o := defaultOptions()
	if v.mod != nil {
		v.mod(&o)
	}
	if v.vocab != nil {
		vb := buildVocabulary(v.vocab)
		o.vocab = &vb
	}
	ix, err := build(testCatalog(t), o)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var out []setFigures
	for _, s := range sets {
		f := setFigures{set: s}
		if s.qs != nil {
			f.q, f.built = evaluate(t, s.qs, quiverSearch(ix), false), true
		}
		out = append(out, f)
	}
	return out
}

package index

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestEvalVariants reproduces every ablation docs/BENCHMARKS.md and the
// comments of this package quote: each line is the index built another way,
// ranked on the three sets. QUIVER_EVAL_VARIANTS picks which:
//
//	1          the ranking knobs, the vocabulary before issue 11, none at all
//	groups     each vocabulary group dropped in turn (the test a group must
//	           pass to stay: dropping it must cost the fresh set something)
//	speller    the speller's rules
//	servers    how servers are ranked
//	weak       the weak flag's threshold
//	prior      the server document score as a prior on tool scores
//	feedback   pseudo-relevance feedback
//	compounds  joining words written apart, splitting compounds
//	fields     field weights, parameter names apart from descriptions
//	idf        BM25's IDF against bluge's misprint of it, by k1
//	bm25f      one length normalization for the combined field against
//	           BM25F's per field, by b and k1
//	near       the names an answer offers past its hits: their bytes, how
//	           many servers' tools are scored by their server, at what
//	           weight (issue 28; the "answer" and "room" sweeps of whole
//	           server lists and Also went with those lists)
func TestEvalVariants(t *testing.T) {
	mode := os.Getenv("QUIVER_EVAL_VARIANTS")
	if mode == "" {
		t.Skip("set QUIVER_EVAL_VARIANTS=1 (knobs) or =groups (each vocabulary group dropped) to compare ranking variants")
	}
	sets := loadSets(t)
	variants := []variant{
		{name: "default"},
		{name: "bluge's IDF (misprinted)", mod: func(o *options) { o.fixIDF = false }},
		{name: "one length for all fields (not BM25F)", mod: func(o *options) { o.bm25f = false }},
		{name: "no vocabulary", vocab: []synonymGroup{}},
		{name: "vocabulary before issue 11", vocab: vocabularyBeforeIssue11},
		{name: "no related expansion", mod: func(o *options) { o.relatedWeight = 0 }},
		{name: "no typo correction", mod: func(o *options) { o.typoWeight = 0 }},
		{name: "no query things", mod: func(o *options) { o.describeThings = false }},
		{name: "no server clause", mod: func(o *options) { o.serverBoost = 0 }},
		{name: "no domain prior", mod: func(o *options) { o.domainWeight = 0 }},
		{name: "no parameter descriptions", mod: func(o *options) { o.weights = withWeight(o.weights, fieldParam, 0) }},
		{name: "no params", mod: func(o *options) { o.weights = withWeight(withWeight(o.weights, fieldParam, 0), fieldPName, 0) }},
		{name: "descriptions cut to 60 distinct terms", mod: func(o *options) { o.descCap, o.descDistinct = 60, true }},
		{name: "k1 1.2", mod: func(o *options) { o.k1 = 1.2 }},
		{name: "b 0.5", mod: func(o *options) { o.bm25fB = 0.5 }},
		{name: "no cover/head rerank", mod: func(o *options) { o.coverWeight, o.headWeight = 0, 0 }},
	}
	if mode == "speller" {
		variants = variants[:1]
		variants = append(variants,
			variant{name: "speller: keep first letter", mod: func(o *options) { o.spell.keepFirstLetter = true }},
			variant{name: "speller: from 3 letters", mod: func(o *options) { o.spell.minLen = 3 }},
			variant{name: "speller: from 5 letters", mod: func(o *options) { o.spell.minLen = 5 }},
			variant{name: "speller: off", mod: func(o *options) { o.typoWeight = 0 }},
		)
	}
	if mode == "compounds" {
		variants = variants[:1]
		for _, j := range []float64{0, 0.5, 1} {
			for _, sp := range []float64{0, 0.5, 1} {
				variants = append(variants, variant{name: fmt.Sprintf("join %.1f split %.1f", j, sp), mod: func(o *options) {
					o.joinWeight, o.splitWeight = j, sp
				}})
			}
		}
	}
	if mode == "fields" {
		variants = variants[:1]
		for _, w := range []struct{ name, title, lead, pdesc, pname int }{
			{4, 2, 2, 1, 2}, {4, 2, 2, 1, 3}, {4, 2, 2, 0, 1}, {4, 2, 2, 2, 2}, {4, 3, 2, 1, 1}, {4, 2, 3, 1, 1}, {5, 2, 2, 1, 1}, {3, 2, 2, 1, 1},
		} {
			variants = append(variants, variant{name: fmt.Sprintf("name %d title %d lead %d pdesc %d pname %d", w.name, w.title, w.lead, w.pdesc, w.pname), mod: func(o *options) {
				o.weights = withWeight(withWeight(withWeight(withWeight(withWeight(o.weights, fieldName, w.name), fieldTitle, w.title), fieldLead, w.lead), fieldParam, w.pdesc), fieldPName, w.pname)
			}})
		}
	}
	if mode == "feedback" {
		variants = variants[:1]
		for _, d := range []int{3, 5} {
			for _, n := range []int{3, 6} {
				for _, w := range []float64{0.2, 0.4} {
					variants = append(variants, variant{name: fmt.Sprintf("feedback %d docs %d terms w %.1f", d, n, w), mod: func(o *options) {
						o.feedbackDocs, o.feedbackTerms, o.feedbackWeight = d, n, w
					}})
				}
			}
		}
	}
	if mode == "weak" {
		variants = variants[:1]
		for _, w := range []float64{0.2, 0.25, 0.35, 0.4, 0.5} {
			variants = append(variants, variant{name: fmt.Sprintf("weak below %.2f", w), mod: func(o *options) { o.weakCoverage = w }})
		}
	}
	if mode == "prior" {
		variants = variants[:1]
		for _, dw := range []float64{0, 0.2} {
			for _, sp := range []float64{0, 0.1, 0.2, 0.4} {
				variants = append(variants, variant{name: fmt.Sprintf("domain %.1f server prior %.1f", dw, sp), mod: func(o *options) {
					o.domainWeight, o.serverPrior = dw, sp
				}})
			}
		}
	}
	if mode == "servers" {
		variants = variants[:1]
		for _, own := range []float64{0, 3} {
			for _, dw := range []float64{0, 0.5, 1, 2, 4} {
				variants = append(variants, variant{name: fmt.Sprintf("server own %.0f doc %.1f", own, dw), mod: func(o *options) {
					o.serverOwnWeight, o.serverDocWeight = own, dw
				}})
			}
		}
	}
	if mode == "idf" {
		variants = variants[:1]
		for _, fix := range []bool{false, true} {
			for _, k1 := range []float64{1.2, 2} {
				variants = append(variants, variant{name: fmt.Sprintf("fixed idf %v k1 %.1f", fix, k1), mod: func(o *options) {
					o.fixIDF, o.k1 = fix, k1
				}})
			}
		}
	}
	if mode == "bm25f" {
		variants = variants[:1]
		variants = append(variants, variant{name: "one length for all fields (not BM25F)", mod: func(o *options) { o.bm25f = false }})
		for _, bf := range []float64{0.5, 0.75, 1} {
			for _, k1 := range []float64{1.2, 2, 3} {
				variants = append(variants, variant{name: fmt.Sprintf("bm25f b %.2f k1 %.1f", bf, k1), mod: func(o *options) {
					o.bm25f, o.bm25fB, o.k1 = true, bf, k1
				}})
			}
		}
	}
	if mode == "near" {
		// The names an answer offers past its hits: how many bytes, how
		// many servers' tools are scored by their server, at what weight
		// against the ranked candidates' scores.
		variants = variants[:1]
		for _, nb := range []int{700, 2000} {
			for _, ns := range []int{1, 2, 4} {
				for _, w := range []float64{0.5, 0.8} {
					for _, base := range []float64{0.5, 1} {
						variants = append(variants, variant{name: fmt.Sprintf("near %d servers %d w %.1f base %.1f", nb, ns, w, base), mod: func(o *options) {
							o.nearBytes, o.nearServers, o.nearServerWeight, o.nearBase = nb, ns, w, base
						}})
					}
				}
			}
		}
	}
	if mode == "groups" {
		variants = variants[:2]
		for i, g := range synonymGroups {
			rest := append(append([]synonymGroup{}, synonymGroups[:i]...), synonymGroups[i+1:]...)
			variants = append(variants, variant{name: fmt.Sprintf("-%d %s", i, strings.Join(g.words, "/")), vocab: rest})
		}
	}
	if mode == "rank" {
		// Servers ranked first, then tools within them: the best
		// servers' rank added to their candidates.
		variants = variants[:1]
		for _, k := range []int{1, 2, 4} {
			for _, w := range []float64{0.1, 0.2, 0.4} {
				variants = append(variants, variant{name: fmt.Sprintf("server rank %d w %.1f", k, w), mod: func(o *options) {
					o.serverRankServers, o.serverRankWeight = k, w
				}})
			}
		}
	}
	if mode == "curve" {
		// How many bytes of names past the hits an answer needs to name
		// the primary: the share of the dev queries named by the hits or
		// within each room, for ways of scoring the names.
		variants = variants[:1]
		for _, ns := range []int{1, 2, 4, 8} {
			for _, w := range []float64{0.5, 0.8, 1.5} {
				for _, base := range []float64{0.5, 1, 2} {
					variants = append(variants, variant{name: fmt.Sprintf("servers %d w %.1f base %.1f", ns, w, base), mod: func(o *options) {
						o.nearServers, o.nearServerWeight, o.nearBase = ns, w, base
					}})
				}
			}
		}
		for _, v := range variants {
			t.Logf("%-40.40s %s", v.name, roomCurve(t, sets, v))
		}
		return
	}
	for _, v := range variants {
		t.Logf("%-40.40s %s", v.name, summary(evalVariant(t, sets, v)))
	}
}

// roomCurve is, per set, the share of answerable queries whose primary is
// a hit or among the names offered in 500, 1000, 1500, 2000 and 2500 bytes.
func roomCurve(t *testing.T, sets []evalSet, v variant) string {
	t.Helper()
	o := defaultOptions()
	if v.mod != nil {
		v.mod(&o)
	}
	ix, err := build(testCatalog(t), o)
	if err != nil {
		t.Fatal(err)
	}
	rooms := []int{500, 1000, 1500, 2000, 2500}
	var parts []string
	for _, s := range sets {
		if s.qs == nil {
			continue
		}
		named := make([]int, len(rooms))
		n := 0
		for _, q := range s.qs {
			if q.Style == "none" {
				continue
			}
			n++
			for k, room := range rooms {
				res, err := ix.Search(context.Background(), Query{Text: q.Query, Room: func([]Hit) int { return room }})
				if err != nil {
					t.Fatal(err)
				}
				in := slices.ContainsFunc(res.Hits, func(h Hit) bool { return h.Entry.Name == q.Primary })
				for _, sv := range res.Servers {
					in = in || slices.Contains(sv.More, q.Primary)
				}
				if in {
					named[k]++
				}
			}
		}
		var fs []string
		for k := range rooms {
			fs = append(fs, fmt.Sprintf("%.2f", float64(named[k])/float64(n)))
		}
		parts = append(parts, s.name+" "+strings.Join(fs, " "))
	}
	return strings.Join(parts, " | ")
}

func withWeight(w map[string]int, field string, n int) map[string]int {
	out := map[string]int{}
	for k, v := range w {
		out[k] = v
	}
	out[field] = n
	return out
}

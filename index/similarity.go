package index

import (
	"math"

	segment "github.com/blugelabs/bluge_segment_api"

	"github.com/blugelabs/bluge/search"
	"github.com/blugelabs/bluge/search/similarity"
)

// bm25 is bluge's BM25 made to score the same whatever segments the index
// is in. A catalog is built as a few segments side by side, and bluge
// merges segments in the background, at moments that depend on timing.
// Two things then move scores, and with them the order of hits:
//
//   - ice's segment merge (v1.0.0 and v2.0.1, prepareNewTerm) adds up
//     documents where it should add term frequencies, so a merged segment
//     reports a wrong total field length and the average field length BM25
//     normalizes by changes. bm25 uses the total counted while the
//     documents were made.
//   - bluge sums a document's clause scores in an order that depends on the
//     documents searched before it, and float addition is not associative.
//     bm25 puts every clause score on a grid of scoreQuantum, on which the
//     sums are exact, so the order does not matter.
type bm25 struct {
	sim         *similarity.BM25Similarity
	k1, b       float64
	fieldLength uint64 // the field's length summed over all documents
	fixIDF      bool   // BM25's IDF as written, not bluge's (see Scorer)
}

// scoreQuantum is the grid clause scores are put on: far finer than any
// real difference between scores, and coarse enough that a sum of a few
// hundred clause scores below 2^10 needs fewer than the 53 bits of a
// float64, so it is exact.
const scoreQuantum = 1.0 / (1 << 32)

func (s *bm25) ComputeNorm(numTerms int) float32 { return s.sim.ComputeNorm(numTerms) }

func (s *bm25) Scorer(boost float64, cs segment.CollectionStats, ts segment.TermStats) search.Scorer {
	if cs != nil {
		cs = countedLength{cs, s.fieldLength}
	}
	if !s.fixIDF || cs == nil {
		return quantized{s.sim.Scorer(boost, cs, ts)}
	}
	// bluge v0.2.2 computes BM25's IDF as log(1 + (N-n) + 0.5/(n+0.5)),
	// a misplaced parenthesis: every term then weighs about log N, and
	// a word on half the catalog counts as much as a word on one tool.
	n, N := float64(ts.DocumentFrequency()), float64(cs.DocumentCount())
	idf := math.Log(1 + (N-n+0.5)/(n+0.5))
	avg := s.sim.AverageFieldLength(cs)
	return quantized{similarity.NewBM25Scorer(boost, s.k1, s.b, avg, search.NewExplanation(idf, "idf"))}
}

// countedLength replaces the index's total field length by the counted one.
type countedLength struct {
	segment.CollectionStats
	sum uint64
}

func (c countedLength) SumTotalTermFrequency() uint64 { return c.sum }

// quantized puts a scorer's scores on the grid of scoreQuantum.
type quantized struct{ search.Scorer }

func (q quantized) Score(freq int, norm float64) float64 {
	return math.Round(q.Scorer.Score(freq, norm)/scoreQuantum) * scoreQuantum
}

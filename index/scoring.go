package index

import (
	"math"
	"slices"
	"sync"
)

// quiver scores with BM25 over postings of its own. It once kept them in
// bluge segments, and building those was about half of Build's time for
// what a search reads back as a term's postings and each entry's length:
// Build already analyzes every field itself (its statistics feed typo
// correction, the domain prior and the weak verdict). The formulas below
// are bluge v0.2.2's BM25, operation for operation, so every score and
// ranking is what it was (TestRankingsUnchanged).

// posting is one entry having a term in a field, with the term's weighted
// frequency there.
type posting struct {
	entry int32
	freq  int32
}

// fieldIndex is one scored field: the combined BM25F field or the server
// field.
type fieldIndex struct {
	lists  map[string][]posting // term -> the entries having it, in entry order
	length []int32              // entry -> the field's weighted length: BM25's document length
	docs   int                  // entries that have the field: BM25's N
	total  uint64               // the lengths summed
	k1, b  float64
	fixIDF bool // BM25's IDF as written, not bluge's misprint of it (idf)
}

// idf is the inverse document frequency of a term n entries have.
// bluge v0.2.2 computes it as log(1 + (N-n) + 0.5/(n+0.5)), a misplaced
// parenthesis: every term then weighs about log N, and a word on half the
// catalog counts as much as a word on one tool. fixIDF puts it back.
func (f *fieldIndex) idf(n int) float64 {
	N := uint64(f.docs)
	if f.fixIDF {
		return math.Log(1 + (float64(N)-float64(n)+0.5)/(float64(n)+0.5))
	}
	return math.Log(1.0 + float64(N-uint64(n)) + 0.5/(float64(n)+0.5))
}

// scoreQuantum is the grid clause scores are put on: far finer than any
// real difference between scores, and coarse enough that a sum of a few
// hundred clause scores below 2^10 needs fewer than the 53 bits of a
// float64, so it is exact in any order. (When bluge summed the clauses, in
// an order that depended on the documents searched before, this kept equal
// scores equal; it now keeps every score what it was.)
const scoreQuantum = 1.0 / (1 << 32)

// clause is one term looked for in one field, at a weight.
type clause struct {
	f     *fieldIndex
	term  string
	boost float64
}

// scratch is one search's per-entry accumulators, reused across searches.
type scratch struct {
	score []float64
	hit   []bool
	found []int32
}

// scratchPool hands out scratch sized for the index that owns it.
type scratchPool struct {
	pool sync.Pool
	n    int
}

func (p *scratchPool) get() *scratch {
	if s, ok := p.pool.Get().(*scratch); ok {
		return s
	}
	return &scratch{score: make([]float64, p.n), hit: make([]bool, p.n)}
}

// put returns s with its accumulators cleared.
func (p *scratchPool) put(s *scratch) {
	for _, i := range s.found {
		s.score[i], s.hit[i] = 0, false
	}
	s.found = s.found[:0]
	p.pool.Put(s)
}

// candidates are the depth best entries for the clauses, equal scores in
// entry order, among those of kinds (any when empty) and server only (any
// when negative). An entry's score is the sum of its clauses' BM25 scores.
func (ix *Index) candidates(clauses []clause, kinds []Kind, only int32, depth int) []candidate {
	s := ix.scratch.get()
	defer ix.scratch.put(s)
	for _, c := range clauses {
		ps := c.f.lists[c.term]
		if len(ps) == 0 {
			continue
		}
		// bluge's BM25Scorer: weight·(1 − 1/(1 + freq/(k1·(1 − b + b·len/avg)))).
		weight := c.boost * c.f.idf(len(ps))
		avg := float64(c.f.total) / float64(c.f.docs)
		for _, p := range ps {
			normInverse := 1 / (c.f.k1 * ((1 - c.f.b) + c.f.b*float64(c.f.length[p.entry])/avg))
			v := weight - weight/(1+float64(p.freq)*normInverse)
			if !s.hit[p.entry] {
				s.hit[p.entry] = true
				s.found = append(s.found, p.entry)
			}
			s.score[p.entry] += math.Round(v/scoreQuantum) * scoreQuantum
		}
	}
	cands := make([]candidate, 0, min(len(s.found), 4*depth))
	better := func(a, b candidate) bool {
		return a.score > b.score || a.score == b.score && a.i < b.i
	}
	for _, e := range s.found {
		if (only >= 0 && ix.serverOf[e] != only) || !kindOK(ix.entries[e].Kind, kinds) {
			continue
		}
		c := candidate{i: int(e), score: s.score[e]}
		if len(cands) == cap(cands) {
			// Keep the best depth: sort, cut, and go on with the room freed.
			slices.SortFunc(cands, func(a, b candidate) int { return cmpCandidates(better, a, b) })
			cands = cands[:depth]
			if !better(c, cands[depth-1]) {
				continue
			}
		}
		cands = append(cands, c)
	}
	slices.SortFunc(cands, func(a, b candidate) int { return cmpCandidates(better, a, b) })
	return cands[:min(depth, len(cands))]
}

func cmpCandidates(better func(a, b candidate) bool, a, b candidate) int {
	switch {
	case better(a, b):
		return -1
	case better(b, a):
		return 1
	}
	return 0
}

type candidate struct {
	i     int
	score float64
}

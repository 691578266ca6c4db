package index

import (
	"math"
	"sort"
	"strings"
	"unicode"
)

// queryTerm is one distinct term of a query and how much it counts.
type queryTerm struct {
	term   string
	weight float64
	typo   bool
	cover  float64 // its weight in a share of the query: IDF, less for a typo
	bit    uint64  // termBit(term)
}

// termBit is one of 64 bits picked by a term's FNV-1a hash.
func termBit(t string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(t); i++ {
		h ^= uint64(t[i])
		h *= 1099511628211
	}
	return 1 << (h >> 58)
}

// Search ranks entries for q.Text. An empty query or one with no indexable
// queryTerms analyzes text and corrects words the catalog does not have.
func (ix *Index) queryTerms(text string) []queryTerm {
	a := analyzer{vocab: ix.opts.vocab}
	var own map[string]bool // terms the query has without its things' kinds
	if ix.opts.describeThings {
		if d := describeThings(text); d != text {
			own = map[string]bool{}
			for _, t := range a.analyze(stripThings(text), nil) {
				own[t.term] = true
			}
			text = d
		}
	}
	toks := a.analyze(text, nil)
	out := make([]queryTerm, 0, len(toks))
	seen := map[string]bool{}
	for _, t := range toks {
		qt := queryTerm{term: t.term, weight: 1}
		if own != nil && !own[t.term] {
			// "phone number" for +15551234567 says what an argument is,
			// less what the tool does.
			qt.weight = ix.opts.thingWeight
		}
		var split []queryTerm
		if ix.df[t.term] == 0 && ix.opts.typoWeight > 0 && !strings.Contains(t.word, " ") {
			if c := ix.speller.correct(t.word); c != "" {
				if ct := a.analyze(c, nil); len(ct) == 1 {
					qt = queryTerm{term: ct[0].term, weight: ix.opts.typoWeight, typo: true}
				}
			} else if ix.opts.splitWeight > 0 {
				split = ix.splitCompound(&a, t.word, qt.weight*ix.opts.splitWeight)
			}
		}
		if len(split) > 0 {
			for _, p := range split {
				if !seen[p.term] {
					seen[p.term] = true
					out = append(out, p)
				}
			}
			continue
		}
		if seen[qt.term] {
			continue
		}
		seen[qt.term] = true
		out = append(out, qt)
	}
	if ix.opts.joinWeight > 0 {
		// Compounds written apart: "look up" for lookup, "to do" for todo,
		// "data base" for database. Stop words are joined too.
		words := splitWords(text, nil)
		for i := 0; i+1 < len(words); i++ {
			j := words[i] + words[i+1]
			if len(j) < minCompoundLen || !isWord(j) {
				continue
			}
			term := a.stem(j)
			if c, ok := a.voc().fold[term]; ok {
				term = c
			}
			if ix.df[term] > 0 && !seen[term] {
				seen[term] = true
				out = append(out, queryTerm{term: term, weight: ix.opts.joinWeight})
			}
		}
	}
	for k := range out {
		// What the term weighs in a share of the query (share), once a
		// search rather than once an entry.
		out[k].cover = ix.idf(ix.df[out[k].term])
		out[k].bit = termBit(out[k].term)
		if out[k].typo {
			out[k].cover *= ix.opts.typoWeight
		}
	}
	return out
}

// minCompoundLen: a compound shorter than this is as likely two words that
// happen to meet ("an" + "d").
const minCompoundLen = 6

func isWord(w string) bool {
	for _, r := range w {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}

// splitCompound splits a word the catalog lacks into two it has, both of
// at least three letters ("todolist", "pageviews"): compounds written as
// one. The longest known first part wins.
func (ix *Index) splitCompound(a *analyzer, w string, weight float64) []queryTerm {
	if len(w) < minCompoundLen || !isWord(w) {
		return nil
	}
	for i := len(w) - 3; i >= 3; i-- {
		l, r := a.terms(w[:i]), a.terms(w[i:])
		if len(l) == 1 && len(r) == 1 && ix.df[l[0]] > 0 && ix.df[r[0]] > 0 {
			return []queryTerm{{term: l[0], weight: weight}, {term: r[0], weight: weight}}
		}
	}
	return nil
}

// clauses are what a search scores: each query term in the combined
// field; in the server field too when the term mostly names servers ("use
// github to ..."); and its related terms, at a lower weight.
func (ix *Index) clauses(qts []queryTerm) []clause {
	inQuery := map[string]bool{}
	for _, qt := range qts {
		inQuery[qt.term] = true
	}
	var cs []clause
	add := func(term string, weight float64) {
		if ix.df[term] > 0 {
			cs = append(cs, clause{f: &ix.all, term: term, boost: weight})
		}
	}
	for _, qt := range qts {
		add(qt.term, qt.weight)
		if ix.opts.serverBoost > 0 && float64(ix.nameDF[qt.term]) >= ix.opts.serverShare*float64(ix.df[qt.term]) && ix.df[qt.term] > 0 {
			cs = append(cs, clause{f: &ix.srv, term: qt.term, boost: qt.weight * ix.opts.serverBoost})
		}
		if ix.opts.relatedWeight <= 0 {
			continue
		}
		for _, r := range ix.vocabulary().related[qt.term] {
			// A related word on most entries ("get", "list") adds little
			// but costs a long postings walk.
			if !inQuery[r] && float64(ix.df[r]) <= ix.opts.relatedMaxShare*float64(ix.docs) {
				add(r, qt.weight*ix.opts.relatedWeight)
			}
		}
	}
	return cs
}

// coverage is the IDF-weighted share of the query's terms that entry i has.
// A confident hit covers the query's rare words; a hit that only shares
// "create" and "page" with "create a Confluence page" is a poor match.
func (ix *Index) coverage(i int, qts []queryTerm) float64 {
	return ix.share(ix.terms[i], ix.sigs[i], qts)
}

// share is the IDF-weighted share of the query's terms in the sorted terms
// ts, a subset of the terms whose bits sig has.
func (ix *Index) share(ts []string, sig uint64, qts []queryTerm) float64 {
	var have, total float64
	for _, qt := range qts {
		w := qt.cover
		total += w
		if sig&qt.bit == 0 {
			continue // most query terms are on few entries: skip the search
		}
		if j := sort.SearchStrings(ts, qt.term); j < len(ts) && ts[j] == qt.term {
			have += w
		}
	}
	if total == 0 {
		return 0
	}
	return have / total
}

// idf is BM25's inverse document frequency over entries; an unknown word
// (df 0) weighs like a word only one entry has.
func (ix *Index) idf(df int) float64 {
	if df < 1 {
		df = 1
	}
	n := float64(ix.docs)
	return math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
}

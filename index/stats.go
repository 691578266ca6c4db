package index

import (
	"slices"
	"sort"
)

// termStats are the term statistics of some entries. Those of two sets of
// entries add up to those of both.
type termStats struct {
	df       map[string]int           // term -> entries having it in any field
	nameDF   map[string]int           // term -> entries having it in the server field
	serverDF map[string][]serverCount // term -> entries having it on each server
	wordFreq map[string]int           // surface word -> entries having it
	fieldLen []uint64                 // field -> terms it gives the combined field, summed
	accs     map[string]*termAcc      // the chunk's terms, for their postings
}

// serverCount is how many of a server's entries have a term.
type serverCount struct {
	sid int32
	n   int
}

// add adds o's counts to s. o is not to be used after: s may take its
// slices. normalize must run once all are added.
func (s *termStats) add(o *termStats) {
	addCounts(s.df, o.df)
	addCounts(s.nameDF, o.nameDF)
	addCounts(s.wordFreq, o.wordFreq)
	for fi, n := range o.fieldLen {
		s.fieldLen[fi] += n
	}
	for t, cs := range o.serverDF {
		s.serverDF[t] = append(s.serverDF[t], cs...)
	}
}

// normalize orders each term's server counts by server id, one count a
// server: a server whose entries are not side by side in the catalog, or
// are split between chunks, has several.
func (s *termStats) normalize() {
	for t, cs := range s.serverDF {
		if increasing(cs) {
			continue // the usual case
		}
		sort.SliceStable(cs, func(a, b int) bool { return cs[a].sid < cs[b].sid })
		out := cs[:1]
		for _, c := range cs[1:] {
			if last := &out[len(out)-1]; last.sid == c.sid {
				last.n += c.n
				continue
			}
			out = append(out, c)
		}
		s.serverDF[t] = out
	}
}

// increasing reports whether each count's server id is above the one before.
func increasing(cs []serverCount) bool {
	for k := 1; k < len(cs); k++ {
		if cs[k].sid <= cs[k-1].sid {
			return false
		}
	}
	return true
}

func addCounts[K comparable](dst, src map[K]int) {
	for k, n := range src {
		dst[k] += n
	}
}

// serverCount is how many of server sid's entries have term.
func (ix *Index) serverCount(term string, sid int32) int {
	cs := ix.serverDF[term]
	if k, ok := slices.BinarySearchFunc(cs, sid, func(c serverCount, sid int32) int { return int(c.sid) - int(sid) }); ok {
		return cs[k].n
	}
	return 0
}

// termAcc counts one term over a chunk's entries as they are analyzed.
type termAcc struct {
	term string
	bit  uint64 // termBit(term)
	last int    // 1 + the entry that counted it last
	df   int
	srv  []serverCount // runs of entries of one server, in entry order

	// For post.
	doc, slot       int       // 1 + the entry whose combined field has it last, and where (entryTerms.add)
	inAll, inServer []posting // the chunk's entries having it in the combined field, the server field
}

// wordAcc counts one surface word over a chunk's entries.
type wordAcc struct{ last, n int }

// analyzeEntries analyzes entries lo..hi-1: it fills their fieldTerms,
// terms, heads and names, and returns their statistics. It writes nothing
// outside those entries' slots, so chunks can run side by side. Each
// term and word is counted once an entry by remembering the last entry
// that counted it, which spares a set per entry.
func (ix *Index) analyzeEntries(fieldTerms [][][]*termAcc, lo, hi int) *termStats {
	st := &termStats{
		df:       map[string]int{},
		nameDF:   map[string]int{},
		serverDF: map[string][]serverCount{},
		wordFreq: map[string]int{},
		fieldLen: make([]uint64, len(textFields)),
	}
	a := &analyzer{words: map[string]*wordInfo{}, vocab: ix.opts.vocab}
	accs := map[string]*termAcc{}
	accOf := func(term string) *termAcc {
		acc := accs[term]
		if acc == nil {
			acc = &termAcc{term: term, bit: termBit(term)}
			accs[term] = acc
		}
		return acc
	}
	var toks []token
	var ts, hs []string
	var fields slab[[]*termAcc]
	var accSlab slab[*termAcc]
	var strSlab slab[string]
	for i := lo; i < hi; i++ {
		e := ix.entries[i]
		sid := ix.serverOf[i]
		fieldTerms[i] = fields.take(len(textFields))
		ts, hs = ts[:0], hs[:0]
		for fi, f := range textFields {
			toks = a.analyze(fieldText(e, f), toks[:0])
			terms := accSlab.take(len(toks))
			for j, t := range toks {
				var acc *termAcc
				if t.wi == nil { // a phrase: its words are not typos' neighbours
					acc = accOf(t.term)
				} else {
					if w := &t.wi.count; w.last != i+1 {
						w.last = i + 1
						w.n++
					}
					if t.wi.acc == nil {
						t.wi.acc = accOf(t.term)
					}
					acc = t.wi.acc
				}
				if f == fieldServer && !slices.Contains(terms[:j], acc) {
					st.nameDF[t.term]++
				}
				terms[j] = acc
				if acc.last == i+1 {
					continue
				}
				acc.last = i + 1
				acc.df++
				ts = append(ts, t.term)
				ix.sigs[i] |= acc.bit
				if sid < 0 {
					continue
				}
				if n := len(acc.srv); n > 0 && acc.srv[n-1].sid == sid {
					acc.srv[n-1].n++
				} else {
					acc.srv = append(acc.srv, serverCount{sid, 1})
				}
			}
			fieldTerms[i][fi] = ix.inAll(f, terms)
			st.fieldLen[fi] += uint64(len(fieldTerms[i][fi]))
			if f == fieldName || f == fieldTitle || f == fieldLead {
				for _, t := range terms {
					hs = append(hs, t.term)
				}
			}
		}
		slices.Sort(ts)
		ix.terms[i] = strSlab.copy(ts)
		slices.Sort(hs)
		ix.heads[i] = strSlab.copy(slices.Compact(hs))
		ix.names[i] = newNameForms(e.Name)
	}
	st.accs = accs
	for t, acc := range accs {
		st.df[t] = acc.df
		if len(acc.srv) > 0 {
			st.serverDF[t] = acc.srv
		}
	}
	for w, wi := range a.words {
		if wi.count.n > 0 {
			st.wordFreq[w] = wi.count.n
		}
	}
	return st
}

// inAll is what of a field's terms goes into the combined field: all but
// a description's past the first descCap, each counted once when
// descDistinct. Long descriptions carry examples and JSON that drown the
// tool's purpose and stretch length normalization.
func (ix *Index) inAll(f string, terms []*termAcc) []*termAcc {
	if f != fieldDesc || (ix.opts.descCap == 0 && !ix.opts.descDistinct) {
		return terms
	}
	out := make([]*termAcc, 0, min(len(terms), max(ix.opts.descCap, 1)))
	for j, t := range terms {
		if ix.opts.descCap > 0 && len(out) >= ix.opts.descCap {
			break
		}
		if ix.opts.descDistinct && slices.Contains(terms[:j], t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// slab hands out slices of a few big allocations: analysis asks for many
// small ones, several an entry, that live as long as the index.
type slab[T any] struct{ buf []T }

const slabSize = 16 << 10

// take is a new slice of n zero values.
func (s *slab[T]) take(n int) []T {
	if cap(s.buf)-len(s.buf) < n {
		s.buf = make([]T, 0, max(n, slabSize))
	}
	k := len(s.buf)
	s.buf = s.buf[:k+n]
	return s.buf[k : k+n : k+n]
}

// copy is a copy of xs in the slab.
func (s *slab[T]) copy(xs []T) []T {
	out := s.take(len(xs))
	copy(out, xs)
	return out
}

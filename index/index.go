package index

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Index fields, weighted into one combined field (options.weights).
const (
	fieldName   = "name"   // the tool part of the exposed name, split
	fieldTitle  = "title"  // annotations.title / skill title
	fieldLead   = "lead"   // the description's first sentence: what the tool is for
	fieldDesc   = "desc"   // the whole description
	fieldServer = "server" // server key and its keywords
	fieldParam  = "param"  // parameter descriptions
	fieldPName  = "pname"  // parameter names
	fieldHead   = "head"   // skill and reference headings
)

var textFields = []string{fieldName, fieldTitle, fieldLead, fieldDesc, fieldServer, fieldParam, fieldPName, fieldHead}

// Search and Closest. Build one per catalog; Close it when it is replaced.
type Index struct {
	opts    options
	entries []Entry
	all     fieldIndex // the combined BM25F field: every text field, weighted
	srv     fieldIndex // the server field, scored apart when a query names a server
	scratch scratchPool

	docs    int
	df      map[string]int // term -> entries having it in any field
	nameDF  map[string]int // term -> entries having it in the server field (key, keywords)
	terms   [][]string     // entry -> its sorted distinct terms
	sigs    []uint64       // entry -> termBit of each of its terms, or'ed: a term whose bit is not set is not there
	heads   [][]string     // entry -> sorted distinct terms of name, title and lead
	speller *speller

	names []nameForms // for Closest

	// The server-domain prior: what share of each server's entries have a
	// term. A server whose tools talk about "channel" and "message" is where
	// a chat question belongs even when no single tool says it all.
	serverOf   []int32                  // entry -> server id (-1: none)
	serverSize []int                    // server id -> entries
	serverDF   map[string][]serverCount // term -> entries having it on each server, by server id
	avgLen     []float64                // field -> average length of its terms in the combined field
	servers    *serverDocs

	byName map[string][]int // lowercased exposed name, and tool part, -> entries
}

// Build indexes entries. Names must be non-empty and unique.
func Build(entries []Entry) (*Index, error) {
	return build(entries, defaultOptions())
}

func build(entries []Entry, opts options) (*Index, error) {
	return buildChunks(entries, opts, chunksFor(len(entries)))
}

// chunksFor is how many chunks a catalog of n entries is built in: one
// below two of minChunk, else one per core, at most maxChunks.
func chunksFor(n int) int {
	if n < 2*minChunk {
		return 1
	}
	return min(runtime.GOMAXPROCS(0), maxChunks, n/minChunk)
}

// buildChunks builds the index in the given number of chunks, side by side.
// The index answers the same whatever the number.
func buildChunks(entries []Entry, opts options, chunks int) (*Index, error) {
	ix := &Index{
		opts:    opts,
		entries: append([]Entry(nil), entries...),
		docs:    len(entries),
		terms:   make([][]string, len(entries)),
		sigs:    make([]uint64, len(entries)),
		heads:   make([][]string, len(entries)),
		names:   make([]nameForms, len(entries)),
	}
	ix.serverOf = make([]int32, len(entries))
	serverID := map[string]int32{}
	seen := make(map[string]struct{}, len(entries))
	for i, e := range entries {
		ix.serverOf[i] = -1
		if e.Server != "" {
			id, ok := serverID[e.Server]
			if !ok {
				id = int32(len(ix.serverSize))
				serverID[e.Server] = id
				ix.serverSize = append(ix.serverSize, 0)
			}
			ix.serverOf[i] = id
			ix.serverSize[id]++
		}
		if e.Name == "" {
			return nil, errors.New("build index: entry with empty name")
		}
		if _, dup := seen[e.Name]; dup {
			return nil, fmt.Errorf("build index: duplicate entry name %q", e.Name)
		}
		seen[e.Name] = struct{}{}
	}

	// Each chunk of entries is analyzed (pass 1: every field once, and the
	// statistics) and posted (pass 2: each entry's weighted terms appended
	// to their postings) by a goroutine of its own; a big catalog goes in
	// as a few chunks side by side, one per core. Chunks only write their
	// own entries' slots and statistics; the statistics are sums, so they
	// add up the same whatever order the chunks finish in, and the
	// postings are joined in chunk order, which is entry order.
	chunks = max(1, min(chunks, len(ix.entries)))
	fieldTerms := make([][][]*termAcc, len(ix.entries)) // entry -> field -> terms
	parts := make([]*termStats, chunks)
	var analyzed, posted sync.WaitGroup
	ready := make(chan struct{}) // closed once the statistics are summed
	ix.all = fieldIndex{length: make([]int32, len(ix.entries)), docs: len(ix.entries), fixIDF: opts.fixIDF}
	ix.srv = fieldIndex{length: make([]int32, len(ix.entries)), k1: 1.2, b: 0.75, fixIDF: opts.fixIDF}
	ix.all.k1, ix.all.b = opts.k1, opts.b
	if opts.bm25f {
		// Frequencies come normalized per field and scaled by bm25fScale.
		ix.all.k1, ix.all.b = opts.k1*bm25fScale, 0
	}
	for c := range chunks {
		lo, hi := c*len(ix.entries)/chunks, (c+1)*len(ix.entries)/chunks
		analyzed.Add(1)
		posted.Add(1)
		go func() {
			defer posted.Done()
			parts[c] = ix.analyzeEntries(fieldTerms, lo, hi)
			analyzed.Done()
			if opts.bm25f {
				<-ready // a field's length is weighed against its average
			}
			ix.post(fieldTerms, lo, hi)
		}()
	}
	analyzed.Wait()
	st := parts[0]
	for _, p := range parts[1:] {
		st.add(p)
	}
	st.normalize()
	ix.avgLen = make([]float64, len(textFields))
	for fi, n := range st.fieldLen {
		ix.avgLen[fi] = float64(n) / float64(max(1, len(ix.entries)))
	}
	close(ready)
	ix.df, ix.nameDF, ix.serverDF = st.df, st.nameDF, st.serverDF
	ix.speller = newSpeller(st.wordFreq, opts.spell)
	ix.buildServerDocs(serverID)
	ix.byName = make(map[string][]int, 2*len(ix.entries))
	for i, e := range ix.entries {
		full := strings.ToLower(e.Name)
		ix.byName[full] = append(ix.byName[full], i)
		if tp := strings.ToLower(toolPart(e)); tp != full {
			ix.byName[tp] = append(ix.byName[tp], i)
		}
	}
	posted.Wait()
	ix.all.lists, ix.srv.lists = make(map[string][]posting, len(ix.df)), map[string][]posting{}
	for _, p := range parts {
		for t, acc := range p.accs {
			if len(acc.inAll) > 0 {
				ix.all.lists[t] = append(ix.all.lists[t], acc.inAll...)
			}
			if len(acc.inServer) > 0 {
				ix.srv.lists[t] = append(ix.srv.lists[t], acc.inServer...)
			}
		}
		p.accs = nil
	}
	for i := range ix.entries {
		ix.all.total += uint64(ix.all.length[i])
		ix.srv.total += uint64(ix.srv.length[i])
		if ix.srv.length[i] > 0 {
			ix.srv.docs++
		}
	}
	ix.scratch.n = len(ix.entries)
	return ix, nil
}

// bm25fScale keeps normalized frequencies integers, to a hundredth.
const bm25fScale = 100

// Chunks: a catalog smaller than two of minChunk is built as one; no more
// than maxChunks.
const (
	minChunk  = 2000
	maxChunks = 4
)

// post appends entries lo..hi-1 to the postings of their terms in the
// combined field and the server field, kept by the chunk's accumulators,
// and sets their lengths there.
func (ix *Index) post(fieldTerms [][][]*termAcc, lo, hi int) {
	opts := ix.opts
	var all entryTerms
	var srv []*termAcc
	for i := lo; i < hi; i++ {
		all.reset()
		for fi, f := range textFields {
			terms := fieldTerms[i][fi]
			if len(terms) == 0 {
				continue
			}
			if f == fieldServer {
				// A few words; each counts one.
				srv = srv[:0]
				for _, t := range terms {
					if !slices.Contains(srv, t) {
						srv = append(srv, t)
					}
				}
				for _, t := range srv {
					t.inServer = append(t.inServer, posting{entry: int32(i), freq: int32(countOf(terms, t))})
				}
				ix.srv.length[i] = int32(len(terms))
			}
			w := opts.weights[f]
			if opts.bm25f && w > 0 {
				norm := 1 - opts.bm25fB + opts.bm25fB*float64(len(terms))/ix.avgLen[fi]
				w = max(1, int(math.Round(float64(w)*bm25fScale/norm)))
			}
			for _, t := range terms {
				all.add(t, i, w)
			}
		}
		for k, t := range all.accs {
			t.inAll = append(t.inAll, posting{entry: int32(i), freq: all.freqs[k]})
		}
		ix.all.length[i] = int32(all.length)
	}
}

func countOf(terms []*termAcc, t *termAcc) int {
	n := 0
	for _, x := range terms {
		if x == t {
			n++
		}
	}
	return n
}

// entryTerms collects one entry's weighted term frequencies in the
// combined field.
type entryTerms struct {
	accs   []*termAcc
	freqs  []int32
	length int
}

func (b *entryTerms) reset() {
	b.accs, b.freqs, b.length = b.accs[:0], b.freqs[:0], 0
}

// add adds weight to term t of entry i: the accumulator remembers where
// the entry's term is, which spares a map.
func (b *entryTerms) add(t *termAcc, i, weight int) {
	if weight <= 0 {
		return
	}
	b.length += weight
	if t.doc == i+1 {
		b.freqs[t.slot] += int32(weight)
		return
	}
	t.doc, t.slot = i+1, len(b.accs)
	b.accs = append(b.accs, t)
	b.freqs = append(b.freqs, int32(weight))
}

// Close releases what the index holds. An Index keeps nothing but memory
// today; Close stays so that its owner need not know.
func (ix *Index) Close() error { return nil }

// vocabulary is the synonym vocabulary the index was built with.
func (ix *Index) vocabulary() *vocabulary {
	if ix.opts.vocab != nil {
		return ix.opts.vocab
	}
	return &vocab
}

// Len is the number of entries.
func (ix *Index) Len() int { return len(ix.entries) }

package index

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/blugelabs/bluge"
	"github.com/blugelabs/bluge/index"
	"github.com/blugelabs/bluge/search/similarity"
)

// Index fields. Boosts live in options; bluge has no index-time boosts.
const (
	fieldID     = "_id"
	fieldKind   = "kind"
	fieldName   = "name"   // the tool part of the exposed name, split
	fieldTitle  = "title"  // annotations.title / skill title
	fieldLead   = "lead"   // the description's first sentence: what the tool is for
	fieldDesc   = "desc"   // the whole description
	fieldServer = "server" // server key and its keywords
	fieldParam  = "param"  // parameter descriptions
	fieldPName  = "pname"  // parameter names
	fieldHead   = "head"   // skill and reference headings
	fieldSrvKey = "srvkey" // the server key as one keyword, for Query.Server
	fieldAll    = "all"    // BM25F: every field, its terms repeated by the field's weight
)

var textFields = []string{fieldName, fieldTitle, fieldLead, fieldDesc, fieldServer, fieldParam, fieldPName, fieldHead}

// Search and Closest. Build one per catalog; Close it when it is replaced.
type Index struct {
	opts    options
	entries []Entry
	reader  *bluge.Reader

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
// below two of minBatch, else one per core, at most maxBatches.
func chunksFor(n int) int {
	if n < 2*minBatch {
		return 1
	}
	return min(runtime.GOMAXPROCS(0), maxBatches, n/minBatch)
}

// buildChunks builds the index in the given number of chunks, side by side.
// The index answers the same whatever the number.
func buildChunks(entries []Entry, opts options, chunks int) (ix *Index, err error) {
	ix = &Index{
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

	// Scores are on the fields all and server; their total lengths are
	// counted as the documents are made (see bm25).
	allB, allK1 := opts.b, opts.k1
	if opts.bm25f {
		// Frequencies come normalized and scaled by bm25fScale.
		allB, allK1 = 0, opts.k1*bm25fScale
	}
	allSim := &bm25{sim: similarity.NewBM25SimilarityBK1(allB, allK1), k1: allK1, b: allB, fixIDF: opts.fixIDF}
	serverSim := &bm25{sim: similarity.NewBM25Similarity(), k1: 1.2, b: 0.75, fixIDF: opts.fixIDF}
	cfg := bluge.InMemoryOnlyConfig()
	cfg.PerFieldSimilarity[fieldAll] = allSim
	cfg.PerFieldSimilarity[fieldServer] = serverSim
	w, err := bluge.OpenWriter(cfg)
	if err != nil {
		return nil, fmt.Errorf("build index: open writer: %w", err)
	}
	// The reader is a snapshot that outlives the writer; the writer's merge
	// goroutines are not needed once the one batch is in.
	defer func() {
		if cerr := w.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("build index: close writer: %w", cerr)
		}
		if err != nil && ix != nil && ix.reader != nil {
			_ = ix.reader.Close()
		}
		if err != nil {
			ix = nil
		}
	}()

	// Each chunk of entries is analyzed (pass 1: every field once, and the
	// statistics) and turned into one bluge batch (pass 2) by a goroutine of
	// its own. bluge builds one segment per batch, and that and the analysis
	// are most of Build's time; a big catalog goes in as a few chunks built
	// side by side, one per core. Chunks only write their own entries' slots
	// and statistics; the statistics are sums, so they add up the same
	// whatever order the chunks finish in.
	chunks = max(1, min(chunks, len(ix.entries)))
	fieldTerms := make([][][]*termAcc, len(ix.entries)) // entry -> field -> terms
	parts := make([]*termStats, chunks)
	lengths := make([]fieldLengths, chunks)
	errs := make([]error, chunks)
	var analyzed, batched sync.WaitGroup
	ready := make(chan struct{}) // closed once the statistics are summed
	for c := range chunks {
		lo, hi := c*len(ix.entries)/chunks, (c+1)*len(ix.entries)/chunks
		analyzed.Add(1)
		batched.Add(1)
		go func() {
			defer batched.Done()
			parts[c] = ix.analyzeEntries(fieldTerms, lo, hi)
			analyzed.Done()
			if opts.bm25f {
				<-ready // a field's length is weighed against its average
			}
			var b *index.Batch
			b, lengths[c] = ix.batch(fieldTerms, lo, hi)
			errs[c] = w.Batch(b)
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
	batched.Wait()
	if err := errors.Join(errs...); err != nil {
		return ix, fmt.Errorf("build index: batch: %w", err)
	}
	for _, l := range lengths {
		allSim.fieldLength += l.all
		serverSim.fieldLength += l.server
	}
	ix.reader, err = w.Reader()
	if err != nil {
		return ix, fmt.Errorf("build index: reader: %w", err)
	}
	return ix, nil
}

// bm25fScale keeps normalized frequencies integers, as bluge needs them,
// to a hundredth.
const bm25fScale = 100

// Batches: a catalog smaller than two of minBatch goes in as one; no more
// than maxBatches, since every segment costs each search a little.
const (
	minBatch   = 2000
	maxBatches = 4
)

// fieldLengths are the lengths of the scored fields, summed over documents.
type fieldLengths struct{ all, server uint64 }

// batch makes the bluge documents of entries lo..hi-1 from their analyzed
// fields.
func (ix *Index) batch(fieldTerms [][][]*termAcc, lo, hi int) (*index.Batch, fieldLengths) {
	var lengths fieldLengths
	opts := ix.opts
	batch := bluge.NewBatch()
	var all, srv termsBuilder
	for i := lo; i < hi; i++ {
		e := ix.entries[i]
		all.reset()
		doc := bluge.NewDocument(strconv.Itoa(i))
		doc.AddField(bluge.NewKeywordField(fieldKind, string(e.Kind)))
		if e.Server != "" {
			doc.AddField(bluge.NewKeywordField(fieldSrvKey, e.Server))
		}
		for fi, f := range textFields {
			terms := fieldTerms[i][fi]
			if len(terms) == 0 {
				continue
			}
			if f == fieldServer {
				srv.reset()
				for _, t := range terms {
					srv.add(t.term, 1)
				}
				doc.AddField(srv.field(f))
				lengths.server += uint64(srv.length)
			}
			w := opts.weights[f]
			if opts.bm25f && w > 0 {
				norm := 1 - opts.bm25fB + opts.bm25fB*float64(len(terms))/ix.avgLen[fi]
				w = max(1, int(math.Round(float64(w)*bm25fScale/norm)))
			}
			for _, t := range terms {
				all.addAcc(t, i, w)
			}
		}
		doc.AddField(all.field(fieldAll))
		lengths.all += uint64(all.length)
		batch.Insert(doc)
	}
	return batch, lengths
}

// Close releases the index's reader.
func (ix *Index) Close() error {
	if ix == nil || ix.reader == nil {
		return nil
	}
	if err := ix.reader.Close(); err != nil {
		return fmt.Errorf("close index: %w", err)
	}
	return nil
}

// vocabulary is the synonym vocabulary the index was built with.
func (ix *Index) vocabulary() *vocabulary {
	if ix.opts.vocab != nil {
		return ix.opts.vocab
	}
	return &vocab
}

// Len is the number of entries.
func (ix *Index) Len() int { return len(ix.entries) }

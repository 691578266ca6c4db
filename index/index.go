package index

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/blugelabs/bluge"
	"github.com/blugelabs/bluge/index"
	"github.com/blugelabs/bluge/search"
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

// options are the ranking knobs. defaultOptions holds the values measured
// best on the development queries (TestEvalVariants); tests build variants.
type options struct {
	// weights: a field's terms are repeated this many times in the one
	// combined field bluge scores. A term's frequency is thus summed over
	// fields with these weights, it has one IDF and saturates once (BM25F),
	// instead of scoring again in every field it appears in.
	weights map[string]int
	k1, b   float64 // BM25 parameters of the combined field
	fixIDF  bool    // BM25's IDF, not bluge's misprint of it (similarity.go)
	// bm25f normalizes each field's term frequencies by its own length
	// (b of bm25fB) before they are summed and saturated once, instead
	// of normalizing the sum by the sum of lengths: a long description
	// then no longer dilutes a match in a short name.
	bm25f  bool
	bm25fB float64

	// descCap keeps only the first descCap terms of a description (0: all),
	// each counted once when descDistinct. Long descriptions carry examples
	// and JSON that stretched the combined field's length normalization;
	// with BM25F a description's length weighs only its own terms, and
	// the cut is off (TestEvalVariants shows both).
	descCap      int
	descDistinct bool

	describeThings  bool    // replace paths, URLs, addresses in queries by their kind
	thingWeight     float64 // weight of a term only a thing's kind brought
	serverBoost     float64 // query term naming a server: extra clause on the server field
	serverShare     float64 // ... when at least this share of the entries with the term have it as server
	relatedWeight   float64 // weight of a related synonym's term
	relatedMaxShare float64 // ... only if at most this share of entries have it
	typoWeight      float64 // weight of a typo-corrected term; 0 disables correction
	spell           spellRules

	rerankDepth  int     // candidates taken from bluge for reranking
	domainWeight float64 // server-domain prior, as a share of the best bluge score
	coverWeight  float64 // IDF-weighted share of the query an entry has, as a share of the best bluge score
	headWeight   float64 // ... the share its name, title and lead sentence have

	weakCoverage float64 // below this IDF-weighted share of the query in the top hit: Weak

	// Servers (server.go).
	serverOwnWeight float64 // a server's own words count this many entries in its document
	serverDocWeight float64 // a server's document score against its best entry's, ranking servers
	moreServers     int     // servers an answer lists the other entries of
	maxMore         int     // ... at most this many names each
	maxMoreBytes    int     // ... and their tool parts in at most this many bytes
	moreHeadWeight  float64 // ... ordered by the query's share in them, and this much its share in their name, title and lead
	maxAlso         int     // ranked candidates past the hits an answer names, from other servers
	maxAlsoBytes    int     // ... their exposed names in at most this many bytes

	// Measured and left off (0), kept so TestEvalVariants can show why.
	serverPrior    float64 // the server's document score added to its entries', as a share of the best bluge score
	joinWeight     float64 // two query words that are one catalog word written apart: the joined term's weight
	splitWeight    float64 // a query word the catalog lacks that is two catalog words: their weight
	feedbackDocs   int     // pseudo-relevance feedback: from this many top candidates
	feedbackTerms  int     // ... add this many of their name/title/lead terms
	feedbackWeight float64 // ... at this weight

	vocab *vocabulary // nil: the default vocabulary (evaluation builds others)
}

func defaultOptions() options {
	return options{
		weights: map[string]int{
			fieldName: 4, fieldTitle: 2, fieldLead: 2, fieldDesc: 1,
			fieldServer: 4, fieldParam: 1, fieldPName: 1, fieldHead: 2,
		},
		k1: 2, b: 0.75, fixIDF: true,
		bm25f: true, bm25fB: 0.75,
		descCap: 0, descDistinct: false,
		describeThings:  true,
		thingWeight:     0.7,
		serverBoost:     5,
		serverShare:     0.5,
		relatedWeight:   0.3,
		relatedMaxShare: 0.05,
		typoWeight:      0.8,
		rerankDepth:     20,
		domainWeight:    0.2,
		coverWeight:     0.2,
		headWeight:      0.2,
		weakCoverage:    0.3,
		serverOwnWeight: 3,
		serverDocWeight: 0.5,
		moreServers:     4,
		maxMore:         maxMore,
		maxMoreBytes:    maxMoreBytes,
		maxAlso:         15,
		maxAlsoBytes:    600,
	}
}

// Index is an immutable search index over entries, safe for concurrent
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

// fieldText is the text of entry e that goes into field f.
func fieldText(e Entry, f string) string {
	switch f {
	case fieldName:
		return toolPart(e)
	case fieldTitle:
		return e.Title
	case fieldLead:
		return leadSentence(e.Description)
	case fieldDesc:
		return clip(e.Description, maxDescBytes)
	case fieldServer:
		words := []string{e.Server, e.ServerTitle}
		for _, k := range e.Keywords {
			if k != e.Server {
				words = append(words, k)
			}
		}
		return strings.Join(words, " ")
	case fieldParam:
		var sb strings.Builder
		for _, p := range e.Params {
			sb.WriteString(clip(p.Description, maxParamDescBytes))
			sb.WriteByte(' ')
		}
		return sb.String()
	case fieldPName:
		var sb strings.Builder
		for _, p := range e.Params {
			sb.WriteString(p.Name)
			sb.WriteByte(' ')
		}
		return sb.String()
	case fieldHead:
		return strings.Join(e.Headings, " ")
	}
	return ""
}

// Description text past these sizes is examples, JSON and caveats; it costs
// Build time without telling what the tool does.
const (
	maxDescBytes      = 1500
	maxParamDescBytes = 200
)

// clip cuts s to at most n bytes, at a space when there is one.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexByte(s[:n], ' '); i > n/2 {
		return s[:i]
	}
	return s[:n]
}

// toolPart is the exposed name without its server prefix: the server has a
// field of its own, and repeating it in every name would only dilute the
// name field.
func toolPart(e Entry) string {
	if e.Server != "" {
		if rest, ok := strings.CutPrefix(e.Name, e.Server+"__"); ok {
			return rest
		}
	}
	return e.Name
}

// leadSentence is the description up to its first sentence end or line
// break, at most 200 bytes: most descriptions say what the tool does first
// and how to call it after.
func leadSentence(d string) string {
	d = strings.TrimSpace(d)
	end := len(d)
	if i := strings.IndexByte(d, '\n'); i >= 0 && i < end {
		end = i
	}
	for i := 0; i+1 < end; i++ {
		if (d[i] == '.' || d[i] == '!' || d[i] == '?') && d[i+1] == ' ' {
			end = i
			break
		}
	}
	if end > 200 {
		end = 200
	}
	return d[:end]
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

// Query is one search.
type Query struct {
	Text   string
	Kinds  []Kind // empty = any kind
	Server string // only this server's entries; "" = every server's
	Limit  int    // <=0 means 5; capped at 10
}

// Hit is one found entry.
type Hit struct {
	Entry Entry
	Score float64
}

// Result is a search's answer.
type Result struct {
	Hits []Hit
	// Servers are the few servers that match the query best, each
	// with the names of its other entries (not in Hits), best first: an
	// answer names them compactly, so that a model that knows "squash a
	// PR" is a merge can ask for the right tool by name.
	Servers []ServerHit
	// Also are the exposed names of the next-ranked entries past Hits that
	// no server in Servers lists, best first: a compact second chance for
	// a right tool ranked just out of the hits on a server not listed.
	Also []string
	// Weak is true when nothing matched well (the best hit is a poor match):
	// the answer must say so plainly.
	Weak bool
	// NoServer is true when Query.Server names no server of the catalog.
	NoServer bool
}

// ServerHit is a server ranked for a query.
type ServerHit struct {
	Name  string   // the server key
	Score float64  // how well the server's document matches, for ordering
	More  []string // exposed names of its other entries, best first
	Rest  int      // how many of its other entries More leaves out
}

const (
	defaultLimit = 5
	maxLimit     = 10
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
// word gives an empty, weak result.
func (ix *Index) Search(ctx context.Context, q Query) (Result, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	limit = min(limit, maxLimit)
	only := int32(-1)
	if q.Server != "" {
		sid, ok := ix.servers.ids[q.Server]
		if !ok {
			return Result{Weak: true, NoServer: true}, nil
		}
		only = sid
	}

	exact := ix.exactNames(q, only)
	qts := ix.queryTerms(q.Text)
	if len(qts) == 0 && len(exact) == 0 {
		return Result{Weak: true}, nil
	}
	var cands []candidate
	if len(qts) > 0 {
		depth := max(limit, ix.opts.rerankDepth)
		var err error
		cands, err = ix.candidates(ctx, ix.blugeQuery(qts, q.Kinds, q.Server), depth)
		if err != nil {
			return Result{}, fmt.Errorf("search %q: %w", q.Text, err)
		}
	}
	if len(cands) == 0 && len(exact) == 0 {
		return Result{Weak: true}, nil
	}
	var res Result
	docs, docTop := ix.serverScores(qts)
	if len(cands) > 0 {
		ix.rerank(cands, qts, docs, docTop)
		if ix.opts.feedbackTerms > 0 {
			if fq := ix.feedback(cands, qts); len(fq) > len(qts) {
				more, err := ix.candidates(ctx, ix.blugeQuery(fq, q.Kinds, q.Server), max(limit, ix.opts.rerankDepth))
				if err != nil {
					return Result{}, fmt.Errorf("search %q: %w", q.Text, err)
				}
				if len(more) > 0 {
					ix.rerank(more, qts, docs, docTop)
					cands = more
				}
			}
		}
		res.Weak = ix.coverage(cands[0].i, qts) < ix.opts.weakCoverage
	}
	if len(exact) > 0 {
		// A tool's exact name is a request for that tool: it comes first,
		// however its description scores.
		cands = slices.DeleteFunc(cands, func(c candidate) bool { return slices.Contains(exact, c.i) })
		top := 1.0
		if len(cands) > 0 {
			top = cands[0].score
		}
		lead := make([]candidate, len(exact))
		for k, i := range exact {
			lead[k] = candidate{i: i, score: top + 1}
		}
		cands = append(lead, cands...)
		res.Weak = false
	}
	shown := make([]int, 0, limit)
	for _, c := range cands[:min(limit, len(cands))] {
		res.Hits = append(res.Hits, Hit{Entry: ix.entries[c.i], Score: c.score})
		shown = append(shown, c.i)
	}
	res.Servers = ix.rankServers(qts, docs, docTop, cands, shown, q.Kinds, only)
	res.Also = ix.also(cands[len(shown):], res.Servers)
	return res, nil
}

// feedback is qts with the terms the top candidates' names, titles and
// lead sentences share most (pseudo-relevance feedback), at a low weight.
func (ix *Index) feedback(cands []candidate, qts []queryTerm) []queryTerm {
	in := map[string]bool{}
	for _, qt := range qts {
		in[qt.term] = true
	}
	score := map[string]float64{}
	for _, c := range cands[:min(ix.opts.feedbackDocs, len(cands))] {
		for _, t := range ix.heads[c.i] {
			if !in[t] && float64(ix.df[t]) <= ix.opts.relatedMaxShare*float64(ix.docs) {
				score[t] += ix.idf(ix.df[t])
			}
		}
	}
	terms := make([]string, 0, len(score))
	for t := range score {
		terms = append(terms, t)
	}
	sort.Slice(terms, func(a, b int) bool {
		if score[terms[a]] != score[terms[b]] {
			return score[terms[a]] > score[terms[b]]
		}
		return terms[a] < terms[b]
	})
	out := append([]queryTerm(nil), qts...)
	for _, t := range terms[:min(ix.opts.feedbackTerms, len(terms))] {
		out = append(out, queryTerm{term: t, weight: ix.opts.feedbackWeight})
	}
	return out
}

// exactNames are the entries whose exposed name, or tool part, is the
// query itself (case aside), within the query's kinds and server.
func (ix *Index) exactNames(q Query, only int32) []int {
	t := strings.ToLower(strings.TrimSpace(q.Text))
	if t == "" || strings.ContainsAny(t, " \t\n") {
		return nil
	}
	var out []int
	for _, i := range ix.byName[t] {
		if kindOK(ix.entries[i].Kind, q.Kinds) && (only < 0 || ix.serverOf[i] == only) {
			out = append(out, i)
		}
	}
	return out
}

// candidates are the depth best entries by bluge's score, equal scores in
// entry order. Scores do not depend on how the index is segmented (see
// bm25), but bluge orders equal scores by segment, not entry; so ask for
// twice as many as needed, and for more while the last ones tie: none of
// the ties may be left out.
func (ix *Index) candidates(ctx context.Context, bq bluge.Query, depth int) ([]candidate, error) {
	for n := 2 * depth; ; n *= 2 {
		cands, err := ix.topN(ctx, bq, n)
		if err != nil {
			return nil, err
		}
		if len(cands) == n && cands[depth-1].score == cands[n-1].score {
			continue // ties at the cut: some may be out of the n
		}
		sort.Slice(cands, func(a, b int) bool {
			if cands[a].score != cands[b].score {
				return cands[a].score > cands[b].score
			}
			return cands[a].i < cands[b].i
		})
		return cands[:min(depth, len(cands))], nil
	}
}

func (ix *Index) topN(ctx context.Context, bq bluge.Query, n int) ([]candidate, error) {
	it, err := ix.reader.Search(ctx, bluge.NewTopNSearch(n, bq))
	if err != nil {
		return nil, err
	}
	cands := make([]candidate, 0, n)
	for {
		m, err := it.Next()
		if err != nil {
			return nil, err
		}
		if m == nil {
			return cands, nil
		}
		i, err := ix.docIndex(m)
		if err != nil {
			return nil, err
		}
		cands = append(cands, candidate{i: i, score: m.Score})
	}
}

type candidate struct {
	i     int
	score float64
}

// rerank adds the server-domain prior and the query's coverage to bluge's
// scores and sorts.
func (ix *Index) rerank(cands []candidate, qts []queryTerm, docs []float64, best float64) {
	top := cands[0].score
	if ix.opts.serverPrior > 0 {
		if best > 0 {
			for k := range cands {
				if sid := ix.serverOf[cands[k].i]; sid >= 0 {
					cands[k].score += ix.opts.serverPrior * top * docs[sid] / best
				}
			}
		}
	}
	if ix.opts.domainWeight > 0 {
		dom := map[int32]float64{}
		var best float64
		for _, c := range cands {
			sid := ix.serverOf[c.i]
			if sid < 0 {
				continue
			}
			if _, ok := dom[sid]; ok {
				continue
			}
			var d float64
			for _, qt := range qts {
				if n := ix.serverCount(qt.term, sid); n > 0 {
					d += qt.weight * ix.idf(ix.df[qt.term]) * float64(n) / float64(ix.serverSize[sid])
				}
			}
			dom[sid] = d
			best = max(best, d)
		}
		if best > 0 {
			for k := range cands {
				if sid := ix.serverOf[cands[k].i]; sid >= 0 {
					cands[k].score += ix.opts.domainWeight * top * dom[sid] / best
				}
			}
		}
	}
	if ix.opts.coverWeight > 0 || ix.opts.headWeight > 0 {
		for k := range cands {
			i := cands[k].i
			if ix.opts.coverWeight > 0 {
				cands[k].score += ix.opts.coverWeight * top * ix.coverage(i, qts)
			}
			if ix.opts.headWeight > 0 {
				cands[k].score += ix.opts.headWeight * top * ix.share(ix.heads[i], ix.sigs[i], qts)
			}
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].score > cands[b].score })
}

func (ix *Index) docIndex(m *search.DocumentMatch) (int, error) {
	idx := -1
	err := m.VisitStoredFields(func(field string, value []byte) bool {
		if field == fieldID {
			idx, _ = strconv.Atoi(string(value))
			return false
		}
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("read hit: %w", err)
	}
	if idx < 0 || idx >= len(ix.entries) {
		return 0, fmt.Errorf("read hit: bad document id %d", idx)
	}
	return idx, nil
}

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

func (ix *Index) blugeQuery(qts []queryTerm, kinds []Kind, server string) bluge.Query {
	bq := bluge.NewBooleanQuery()
	inQuery := map[string]bool{}
	for _, qt := range qts {
		inQuery[qt.term] = true
	}
	add := func(term string, weight float64) {
		if ix.df[term] > 0 {
			bq.AddShould(bluge.NewTermQuery(term).SetField(fieldAll).SetBoost(weight))
		}
	}
	for _, qt := range qts {
		add(qt.term, qt.weight)
		if ix.opts.serverBoost > 0 && float64(ix.nameDF[qt.term]) >= ix.opts.serverShare*float64(ix.df[qt.term]) && ix.df[qt.term] > 0 {
			bq.AddShould(bluge.NewTermQuery(qt.term).SetField(fieldServer).SetBoost(qt.weight * ix.opts.serverBoost))
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
	if len(kinds) > 0 {
		kq := bluge.NewBooleanQuery()
		for _, k := range kinds {
			kq.AddShould(bluge.NewTermQuery(string(k)).SetField(fieldKind).SetBoost(0))
		}
		bq.AddMust(kq)
		bq.SetMinShould(1)
	}
	if server != "" {
		bq.AddMust(bluge.NewTermQuery(server).SetField(fieldSrvKey).SetBoost(0))
		bq.SetMinShould(1)
	}
	return bq
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

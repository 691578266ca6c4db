package index

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
	// The names an answer offers past its hits (near).
	nearBytes        int     // their tool parts and server names in at most this many bytes, unless Query.Room says
	nearServers      int     // the entries of this many best servers are scored by their server
	nearServerWeight float64 // ... at this much of their server's share of the best server's score
	nearBase         float64 // ... times this plus the query's share in them
	moreHeadWeight   float64 // ... plus this much its share in their name, title and lead
	alsoDepth        int     // candidates past the reranked ones, by score alone, also scored

	// Measured and left off (0), kept so TestEvalVariants can show why.
	serverPrior       float64 // the server's document score added to its entries', as a share of the best bluge score
	joinWeight        float64 // two query words that are one catalog word written apart: the joined term's weight
	splitWeight       float64 // a query word the catalog lacks that is two catalog words: their weight
	serverRankWeight  float64 // the best servers' rank (document and best candidate) added to their candidates
	serverRankServers int     // ... of this many servers
	feedbackDocs      int     // pseudo-relevance feedback: from this many top candidates
	feedbackTerms     int     // ... add this many of their name/title/lead terms
	feedbackWeight    float64 // ... at this weight

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
		describeThings:   true,
		thingWeight:      0.7,
		serverBoost:      5,
		serverShare:      0.5,
		relatedWeight:    0.3,
		relatedMaxShare:  0.05,
		typoWeight:       0.8,
		rerankDepth:      20,
		domainWeight:     0.2,
		coverWeight:      0.2,
		headWeight:       0.2,
		weakCoverage:     0.3,
		serverOwnWeight:  3,
		serverDocWeight:  0.5,
		nearBytes:        2000,
		nearServers:      4,
		nearServerWeight: 0.5,
		nearBase:         0.5,
		alsoDepth:        30,
	}
}

// Index is an immutable search index over entries, safe for concurrent

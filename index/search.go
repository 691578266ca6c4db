package index

import (
	"context"
	"slices"
	"sort"
	"strings"
)

// Query is one search.
type Query struct {
	Text   string
	Kinds  []Kind // empty = any kind
	Server string // only this server's entries; "" = every server's
	Limit  int    // <=0 means 5; capped at 10
	// Room says how many bytes an answer has left for names past the
	// hits, once it holds these hits: the caller's answer is budgeted as a
	// whole, and Search fills what is left by score. nil: a default room.
	Room func(hits []Hit) int
}

// Hit is one found entry.
type Hit struct {
	Entry Entry
	Score float64
}

// Result is a search's answer.
type Result struct {
	Hits []Hit
	// Servers hold the names an answer offers past Hits, grouped by
	// server: the likeliest entries not in Hits, chosen by one score
	// within a byte budget (near), so that a model that knows "squash a
	// PR" is a merge can ask for the right tool by name. The groups are
	// in the order of their best name. A query with no words and a Server
	// gives that server's every entry here, and no hits.
	Servers []ServerHit
	// Weak is true when nothing matched well (the best hit is a poor match):
	// the answer must say so plainly.
	Weak bool
	// NoServer is true when Query.Server names no server of the catalog.
	NoServer bool
}

// ServerHit is a server's entries an answer offers past its hits.
type ServerHit struct {
	Name  string   // the server key
	Score float64  // how well the server matches the query (0: not ranked)
	More  []string // exposed names of its entries offered, best first
	Rest  int      // how many of its entries not in Hits More leaves out
}

const (
	defaultLimit = 5
	maxLimit     = 10
)

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

	if strings.TrimSpace(q.Text) == "" && only >= 0 {
		return ix.listing(only, q.Kinds), nil
	}
	exact := ix.exactNames(q, only)
	qts := ix.queryTerms(q.Text)
	if len(qts) == 0 && len(exact) == 0 {
		return Result{Weak: true}, nil
	}
	var cands, tail []candidate
	if len(qts) > 0 {
		depth := max(limit, ix.opts.rerankDepth)
		cands = ix.candidates(ix.clauses(qts), q.Kinds, only, depth+ix.opts.alsoDepth)
		// Past the reranked candidates, the next by score alone: names
		// for Also, which rank nothing.
		cands, tail = cands[:min(depth, len(cands))], cands[min(depth, len(cands)):]
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
				if more := ix.candidates(ix.clauses(fq), q.Kinds, only, max(limit, ix.opts.rerankDepth)); len(more) > 0 {
					ix.rerank(more, qts, docs, docTop)
					cands = more
				}
			}
		}
		if ix.opts.serverRankWeight > 0 {
			ix.serverRankPrior(cands, docs, docTop, q.Kinds, only)
		}
		res.Weak = ix.coverage(cands[0].i, qts) < ix.opts.weakCoverage
	}
	if len(exact) > 0 {
		// A tool's exact name is a request for that tool: it comes first,
		// however its description scores.
		isExact := func(c candidate) bool { return slices.Contains(exact, c.i) }
		cands, tail = slices.DeleteFunc(cands, isExact), slices.DeleteFunc(tail, isExact)
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
	ranked := ix.rankServers(docs, docTop, cands, q.Kinds, only)
	room := ix.opts.nearBytes
	if q.Room != nil {
		room = q.Room(res.Hits)
	}
	res.Servers = ix.near(qts, ranked, slices.Concat(cands[len(shown):], tail), shown, q.Kinds, room)
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

// queryTerms analyzes text and corrects words the catalog does not have.

// serverRankPrior adds to each candidate of the serverRankServers best
// servers (ranked by their documents and their best candidates together)
// that server's share of the best server's score, times serverRankWeight
// times the best candidate's score, and sorts again: servers first, then
// tools within them. Measured and left off (TestEvalVariants "rank").
func (ix *Index) serverRankPrior(cands []candidate, docs []float64, docTop float64, kinds []Kind, only int32) {
	ranked := ix.rankServers(docs, docTop, cands, kinds, only)
	if len(ranked) == 0 || ranked[0].score <= 0 {
		return
	}
	boost := map[int32]float64{}
	for _, r := range ranked[:min(ix.opts.serverRankServers, len(ranked))] {
		boost[r.sid] = r.score / ranked[0].score
	}
	top := cands[0].score
	for k := range cands {
		if b, ok := boost[ix.serverOf[cands[k].i]]; ok {
			cands[k].score += ix.opts.serverRankWeight * top * b
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].score > cands[b].score })
}

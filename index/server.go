package index

import (
	"math"
	"slices"
	"sort"
	"strings"
)

// Servers are ranked as well as entries. A server's document is the text
// of all its entries — a term counts once per entry that has it — and the
// server's own words: its key and keywords, its title, its instructions
// and the names of its prompts and resources. Where the right tool is
// missed, its server is usually found (a chat request lands on slack even
// when no single slack tool says "ping the team"), so an answer names the
// other tools of the best few servers, and the model, which knows
// what "squash a PR" means, can ask for the right one by name.

// serverDocs are the servers' documents, by server id.
type serverDocs struct {
	names   []string                 // id -> key
	ids     map[string]int32         // key -> id
	own     map[string]map[int32]int // term -> id -> occurrences in the server's own text
	length  []float64                // id -> document length (entries' distinct terms + own terms)
	avgLen  float64                  //
	sdf     map[string]int           // term -> servers whose document has it
	entries [][]int                  // id -> its entries, in catalog order
}

// serverText is the text a server says about itself, read from the first
// of its entries that carries it.
func serverText(e Entry) string {
	var sb strings.Builder
	sb.WriteString(e.ServerTitle)
	for _, x := range e.ServerExtras {
		sb.WriteByte(' ')
		sb.WriteString(x)
	}
	sb.WriteByte(' ')
	sb.WriteString(clip(e.ServerInstructions, maxInstructionBytes))
	return sb.String()
}

// maxInstructionBytes bounds what of a server's instructions is indexed:
// past it they are rules of use, not what the server is for.
const maxInstructionBytes = 2000

// buildServerDocs makes the servers' documents once the entries are
// analyzed; serverDF must be complete.
func (ix *Index) buildServerDocs(ids map[string]int32) {
	sd := &serverDocs{
		names:   make([]string, len(ix.serverSize)),
		ids:     ids,
		own:     map[string]map[int32]int{},
		length:  make([]float64, len(ix.serverSize)),
		sdf:     map[string]int{},
		entries: make([][]int, len(ix.serverSize)),
	}
	for key, id := range ids {
		sd.names[id] = key
	}
	done := make([]bool, len(ix.serverSize))
	a := &analyzer{vocab: ix.opts.vocab}
	for i, e := range ix.entries {
		sid := ix.serverOf[i]
		if sid < 0 {
			continue
		}
		sd.entries[sid] = append(sd.entries[sid], i)
		if done[sid] {
			continue
		}
		text := serverText(e)
		if strings.TrimSpace(text) == "" {
			continue
		}
		done[sid] = true
		for _, t := range a.terms(text) {
			m := sd.own[t]
			if m == nil {
				m = map[int32]int{}
				sd.own[t] = m
			}
			m[sid]++
			sd.length[sid] += ix.opts.serverOwnWeight
		}
	}
	for t, cs := range ix.serverDF {
		for _, c := range cs {
			sd.length[c.sid] += float64(c.n)
		}
		sd.sdf[t] = len(cs)
	}
	for t, m := range sd.own {
		for sid := range m {
			if ix.serverCount(t, sid) == 0 {
				sd.sdf[t]++
			}
		}
	}
	var total float64
	for _, l := range sd.length {
		total += l
	}
	if len(sd.length) > 0 {
		sd.avgLen = total / float64(len(sd.length))
	}
	ix.servers = sd
}

// serverScores scores every server whose document has a query term: BM25
// over the servers' documents, an entry having the term counting one and
// the server's own text serverOwnWeight per occurrence. It returns the
// scores by server id (nil without servers) and the best of them.
func (ix *Index) serverScores(qts []queryTerm) ([]float64, float64) {
	sd := ix.servers
	if sd == nil || len(sd.names) == 0 {
		return nil, 0
	}
	const k1, b = 1.2, 0.75
	n := float64(len(sd.names))
	out := make([]float64, len(sd.names))
	tf := make([]float64, len(sd.names))
	var touched []int32
	for _, qt := range qts {
		df := float64(sd.sdf[qt.term])
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		touched = touched[:0]
		for _, c := range ix.serverDF[qt.term] {
			tf[c.sid] += float64(c.n)
			touched = append(touched, c.sid)
		}
		for sid, c := range sd.own[qt.term] {
			if tf[sid] == 0 {
				touched = append(touched, sid)
			}
			tf[sid] += ix.opts.serverOwnWeight * float64(c)
		}
		for _, sid := range touched {
			f := tf[sid]
			tf[sid] = 0
			norm := k1 * (1 - b + b*sd.length[sid]/sd.avgLen)
			out[sid] += qt.weight * idf * f * (k1 + 1) / (f + norm)
		}
	}
	var best float64
	for _, s := range out {
		best = max(best, s)
	}
	return out, best
}

// rankServers ranks the servers for a query: by their documents' score,
// plus the best of their entries' scores among the ranked candidates, both
// as shares of the best. Only servers with an entry of kinds, and only
// server only when it is not negative.
func (ix *Index) rankServers(docs []float64, docTop float64, cands []candidate, kinds []Kind, only int32) []scoredServer {
	best := map[int32]float64{}
	var top float64
	for _, c := range cands {
		sid := ix.serverOf[c.i]
		if sid < 0 {
			continue
		}
		if c.score > best[sid] {
			best[sid] = c.score
		}
		top = max(top, c.score)
	}
	var ranked []scoredServer
	seen := map[int32]bool{}
	consider := func(sid int32) {
		if seen[sid] || (only >= 0 && sid != only) {
			return
		}
		seen[sid] = true
		if len(kinds) > 0 && !slices.ContainsFunc(ix.servers.entries[sid], func(i int) bool { return kindOK(ix.entries[i].Kind, kinds) }) {
			return // none of its entries is of the kinds searched
		}
		var s float64
		if docTop > 0 {
			s += ix.opts.serverDocWeight * docs[sid] / docTop
		}
		if top > 0 {
			s += best[sid] / top
		}
		ranked = append(ranked, scoredServer{sid, s})
	}
	for sid, s := range docs {
		if s > 0 {
			consider(int32(sid))
		}
	}
	for sid := range best {
		consider(sid)
	}
	sort.Slice(ranked, func(a, b int) bool {
		if ranked[a].score != ranked[b].score {
			return ranked[a].score > ranked[b].score
		}
		return ranked[a].sid < ranked[b].sid
	})
	return ranked
}

type scoredServer struct {
	sid   int32
	score float64
}

// near picks the names an answer offers past its hits, each because it is
// likely, not because it shares a server with one: every entry not shown
// gets one score, and the best fill room bytes (their tool parts, and
// each server's name once, as an answer groups them). A ranked
// candidate scores its share of the best candidate's score; an entry of
// one of the nearServers best servers scores that server's share of the
// best server's score, times nearServerWeight, times how much of the query
// it has (nearBase, plus its coverage, plus moreHeadWeight times the share
// in its name, title and lead). The higher of the two counts. The groups
// come out in the order of their best name, each name best first.
func (ix *Index) near(qts []queryTerm, ranked []scoredServer, rest []candidate, shown []int, kinds []Kind, room int) []ServerHit {
	score := map[int]float64{}
	var top float64
	for _, c := range rest {
		top = max(top, c.score)
	}
	for _, c := range rest {
		if top > 0 && !slices.Contains(shown, c.i) {
			score[c.i] = c.score / top
		}
	}
	if len(ranked) > 0 && ranked[0].score > 0 {
		for _, r := range ranked[:min(ix.opts.nearServers, len(ranked))] {
			w := ix.opts.nearServerWeight * r.score / ranked[0].score
			if w <= 0 {
				continue
			}
			for _, i := range ix.servers.entries[r.sid] {
				if slices.Contains(shown, i) || !kindOK(ix.entries[i].Kind, kinds) {
					continue
				}
				s := ix.opts.nearBase + ix.coverage(i, qts)
				if ix.opts.moreHeadWeight > 0 {
					s += ix.opts.moreHeadWeight * ix.share(ix.heads[i], ix.sigs[i], qts)
				}
				score[i] = max(score[i], w*s)
			}
		}
	}
	pool := make([]int, 0, len(score))
	for i := range score {
		pool = append(pool, i)
	}
	sort.Slice(pool, func(a, b int) bool {
		if score[pool[a]] != score[pool[b]] {
			return score[pool[a]] > score[pool[b]]
		}
		return pool[a] < pool[b]
	})
	var out []ServerHit
	group := map[int32]int{} // server id -> its place in out
	srvScore := map[int32]float64{}
	for _, r := range ranked {
		srvScore[r.sid] = r.score
	}
	size := 0
	for _, i := range pool {
		sid := ix.serverOf[i]
		if sid < 0 {
			continue // quiver's own tools and skills are hits or nothing
		}
		cost := len(toolPart(ix.entries[i])) + 2
		g, ok := group[sid]
		if !ok {
			cost += len(ix.servers.names[sid]) + 2
		}
		if size+cost > room {
			break
		}
		size += cost
		if !ok {
			g = len(out)
			group[sid] = g
			out = append(out, ServerHit{Name: ix.servers.names[sid], Score: srvScore[sid]})
		}
		out[g].More = append(out[g].More, ix.entries[i].Name)
	}
	for k := range out {
		sid := ix.servers.ids[out[k].Name]
		n := 0
		for _, i := range ix.servers.entries[sid] {
			if !slices.Contains(shown, i) && kindOK(ix.entries[i].Kind, kinds) {
				n++
			}
		}
		out[k].Rest = n - len(out[k].More)
	}
	return out
}

// listing is server only's entries of kinds, in catalog order: what an
// answer lists when asked for a server's tools without a query.
func (ix *Index) listing(only int32, kinds []Kind) Result {
	h := ServerHit{Name: ix.servers.names[only]}
	for _, i := range ix.servers.entries[only] {
		if kindOK(ix.entries[i].Kind, kinds) {
			h.More = append(h.More, ix.entries[i].Name)
		}
	}
	return Result{Servers: []ServerHit{h}}
}

func kindOK(k Kind, kinds []Kind) bool {
	return len(kinds) == 0 || slices.Contains(kinds, k)
}

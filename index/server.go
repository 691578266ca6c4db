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

// An answer lists at most maxMore names of one server, and no more than
// fit in maxMoreBytes (their tool parts, comma separated; the best
// server's in options.firstMoreBytes): a server's whole tool list when it
// is small, its nearest tools when it is big.
const (
	maxMore      = 100
	maxMoreBytes = 700
)

// rankServers picks the servers an answer names: by their documents' score
// for the query, plus the best of their entries' scores among the ranked
// candidates, both as shares of the best. Each gets up to maxMore of its
// other entries (not in shown), those that share most of the query first.
func (ix *Index) rankServers(qts []queryTerm, docs []float64, docTop float64, cands []candidate, shown []int, kinds []Kind, only int32) []ServerHit {
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
	type scored struct {
		sid   int32
		score float64
	}
	var ranked []scored
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
		ranked = append(ranked, scored{sid, s})
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
	candScore := map[int]float64{}
	for _, c := range cands {
		candScore[c.i] = c.score
	}
	var out []ServerHit
	for k, r := range ranked[:min(ix.opts.moreServers, len(ranked))] {
		budget := ix.opts.maxMoreBytes
		if k == 0 && ix.opts.firstMoreBytes > 0 {
			budget = ix.opts.firstMoreBytes
		}
		type more struct {
			i     int
			score float64
		}
		var ms []more
		for _, i := range ix.servers.entries[r.sid] {
			if slices.Contains(shown, i) || !kindOK(ix.entries[i].Kind, kinds) {
				continue
			}
			// Candidates keep their rank; the rest follow by how much of
			// the query they share.
			s := ix.coverage(i, qts)
			if ix.opts.moreHeadWeight > 0 {
				s += ix.opts.moreHeadWeight * ix.share(ix.heads[i], ix.sigs[i], qts)
			}
			if cs, ok := candScore[i]; ok && top > 0 {
				s = 1 + ix.opts.moreHeadWeight + cs/top // above any share
			}
			ms = append(ms, more{i, s})
		}
		sort.SliceStable(ms, func(a, b int) bool { return ms[a].score > ms[b].score })
		h := ServerHit{Name: ix.servers.names[r.sid], Score: r.score}
		size := 0
		for _, m := range ms[:min(ix.opts.maxMore, len(ms))] {
			size += len(toolPart(ix.entries[m.i])) + 2
			if size > budget {
				break
			}
			h.More = append(h.More, ix.entries[m.i].Name)
		}
		h.Rest = len(ms) - len(h.More)
		out = append(out, h)
	}
	return out
}

func kindOK(k Kind, kinds []Kind) bool {
	return len(kinds) == 0 || slices.Contains(kinds, k)
}

// also names the candidates past the hits that the servers' lists leave
// out, best first, within maxAlso names and maxAlsoBytes.
func (ix *Index) also(rest []candidate, listed []ServerHit) []string {
	var out []string
	size := 0
	for _, c := range rest {
		if len(out) >= ix.opts.maxAlso {
			break
		}
		name := ix.entries[c.i].Name
		if slices.ContainsFunc(listed, func(s ServerHit) bool { return slices.Contains(s.More, name) }) {
			continue
		}
		size += len(name) + 2
		if size > ix.opts.maxAlsoBytes {
			break
		}
		out = append(out, name)
	}
	return out
}

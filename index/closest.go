package index

import (
	"sort"
	"strings"

	"github.com/quiver-mcp/quiver/internal/textdist"
)

// nameForms are the shapes of an exposed name that a misremembered name is
// compared with.
type nameForms struct {
	full   string   // "github__create_issue"
	tool   string   // "create_issue"
	tokens []string // "github", "create", "issue"
}

func newNameForms(name string) nameForms {
	full := strings.ToLower(name)
	tool := full
	if _, rest, ok := strings.Cut(full, "__"); ok {
		tool = rest
	}
	return nameForms{full: full, tool: tool, tokens: splitWords(name, nil)}
}

// Closest returns up to n exposed names nearest to text by edit distance on
// whole names and name tokens (for "no hit" answers). Kinds filters as in
// Query; ties go to the shorter, then alphabetically first name.
func (ix *Index) Closest(text string, n int, kinds ...Kind) []string {
	if n <= 0 || len(ix.entries) == 0 {
		return nil
	}
	t := strings.ToLower(strings.TrimSpace(text))
	qTokens := splitWords(text, nil)
	type scored struct {
		i    int
		dist float64
	}
	cands := make([]scored, 0, len(ix.entries))
	for i, e := range ix.entries {
		if !kindOK(e.Kind, kinds) {
			continue
		}
		nf := ix.names[i]
		d := float64(min(textdist.Levenshtein(t, nf.full), textdist.Levenshtein(t, nf.tool)))
		if td := tokenDistance(qTokens, nf.tokens); td < d {
			d = td
		}
		cands = append(cands, scored{i, d})
	}
	sort.Slice(cands, func(a, b int) bool {
		ca, cb := cands[a], cands[b]
		if ca.dist != cb.dist {
			return ca.dist < cb.dist
		}
		na, nb := ix.entries[ca.i].Name, ix.entries[cb.i].Name
		if len(na) != len(nb) {
			return len(na) < len(nb)
		}
		return na < nb
	})
	out := make([]string, 0, min(n, len(cands)))
	for _, c := range cands[:min(n, len(cands))] {
		out = append(out, ix.entries[c.i].Name)
	}
	return out
}

// tokenDistance matches each query token to its nearest name token and sums
// the edits, plus one for each name token left unmatched (half weight: a name
// may carry words the user did not remember). Word order does not matter:
// "issue_create" is close to "create_issue".
func tokenDistance(q, name []string) float64 {
	if len(q) == 0 {
		return 1e9
	}
	used := make([]bool, len(name))
	var sum float64
	for _, qt := range q {
		best, bestJ := len(qt), -1
		for j, nt := range name {
			if d := textdist.Levenshtein(qt, nt); d < best || (d == best && bestJ >= 0 && used[bestJ] && !used[j]) {
				best, bestJ = d, j
			}
		}
		if bestJ >= 0 {
			used[bestJ] = true
		}
		sum += float64(best)
	}
	for _, u := range used {
		if !u {
			sum += 0.5
		}
	}
	return sum
}

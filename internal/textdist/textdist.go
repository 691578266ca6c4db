// Package textdist measures how far apart two strings are, for the
// "did you mean" and "closest names" answers quiver gives when a name is
// wrong, and for the search index's typo correction. It is shared by
// packages that must not import each other.
package textdist

// Levenshtein is the edit distance between a and b, counted in runes:
// insertions, deletions and substitutions cost one each.
func Levenshtein(a, b string) int { return distance(a, b, false) }

// OSA is the optimal string alignment distance between a and b, counted in
// runes: Levenshtein's edits plus swapping two neighbours ("form" for
// "from"), each costing one, and no substring edited twice. It is the
// measure of typing mistakes.
func OSA(a, b string) int { return distance(a, b, true) }

func distance(a, b string, swaps bool) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1) // the row before prev, for swaps
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if swaps && i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

package builtin

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/gate"
)

// maxRepeats is how many times one search may be repeated in a turn and
// get a gentle refusal; the next repeat (the fourth) is told to stop.
const maxRepeats = 3

// A LastSearch is what the loop guard remembers of a session's most recent
// search: the turn, the query's words, how often it was repeated and what
// it bound.
type LastSearch struct {
	Turn    int
	Key     string
	Repeats int
	Bound   []string
}

// A SearchMemory keeps one session's last search for the loop guard.
type SearchMemory interface {
	// Recall calls f with the session's current turn and its last search,
	// which f may change; calls for one session are serialized.
	Recall(f func(turn int, last *LastSearch))
}

// searchKey is the query's set of words, lower case, sorted, so that the
// same words in any order or case are the same search; a different kind
// is a different search.
func searchKey(query, kind string) string {
	words := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	slices.Sort(words)
	words = slices.Compact(words)
	if kind == "" {
		kind = "any"
	}
	return kind + ":" + strings.Join(words, " ")
}

// guard refuses the search if it repeats the session's last search in the
// same turn; nil lets it run.
func (st SearchTool) guard(key, query string) *mcp.CallToolResult {
	if st.Memory == nil {
		return nil
	}
	var repeats int
	var bound []string
	st.Memory.Recall(func(turn int, last *LastSearch) {
		if last.Turn == turn && last.Key == key {
			last.Repeats++
			repeats, bound = last.Repeats, slices.Clone(last.Bound)
			return
		}
		*last = LastSearch{Turn: turn, Key: key}
	})
	switch {
	case repeats == 0:
		return nil
	case repeats > maxRepeats:
		return Refusal(gate.CodeSearchLoop, fmt.Sprintf(
			"You have searched for %q %d times this turn. Stop searching; tell the user what you were trying to do and that the tools found did not get you there.",
			query, repeats+1))
	case len(bound) == 0:
		return Refusal(gate.CodeRepeatedSearch, fmt.Sprintf(
			"You already searched for %q this turn and it bound nothing; searching again gives the same answer. Try other words, or tell the user no connected tool fits.", query))
	default:
		return Refusal(gate.CodeRepeatedSearch, fmt.Sprintf(
			"You already searched for %q this turn; its tools are bound: %s. Call one of them (directly or with call_tool) instead of searching again.",
			query, strings.Join(bound, ", ")))
	}
}

// remember records what the search bound, for the guard's refusals.
func (st SearchTool) remember(key string, bound []string) {
	if st.Memory == nil {
		return
	}
	st.Memory.Recall(func(turn int, last *LastSearch) {
		if last.Turn == turn && last.Key == key {
			last.Bound = slices.Clone(bound)
		}
	})
}

// forget clears the memory of the last search, so that the same search
// again is a new one.
func (st SearchTool) forget() {
	if st.Memory == nil {
		return
	}
	st.Memory.Recall(func(_ int, last *LastSearch) { *last = LastSearch{} })
}

package index

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// rankingsFile holds what Search ranked for every query of the three sets
// on the catalog (and the dev queries on the 10,000-entry catalog, built in
// chunks), as the index answered when its scores came from bluge's
// segments (main at c36c906, `go test ./index -run TestRankingsUnchanged
// -update-rankings`): the proof that a change to how scores are computed
// moves no ranking. Each line: the catalog,
// the query's filter, the query, then each hit as entry number:score.
const rankingsFile = "testdata/rankings.txt"

var updateRankings = flag.Bool("update-rankings", false, "rewrite "+rankingsFile+" from this tree (only when a ranking change is meant)")

// rankingLines is every ranking the file holds, computed by this tree.
func rankingLines(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	rank := func(catalog string, ix *Index, q Query) {
		res, err := ix.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		pos := map[string]int{}
		for i, e := range ix.entries {
			pos[e.Name] = i
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "%s\t%s/%v\t%s\t%v\t", catalog, q.Server, q.Kinds, q.Text, res.Weak)
		for _, h := range res.Hits {
			fmt.Fprintf(&sb, " %d:%s", pos[h.Entry.Name], strconv.FormatFloat(h.Score, 'g', -1, 64))
		}
		lines = append(lines, sb.String())
	}
	ix, err := Build(testCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for _, s := range loadSets(t) {
		for _, q := range s.qs {
			rank("catalog", ix, Query{Text: q.Query, Limit: maxLimit})
			if s.name != "dev" {
				continue
			}
			srv, _, _ := strings.Cut(q.Primary, "__")
			rank("catalog", ix, Query{Text: q.Query, Limit: maxLimit, Server: srv})
			rank("catalog", ix, Query{Text: q.Query, Limit: maxLimit, Kinds: []Kind{KindMCP}})
		}
	}
	big, err := Build(syntheticCatalog(t, 10000))
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	qs, err := readQueries(devFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		rank("10k", big, Query{Text: q.Query, Limit: maxLimit})
	}
	return lines
}

// TestRankingsUnchanged: every hit, in order, with its score to the last
// bit, is what it was when bluge scored the index.
func TestRankingsUnchanged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10,000-entry catalog")
	}
	got := rankingLines(t)
	if *updateRankings {
		if err := os.WriteFile(rankingsFile, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(rankingsFile)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(want) != len(got) {
		t.Fatalf("%d rankings, %s has %d", len(got), rankingsFile, len(want))
	}
	bad := 0
	for i := range got {
		if got[i] != want[i] {
			bad++
			if bad <= 5 {
				t.Errorf("ranking moved:\n got %s\nwant %s", got[i], want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d rankings moved", bad, len(got))
	}
}

package index

import (
	"context"
	"os"
	"strings"
	"testing"
)

func TestDebugQuery(t *testing.T) {
	qtext := os.Getenv("Q")
	if qtext == "" {
		t.Skip()
	}
	ix, err := Build(testCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, qt := range ix.queryTerms(qtext) {
		t.Logf("term %q w=%.2f typo=%v df=%d related=%v", qt.term, qt.weight, qt.typo, ix.df[qt.term], vocab.related[qt.term])
	}
	res, _ := ix.Search(context.Background(), Query{Text: qtext, Limit: 10})
	for _, h := range res.Hits {
		t.Logf("%.3f %s", h.Score, h.Entry.Name)
	}
	if w := os.Getenv("W"); w != "" {
		for i, e := range ix.entries {
			if e.Name == w {
				t.Logf("%s terms=%v\ndesc=%s", w, ix.terms[i], e.Description)
				var all []string
				for _, f := range textFields {
					all = append(all, f+":"+strings.Join((&analyzer{}).terms(fieldText(e, f)), " "))
				}
				t.Logf("%s", strings.Join(all, "\n"))
			}
		}
	}
}

package index

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"
	"testing"
)

// The catalog in testdata is the tools/list answers of 62 real MCP servers
// (see /work/shared/catalog/README.md where it came from).
type catalogFile struct {
	Servers []struct {
		Name  string `json:"name"`
		Tools []struct {
			Name        string          `json:"name"`
			Title       string          `json:"title"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Annotations struct {
				Title        string `json:"title"`
				ReadOnlyHint bool   `json:"readOnlyHint"`
			} `json:"annotations"`
		} `json:"tools"`
	} `json:"servers"`
}

type evalQuery struct {
	ID       string   `json:"id"`
	Query    string   `json:"query"`
	Relevant []string `json:"relevant"`
	Primary  string   `json:"primary"`
	Style    string   `json:"style"`
}

var (
	catalogOnce    sync.Once
	catalogEntries []Entry
	catalogErr     error
)

// testCatalog loads testdata/catalog.json as quiver would expose it: name
// "<server>__<tool>", the server name as the only keyword. Loaded once per
// test binary; callers must not modify the slice.
func testCatalog(tb testing.TB) []Entry {
	tb.Helper()
	catalogOnce.Do(func() {
		data, err := os.ReadFile("testdata/catalog.json")
		if err != nil {
			catalogErr = err
			return
		}
		var cf catalogFile
		if err := json.Unmarshal(data, &cf); err != nil {
			catalogErr = err
			return
		}
		for _, s := range cf.Servers {
			for _, t := range s.Tools {
				title := t.Title
				if title == "" {
					title = t.Annotations.Title
				}
				catalogEntries = append(catalogEntries, Entry{
					Name:        s.Name + "__" + t.Name,
					Kind:        KindMCP,
					Server:      s.Name,
					Title:       title,
					Description: t.Description,
					Keywords:    []string{s.Name},
					Params:      ParamsFromSchema(t.InputSchema),
					ReadOnly:    t.Annotations.ReadOnlyHint,
				})
			}
		}
	})
	if catalogErr != nil {
		tb.Fatalf("load catalog: %v", catalogErr)
	}
	return catalogEntries
}

// testQueries are the development queries, the ones ranking is tuned on.
func testQueries(tb testing.TB) []evalQuery {
	tb.Helper()
	return loadQueries(tb, "testdata/queries-dev.jsonl")
}

func loadQueries(tb testing.TB, file string) []evalQuery {
	tb.Helper()
	f, err := os.Open(file)
	if err != nil {
		tb.Fatalf("open queries: %v", err)
	}
	defer f.Close()
	var qs []evalQuery
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var q evalQuery
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			tb.Fatalf("parse query %q: %v", sc.Text(), err)
		}
		qs = append(qs, q)
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("read queries: %v", err)
	}
	return qs
}

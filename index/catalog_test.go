package index

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
)

// The catalog in testdata is the tools/list answers of 62 real MCP servers
// (see /work/shared/catalog/README.md where it came from).
type catalogFile struct {
	Servers []struct {
		Name       string `json:"name"`
		ServerInfo struct {
			Name  string `json:"name"`
			Title string `json:"title"`
		} `json:"serverInfo"`
		Instructions string `json:"instructions"`
		Tools        []struct {
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
// "<server>__<tool>", the server name as the only keyword, the server's
// title (or name) and instructions from its initialize answer. The catalog
// has no prompts or resources lists. Loaded once per
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
			srvTitle := s.ServerInfo.Title
			if srvTitle == "" {
				srvTitle = s.ServerInfo.Name
			}
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

					ServerTitle:        srvTitle,
					ServerInstructions: s.Instructions,
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
	qs, err := readQueries(file)
	if err != nil {
		tb.Fatal(err)
	}
	return qs
}

// readQueries reads a JSON-lines query set; a missing file's error wraps
// fs.ErrNotExist.
func readQueries(file string) ([]evalQuery, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("open queries: %w", err)
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
			return nil, fmt.Errorf("parse query %q: %w", sc.Text(), err)
		}
		qs = append(qs, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read queries %s: %w", file, err)
	}
	return qs, nil
}

package proxy

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestSearchDuringRebuilds installs new catalogs (new index, new tool
// registrations) while searches run: with -race this checks that a search
// never sees a half-built index and that the swap needs no lock on the
// search path.
func TestSearchDuringRebuilds(t *testing.T) {
	s, _ := newInProcessServer(t, exampleConfig("surface: {reveal: auto}"), Options{}, nil)
	cat := s.Catalog()
	if len(cat.Tools) == 0 {
		t.Fatal("the example server's tools are not in the catalog")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil && i < 50; i++ {
			s.install(cat)
		}
		cancel()
	})
	errs := make(chan string, 4)
	for range 4 {
		// One session per searcher, each search in a turn of its own: the
		// loop guard refuses the same search twice in one turn.
		c := connectInProcess(t, s)
		wg.Go(func() {
			for turn := 1; ctx.Err() == nil; turn++ {
				req := mcp.CallToolRequest{}
				req.Params.Name = "search_tools"
				req.Params.Arguments = map[string]any{"query": "take a note"}
				req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{TurnMeta: turn}}
				res, err := c.CallTool(context.Background(), req)
				if err != nil || res.IsError {
					errs <- "search failed during a rebuild"
					return
				}
				if got := text(res); !strings.Contains(got, "example__notes_add") {
					errs <- "a search during a rebuild missed a tool: " + got
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

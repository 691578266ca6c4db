package index_test

// The evaluation (eval_test.go, package index) measures the answer
// search_tools really gives: builtin builds it, and builtin imports index,
// so only this external test package can hand builtin's answer to the
// evaluation, through index.AnswerFor.

import (
	"context"
	"encoding/json"
	"os"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/index"
)

func init() {
	index.AnswerFor = func(ix *index.Index, query string) string {
		st := builtin.SearchTool{Index: ix, Binder: bindAll{}, Schemas: catalogSchemas()}
		res := st.Call(context.Background(), mustJSON(map[string]string{"query": query}))
		var text string
		for _, c := range res.Content {
			if tc, ok := c.(mcp.TextContent); ok {
				text += tc.Text
			}
		}
		return text
	}
}

// bindAll binds whatever an answer offers, as a fresh session does.
type bindAll struct{}

func (bindAll) Bind(names []string, _ bool) []string { return names }

// schemas are the catalog's input schemas by exposed name: the proxy's
// default answer (reveal auto) carries the bound tools' schemas.
type schemas map[string]json.RawMessage

func (s schemas) InputSchema(name string) (json.RawMessage, bool) {
	sch, ok := s[name]
	return sch, ok
}

var catalogSchemas = sync.OnceValue(func() schemas {
	data, err := os.ReadFile("testdata/catalog.json")
	if err != nil {
		panic(err)
	}
	var cf struct {
		Servers []struct {
			Name  string `json:"name"`
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(data, &cf); err != nil {
		panic(err)
	}
	out := schemas{}
	for _, s := range cf.Servers {
		for _, t := range s.Tools {
			out[s.Name+"__"+t.Name] = t.InputSchema
		}
	}
	return out
})

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

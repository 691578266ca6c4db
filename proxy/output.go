package proxy

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/registry"
)

// bound makes a downstream result safe to show: known secrets and
// credential shapes are redacted, and a result larger than limit bytes
// (serialized) is cut, with a notice saying how much, and
// _meta["quiver/truncated"] set so hosts can tell.
func bound(res *mcp.CallToolResult, limit int, secrets []registry.Secret) *mcp.CallToolResult {
	redact := func(s string) string { return registry.Redact(s, secrets) }
	for i, c := range res.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			c.Text = redact(c.Text)
			res.Content[i] = c
		case mcp.EmbeddedResource:
			if t, ok := c.Resource.(mcp.TextResourceContents); ok {
				t.Text = redact(t.Text)
				c.Resource = t
				res.Content[i] = c
			}
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			if r := redact(string(b)); r != string(b) {
				var v any
				if json.Unmarshal([]byte(r), &v) == nil {
					res.StructuredContent = v
				}
			}
		}
	}
	if limit <= 0 {
		return res
	}
	total := size(res)
	if total <= limit {
		return res
	}
	// Structured content repeats the text for machines; when the answer is
	// too big it goes first, so the model keeps the readable part.
	res.StructuredContent = nil
	const notice = "\n[quiver: output cut here: %d of %d bytes not shown; ask for less (a narrower query or a range)]"
	res.Content = append(res.Content, mcp.NewTextContent(fmt.Sprintf(notice, total, total)))
	if res.Meta == nil {
		res.Meta = &mcp.Meta{}
	}
	if res.Meta.AdditionalFields == nil {
		res.Meta.AdditionalFields = map[string]any{}
	}
	res.Meta.AdditionalFields["quiver/truncated"] = true
	// JSON escaping makes sizes only estimable, so cut, measure, repeat.
	for pass := 0; pass < 4; pass++ {
		over := size(res) - limit
		if over <= 0 {
			break
		}
		for i := len(res.Content) - 2; i >= 0 && over > 0; i-- {
			switch c := res.Content[i].(type) {
			case mcp.TextContent:
				keep := max(0, len(c.Text)-over)
				for keep > 0 && !utf8.RuneStart(c.Text[keep]) {
					keep--
				}
				over -= len(c.Text) - keep
				c.Text = c.Text[:keep]
				res.Content[i] = c
			default:
				// Images, audio and resources cannot be cut in half.
				over -= size(&mcp.CallToolResult{Content: []mcp.Content{c}})
				res.Content = append(res.Content[:i], res.Content[i+1:]...)
			}
		}
	}
	res.Content[len(res.Content)-1] = mcp.NewTextContent(fmt.Sprintf(notice, total-size(res), total))
	return res
}

func size(res *mcp.CallToolResult) int {
	b, err := json.Marshal(res)
	if err != nil {
		return 0
	}
	return len(b)
}

package toolresult

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestText(t *testing.T) {
	for _, c := range []struct {
		name    string
		content []mcp.Content
		want    string
	}{
		{"none", nil, ""},
		{"one", []mcp.Content{mcp.NewTextContent("a")}, "a"},
		{"each on its line", []mcp.Content{mcp.NewTextContent("a"), mcp.NewTextContent("b")}, "a\nb"},
		{"an image has no text", []mcp.Content{mcp.NewImageContent("AAAA", "image/png"), mcp.NewTextContent("b")}, "b"},
	} {
		if got := Text(&mcp.CallToolResult{Content: c.content}); got != c.want {
			t.Errorf("%s: Text = %q, want %q", c.name, got, c.want)
		}
	}
}

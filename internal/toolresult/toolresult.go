// Package toolresult reads a tool result the way a model reads it. The
// CLI, the operator page and the tests of several packages all need a
// result's text; they share this one reading so that none of them shows
// something other than what the model was given.
package toolresult

import (
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Text is res's text contents, one per line. Other content (images,
// audio, resources) has no text to show and is left out.
func Text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

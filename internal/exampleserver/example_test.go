package exampleserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/internal/exampleserver"
)

// Calling the notes tools through an in-process MCP client.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "notes")
	defer os.RemoveAll(dir)

	s := exampleserver.New(exampleserver.Options{NotesFile: filepath.Join(dir, "notes.json")})
	c, _ := client.NewInProcessClient(s)
	defer c.Close()
	ctx := context.Background()
	_ = c.Start(ctx)
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "example", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		fmt.Println(err)
		return
	}

	for _, step := range []struct{ tool, args string }{
		{"notes_add", `{"title": "Groceries", "body": "eggs, milk, coffee", "tags": ["home"]}`},
		{"notes_search", `{"query": "Coffee"}`},
		{"current_time", `{"timezone": "Atlantis/Lost_City"}`},
	} {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
			Name: step.tool, RawArguments: json.RawMessage(step.args)}})
		if err != nil {
			fmt.Println(err)
			return
		}
		text := res.Content[0].(mcp.TextContent).Text
		if step.tool == "notes_search" {
			text = text[:len("1 note matches \"Coffee\":\nn1")] // the rest holds the creation time
		}
		fmt.Printf("%s (error: %v):\n%s\n", step.tool, res.IsError, text)
	}
	// Output:
	// notes_add (error: false):
	// Saved note n1 "Groceries".
	// notes_search (error: false):
	// 1 note matches "Coffee":
	// n1
	// current_time (error: true):
	// Unknown time zone "Atlantis/Lost_City". Use an IANA time zone name such as "Europe/Paris", "America/New_York" or "UTC". Example arguments: {"timezone": "Europe/Paris"}
}

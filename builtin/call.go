package builtin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/gate"
)

// A Caller runs a tool call through quiver's one dispatch path (gate,
// forward, bound the output), exactly as a direct tools/call would.
type Caller interface {
	CallTool(ctx context.Context, name string, args json.RawMessage) *mcp.CallToolResult
}

// Call runs call_tool: it unwraps {name, arguments} and hands them to c.
// arguments are passed on raw, so a malformed value reaches the gate and
// gets its precise refusal.
func Call(ctx context.Context, c Caller, raw json.RawMessage) *mcp.CallToolResult {
	var args struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := decodeArgs(raw, &args); err != nil {
		return Refusal(gate.CodeArgsShape, fmt.Sprintf(
			`call_tool takes {"name": "server__tool", "arguments": {...}}; %s.`, plain(err)))
	}
	switch args.Name {
	case "":
		return Refusal(gate.CodeArgsShape, `call_tool needs the tool's name: {"name": "server__tool", "arguments": {...}}.`)
	case CallToolName, SearchToolsName:
		return Refusal(gate.CodeArgsShape, fmt.Sprintf("call %s directly, not through call_tool.", args.Name))
	}
	return c.CallTool(ctx, args.Name, args.Arguments)
}

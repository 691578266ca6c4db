package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/gate"
)

// toolName is what an exposed tool name may hold.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// RequestCapabilityTool is the definition of request_capability.
func RequestCapabilityTool() mcp.Tool {
	return tool(RequestCapabilityName,
		"Ask the user for a permission before you need it: reading or changing files outside the allowed folders "+
			"(read_outside_fence, mutate_outside_fence, with a path) or a class of action for one tool "+
			"(destructive, execute, network, admin, with a tool). The user approves or declines; nothing is granted otherwise.",
		`{"type":"object","properties":{`+
			`"capability":{"type":"string","enum":["read_outside_fence","mutate_outside_fence","write","destructive","execute","network","admin"],"description":"What you need."},`+
			`"path":{"type":"string","description":"For read_outside_fence and mutate_outside_fence: the absolute path (it and what is under it)."},`+
			`"tool":{"type":"string","description":"For a class of action: the tool's exact name."},`+
			`"reason":{"type":"string","description":"Why you need it, in one sentence the user will read."}`+
			`},"required":["capability","reason"],"additionalProperties":false}`,
		false)
}

// A CapabilityRequest is request_capability's arguments, checked.
type CapabilityRequest struct {
	Capability string `json:"capability"`
	Path       string `json:"path"`
	Tool       string `json:"tool"`
	Reason     string `json:"reason"`
}

// An Approver files a request with the person and says what came of it.
type Approver interface {
	RequestCapability(ctx context.Context, r CapabilityRequest) *mcp.CallToolResult
}

// RequestCapability checks request_capability's arguments and hands them
// to the approver.
func RequestCapability(ctx context.Context, a Approver, raw json.RawMessage) *mcp.CallToolResult {
	var r CapabilityRequest
	if err := decodeArgs(raw, &r); err != nil {
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf(`request_capability takes {"capability": "...", "path" or "tool": "...", "reason": "..."}; %s.`, plain(err)))
	}
	r.Reason = strings.TrimSpace(r.Reason)
	switch r.Capability {
	case "read_outside_fence", "mutate_outside_fence":
		if !strings.HasPrefix(r.Path, "/") {
			return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("%s needs the absolute path you need, e.g. {\"path\": \"/data/reports\"}.", r.Capability))
		}
	case "write", "destructive", "execute", "network", "admin":
		if r.Tool == "" {
			return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("%s needs the tool's exact name, e.g. {\"tool\": \"github__delete_repo\"}.", r.Capability))
		}
	default:
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("capability %q is not one of read_outside_fence, mutate_outside_fence, write, destructive, execute, network, admin.", r.Capability))
	}
	if r.Reason == "" {
		return Refusal(gate.CodeArgsInvalid, "say why you need it in reason: the user reads it before deciding.")
	}
	// The reason and the tool's name go on a card a person reads: a
	// newline, a bidi override or a line separator could make the card
	// say something quiver did not.
	if err := gate.CheckModelText(r.Reason); err != nil {
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("reason: %v. Write one plain sentence the user will read.", err))
	}
	if r.Tool != "" && !toolName.MatchString(r.Tool) {
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("tool %q is not a tool name; give the exact name search_tools showed (letters, digits, _ and -).", r.Tool))
	}
	if err := gate.CheckModelText(r.Path); r.Path != "" && err != nil {
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("path: %v. Give the plain absolute path.", err))
	}
	return a.RequestCapability(ctx, r)
}

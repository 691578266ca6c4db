package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// A host on 2026-07-28 cannot be sent elicitation/create: before, every
// call that needed approval ended in deny.approval_unavailable. The card
// is now an input request, and the host's retry decides.
func TestModernHostApprovesByInputRequest(t *testing.T) {
	inside, secret := outsideFile(t, "secret.txt")
	yes := true
	read := registry.Tool{Server: "ex", Name: "read", Exposed: "ex__read", Annotations: mcp.ToolAnnotation{ReadOnlyHint: &yes},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
	r := newRig(t, rigServer+fmt.Sprintf(`
fence:
  allowed_dirs: [%q]
`, inside), read)
	c := sessionless(r)
	call := func(extra map[string]any) ([]byte, map[string]any) {
		params := map[string]any{"name": "ex__read", "arguments": map[string]any{"path": secret},
			"_meta": map[string]any{
				mcp.MetaKeyProtocolVersion:    "2026-07-28",
				mcp.MetaKeyClientInfo:         map[string]any{"name": "host", "version": "1"},
				mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
			}}
		for k, v := range extra {
			params[k] = v
		}
		resp := c.rpc("tools/call", params)
		var env struct{ Result map[string]any }
		if err := json.Unmarshal(resp, &env); err != nil || env.Result == nil {
			t.Fatalf("response %s", resp)
		}
		return resp, env.Result
	}
	ask := func() string {
		t.Helper()
		resp, res := call(nil)
		if res["resultType"] != "input_required" {
			t.Fatalf("want an input request, got %s", resp)
		}
		card, _ := res["inputRequests"].(map[string]any)[cardInput].(map[string]any)
		if card["method"] != "elicitation/create" || !strings.Contains(fmt.Sprint(card), secret) {
			t.Fatalf("card: %v", card)
		}
		return res["requestState"].(string)
	}
	answer := func(state, action, decision string) map[string]any {
		t.Helper()
		_, res := call(map[string]any{"requestState": state, "inputResponses": map[string]any{
			cardInput: map[string]any{"action": action, "content": map[string]any{"decision": decision}}}})
		return res
	}
	codeOf := func(res map[string]any) string {
		b, _ := json.Marshal(res)
		var cr callResult
		_ = json.Unmarshal(b, &cr)
		return code(cr)
	}

	state := ask()
	// Accepted once: the gate lets it through (the rig's server is never
	// started, so the forward itself fails, which code reports as "").
	if got := codeOf(answer(state, "accept", "allow_once")); got != "" {
		t.Fatalf("accepted card: %s", got)
	}
	// The same state again is refused: an answer is good for one call.
	if got := codeOf(answer(state, "accept", "allow_once")); got != gate.CodeApprovalUnavailable {
		t.Fatalf("replayed state: %s", got)
	}
	// A state from nowhere is refused.
	if got := codeOf(answer("bm90IGEgc3RhdGU", "accept", "allow_once")); got != gate.CodeApprovalUnavailable {
		t.Fatalf("forged state: %s", got)
	}
	// Declined: deny.approval_denied, and the request stays refused.
	if got := codeOf(answer(ask(), "decline", "")); got != gate.CodeApprovalDenied {
		t.Fatalf("declined card: %s", got)
	}
}

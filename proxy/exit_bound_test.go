package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestExitBoundsEveryMessage: whatever its shape, no message leaves over
// the bound (issue 22): a completion is cut to the specification's 100
// values and to the bound, saying how many there were; a result that
// cannot be cut (an input_required result, whose state must come back as
// it went) becomes an error for its id that says why; an error and a
// request of many small parts leave out what does not fit.
func TestExitBoundsEveryMessage(t *testing.T) {
	t.Parallel()
	const limit = 16 << 10
	x := testExit(limit)
	many := func(n int, f func(i int) any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	msg := func(v any) []byte { b, _ := json.Marshal(v); return b }
	t.Run("completion", func(t *testing.T) {
		out := x.message(msg(map[string]any{"jsonrpc": "2.0", "id": 3, "result": map[string]any{
			"completion": map[string]any{"values": many(40000, func(i int) any { return fmt.Sprint("value-", i) })}}}))
		var res struct {
			Result struct {
				Completion struct {
					Values  []string
					Total   int
					HasMore bool
				}
			}
		}
		if len(out) > limit+boundSlack || json.Unmarshal(out, &res) != nil {
			t.Fatalf("%d bytes sent, bound %d: %.300s", len(out), limit, out)
		}
		c := res.Result.Completion
		if len(c.Values) == 0 || len(c.Values) > 100 || !c.HasMore || c.Total != 40000 || c.Values[0] != "value-0" {
			t.Fatalf("completion of %d values, hasMore %v, total %d", len(c.Values), c.HasMore, c.Total)
		}
	})
	t.Run("input_required", func(t *testing.T) {
		out := x.message(msg(map[string]any{"jsonrpc": "2.0", "id": "r7", "result": map[string]any{
			"resultType": "input_required", "requestState": strings.Repeat("s", 40000),
			"inputRequests": map[string]any{"a": map[string]any{"method": "elicitation/create", "params": map[string]any{"message": "form"}}}}}))
		var res struct {
			ID    string
			Error struct {
				Code    int
				Message string
			}
		}
		if len(out) > limit+boundSlack || json.Unmarshal(out, &res) != nil {
			t.Fatalf("%d bytes sent, bound %d", len(out), limit)
		}
		if res.ID != "r7" || res.Error.Code != -32603 || !strings.Contains(res.Error.Message, "max_result_bytes") || !strings.Contains(res.Error.Message, "ask for less") {
			t.Fatalf("want an error for r7 saying why: %s", out)
		}
	})
	for name, m := range map[string]map[string]any{
		"error_data": {"jsonrpc": "2.0", "id": 4, "error": map[string]any{"code": -32000, "message": "bad", "data": many(40000, func(i int) any { return i % 10 })}},
		"request_form": {"jsonrpc": "2.0", "id": 5, "method": "elicitation/create", "params": map[string]any{"message": "m",
			"requestedSchema": map[string]any{"type": "object", "properties": func() map[string]any {
				p := map[string]any{}
				for i := range 5000 {
					p[fmt.Sprint("f", i)] = map[string]any{"type": "string"}
				}
				return p
			}()}}},
	} {
		t.Run(name, func(t *testing.T) {
			out := x.message(msg(m))
			if len(out) > limit+boundSlack || !json.Valid(out) {
				t.Fatalf("%d bytes sent, bound %d", len(out), limit)
			}
		})
	}
	t.Run("listing_whole", func(t *testing.T) {
		in := msg(map[string]any{"jsonrpc": "2.0", "id": 6, "result": map[string]any{"tools": many(2000, func(i int) any { return map[string]any{"name": fmt.Sprint("t", i)} })}})
		if out := x.message(in); string(out) != string(in) {
			t.Fatalf("a listing was changed")
		}
	})
}

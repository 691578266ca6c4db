package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/internal/toolresult"
	"github.com/quiver-mcp/quiver/registry"
)

func TestBound(t *testing.T) {
	secrets := []registry.Secret{{Var: "API_KEY", Value: "hunter2-secret"}}
	t.Run("small_results_pass_untouched", func(t *testing.T) {
		res := bound(mcp.NewToolResultText("fine"), 1024, registry.NewRedactor(secrets).Redact, nil)
		if text(res) != "fine" || res.Meta != nil {
			t.Fatalf("got %q meta %v", text(res), res.Meta)
		}
	})
	t.Run("secrets_are_redacted_everywhere", func(t *testing.T) {
		res := mcp.NewToolResultText("key=hunter2-secret")
		res.StructuredContent = map[string]any{"key": "hunter2-secret"}
		res = bound(res, 1024, registry.NewRedactor(secrets).Redact, nil)
		if strings.Contains(text(res), "hunter2") || !strings.Contains(text(res), "[redacted:API_KEY]") {
			t.Fatalf("text: %q", text(res))
		}
		if res.StructuredContent.(map[string]any)["key"] != "[redacted:API_KEY]" {
			t.Fatalf("structured: %v", res.StructuredContent)
		}
	})
	t.Run("large_results_are_cut_with_a_notice", func(t *testing.T) {
		big := strings.Repeat("ü", 40_000) // 80,000 bytes
		res := mcp.NewToolResultText(big)
		res.StructuredContent = map[string]any{"all": big}
		res = bound(res, 16<<10, registry.NewRedactor(nil).Redact, nil)
		if n := size(res); n > 16<<10 {
			t.Fatalf("result is %d bytes, over the 16 KiB limit", n)
		}
		out := text(res)
		if !utf8.ValidString(out) || !strings.Contains(out, "[quiver: output cut here: ") {
			t.Fatalf("cut must be valid UTF-8 and say so: ...%q", out[len(out)-120:])
		}
		if res.Meta.AdditionalFields["quiver/truncated"] != true || res.StructuredContent != nil {
			t.Fatalf("meta %v, structured kept: %v", res.Meta, res.StructuredContent != nil)
		}
	})
	t.Run("raw_structured_content_is_what_is_judged", func(t *testing.T) {
		// mcp-go sends these bytes, not StructuredContent.
		res := mcp.NewToolResultText("[redacted]")
		res.RawStructuredContent = json.RawMessage(`{"token":"ghp_0123456789abcdefghijklmnopqrstuvwxyzAB","n":9223372036854775807}`)
		res = bound(res, 1024, registry.NewRedactor(nil).Redact, nil)
		b, _ := json.Marshal(res)
		if strings.Contains(string(b), "ghp_0123") || !strings.Contains(string(b), "9223372036854775807") {
			t.Fatalf("sent %s", b)
		}
	})
	t.Run("huge_raw_structured_content_is_not_decoded", func(t *testing.T) {
		raw := json.RawMessage(`{"x":"` + strings.Repeat("y", 1<<20) + `"}`)
		res := mcp.NewToolResultText("short")
		res.RawStructuredContent = raw
		res = bound(res, 16<<10, registry.NewRedactor(nil).Redact, nil)
		if res.StructuredContent != nil || res.RawStructuredContent != nil || text(res) != "short" || res.Meta.AdditionalFields["quiver/truncated"] != true {
			t.Fatalf("structured kept %v, text %q, meta %v", res.StructuredContent != nil, text(res), res.Meta)
		}
		res = mcp.NewToolResultText("short")
		res.RawStructuredContent = raw
		res = bound(res, 16<<10, registry.NewRedactor(nil).Redact, json.RawMessage(`{"type":"object"}`))
		if !res.IsError || !strings.Contains(text(res), "error.result_too_large") {
			t.Fatalf("with an output schema, a result 64 times over the bound is an error: %q", text(res))
		}
	})
	t.Run("escaped_text_keeps_what_fits", func(t *testing.T) {
		// Every < costs 6 bytes in JSON: a cut computed on raw bytes kept
		// nothing of a large result like this.
		res := bound(mcp.NewToolResultText(strings.Repeat("<a>", 200_000)), 16<<10, registry.NewRedactor(nil).Redact, nil)
		if n := size(res); n > 16<<10 || len(text(res)) < 2<<10 {
			t.Fatalf("size %d, kept %d bytes of text", n, len(text(res)))
		}
	})
	t.Run("structured_content_is_cut_to_fit_its_schema", func(t *testing.T) {
		schema := json.RawMessage(`{"type":"object","properties":{"body":{"type":"string"},"id":{"type":"string"}},"required":["body","id"]}`)
		res := mcp.NewToolResultText("see structured")
		res.StructuredContent = map[string]any{"body": strings.Repeat("b", 100_000), "id": "n1"}
		res = bound(res, 16<<10, registry.NewRedactor(nil).Redact, schema)
		sc, _ := res.StructuredContent.(map[string]any)
		if size(res) > 16<<10 || res.IsError || sc["id"] != "n1" || !strings.Contains(sc["body"].(string), "[quiver: cut here:") {
			t.Fatalf("size %d error %v structured %.200v", size(res), res.IsError, res.StructuredContent)
		}
	})
	t.Run("structured_content_that_cannot_fit_its_schema_is_an_error", func(t *testing.T) {
		schema := json.RawMessage(`{"type":"object","properties":{"body":{"type":"string","maxLength":100000}}}`)
		res := mcp.NewToolResultText("see structured")
		res.StructuredContent = map[string]any{"body": strings.Repeat("b", 100_000)}
		res = bound(res, 16<<10, registry.NewRedactor(nil).Redact, schema)
		if res.IsError || size(res) > 16<<10 || res.StructuredContent == nil {
			t.Fatalf("maxLength holds after a cut, so the cut result stands: error=%v size %d", res.IsError, size(res))
		}
		// pattern would not hold after a cut: check the error path with one.
		schema = json.RawMessage(`{"type":"object","properties":{"body":{"type":"string","pattern":"^b+$"}}}`)
		res = mcp.NewToolResultText("see structured")
		res.StructuredContent = map[string]any{"body": strings.Repeat("b", 100_000)}
		res = bound(res, 16<<10, registry.NewRedactor(nil).Redact, schema)
		if sc, _ := res.StructuredContent.(map[string]any); !res.IsError || sc["code"] != gate.CodeResultTooLarge || !strings.Contains(text(res), "output schema") {
			t.Fatalf("want an error result saying why, got error=%v %q", res.IsError, text(res))
		}
	})
	t.Run("uncuttable_content_is_dropped", func(t *testing.T) {
		res := &mcp.CallToolResult{Content: []mcp.Content{
			mcp.NewTextContent("caption"),
			mcp.NewImageContent(strings.Repeat("A", 50_000), "image/png"),
		}}
		res = bound(res, 4<<10, registry.NewRedactor(nil).Redact, nil)
		if size(res) > 4<<10 || !strings.HasPrefix(text(res), "caption") {
			t.Fatalf("size %d, text %q", size(res), text(res))
		}
	})
}

// text is a result's text, as internal/toolresult reads it for everyone.
// The bound holds on the whole result, whatever its shape: when cutting
// strings is not enough (many small parts, a large _meta of small
// fields), items are left out from the end and the notice says so.
func TestBoundManySmallParts(t *testing.T) {
	redact := registry.NewRedactor(nil).Redact
	const limit = 16 << 10
	many := func(n int, item func(i int) mcp.Content) *mcp.CallToolResult {
		res := &mcp.CallToolResult{}
		for i := 0; i < n; i++ {
			res.Content = append(res.Content, item(i))
		}
		return res
	}
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
	}{
		{"one_character_texts", many(100_000, func(i int) mcp.Content { return mcp.NewTextContent(fmt.Sprint(i % 10)) })},
		{"small_images", many(5_000, func(int) mcp.Content { return mcp.NewImageContent("aGk=", "image/png") })},
		{"texts_between_images", many(20_000, func(i int) mcp.Content {
			if i%2 == 0 {
				return mcp.NewImageContent("aGk=", "image/png")
			}
			return mcp.NewTextContent("ab")
		})},
		{"small_structured_fields", func() *mcp.CallToolResult {
			res := mcp.NewToolResultText("summary")
			m := map[string]any{}
			for i := 0; i < 20_000; i++ {
				m[fmt.Sprint("k", i)] = i
			}
			res.StructuredContent = m
			return res
		}()},
		{"deep_nesting_in_meta", func() *mcp.CallToolResult {
			res := mcp.NewToolResultText("summary")
			var v any = "leaf"
			for i := 0; i < 2_000; i++ {
				v = []any{v, i, "x"}
			}
			res.Meta = &mcp.Meta{AdditionalFields: map[string]any{"deep": v}}
			for i := 0; i < 5_000; i++ {
				res.Meta.AdditionalFields[fmt.Sprint("m", i)] = i
			}
			return res
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items := len(tc.res.Content)
			res := bound(tc.res, limit, redact, nil)
			if n := size(res); n > limit {
				t.Fatalf("result is %d bytes, over the %d-byte bound", n, limit)
			}
			if res.Meta == nil || res.Meta.AdditionalFields["quiver/truncated"] != true {
				t.Fatalf("not marked truncated: %v", res.Meta)
			}
			last := res.Content[len(res.Content)-1].(mcp.TextContent).Text
			if items > 1 && !strings.Contains(last, fmt.Sprintf("of %d content items left out", items)) {
				t.Fatalf("the notice does not say items were left out: %q", last)
			}
			if !strings.Contains(last, "[quiver: output cut here: ") {
				t.Fatalf("no notice: %q", last)
			}
		})
	}
	t.Run("with_an_output_schema", func(t *testing.T) {
		res := mcp.NewToolResultText("summary")
		m := map[string]any{}
		for i := 0; i < 20_000; i++ {
			m[fmt.Sprint("k", i)] = i
		}
		res.StructuredContent = m
		res = bound(res, limit, redact, json.RawMessage(`{"type":"object"}`))
		if n := size(res); n > limit || !res.IsError || !strings.Contains(text(res), "error.result_too_large") {
			t.Fatalf("%d bytes, error %v: %q", n, res.IsError, text(res))
		}
	})
}

// Adjacent text items read as one: a secret split across them is
// redacted, and items without one are left as they are.
func TestBoundRedactsAcrossTextItems(t *testing.T) {
	redact := registry.NewRedactor([]registry.Secret{{Var: "RT_SECRET", Value: "rt-secret-0123456789"}}).Redact
	res := &mcp.CallToolResult{Content: []mcp.Content{
		mcp.NewTextContent("before"),
		mcp.NewImageContent("aGk=", "image/png"),
		mcp.NewTextContent("xxxx RT_SECRET=rt-secr"),
		mcp.NewTextContent("et-0123"),
		mcp.NewTextContent("456789\n"),
		mcp.NewImageContent("aGk=", "image/png"),
		mcp.NewTextContent("after"),
		mcp.NewTextContent(" and more"),
	}}
	res = bound(res, 1<<20, redact, nil)
	var shown strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			shown.WriteString(tc.Text)
		}
	}
	if strings.Contains(shown.String(), "rt-secret-0123456789") || !strings.Contains(shown.String(), "RT_SECRET=[redacted:RT_SECRET]") {
		t.Fatalf("shown: %q", shown.String())
	}
	if len(res.Content) != 6 || text(&mcp.CallToolResult{Content: res.Content[4:5]}) != "after" {
		t.Fatalf("want the split run merged and the others kept: %d items", len(res.Content))
	}
}

func text(res *mcp.CallToolResult) string { return toolresult.Text(res) }

// FuzzFits checks the shortcut's promise: a result it passes without
// serializing really is within the limit.
func FuzzFits(f *testing.F) {
	for _, s := range []string{"plain", "<&>\"\\", "\u2028\u2029", "\x00\x1f", "\xff\xfe", strings.Repeat("é", 300)} {
		f.Add(s, 200)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		res := mcp.NewToolResultText(s)
		if fits(res, limit) && size(res) > limit {
			t.Fatalf("fits said %d bytes fit in %d", size(res), limit)
		}
	})
}

// A secret with characters encoding/json escapes (&, <, >, quotes) must be
// redacted from structured content too, not only from the text.
func TestBoundRedactsEscapedSecretsInStructuredContent(t *testing.T) {
	secrets := []registry.Secret{{Var: "DB_PASS", Value: "p&ss<w>rd\"1"}}
	res := mcp.NewToolResultText("ok")
	res.StructuredContent = map[string]any{"dsn": "postgres://u:p&ss<w>rd\"1@db", "nested": []any{"p&ss<w>rd\"1"}}
	res = bound(res, 1<<20, registry.NewRedactor(secrets).Redact, nil)
	b, _ := json.Marshal(res.StructuredContent)
	var back any
	_ = json.Unmarshal(b, &back)
	plain, _ := json.Marshal(back)
	if strings.Contains(fmt.Sprint(res.StructuredContent), "p&ss<w>rd") || strings.Contains(string(plain), `p\u0026ss`) {
		t.Fatalf("secret left in structured content: %v", res.StructuredContent)
	}
}

// The exit's bound, the last word on every message, holds on results of
// many small parts too: a resource's contents, a tool result's content
// that no typed step saw.
func TestExitLeavesOutSmallParts(t *testing.T) {
	const limit = 16 << 10
	x := testExit(limit)
	for _, key := range []string{"content", "contents"} {
		t.Run(key, func(t *testing.T) {
			items := make([]any, 50_000)
			for i := range items {
				items[i] = map[string]any{"type": "text", "uri": "file:///x", "text": fmt.Sprint(i % 10)}
			}
			msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{key: items}})
			out := x.message(msg)
			if len(out) > limit+boundSlack {
				t.Fatalf("%d bytes sent, bound %d", len(out), limit)
			}
			var res struct {
				Result map[string]json.RawMessage
			}
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(res.Result["_meta"]), `"quiver/truncated":true`) || !strings.HasPrefix(string(res.Result[key]), `[{"text":"0"`) {
				t.Fatalf("sent %.300s", out)
			}
			if key == "content" && !strings.Contains(string(res.Result[key]), "of 50000 content items left out") {
				t.Fatalf("no notice: ...%s", out[len(out)-200:])
			}
		})
	}
}

// TestExitFitsNotificationsOfManySmallParts: a notification has no item
// long enough to cut, yet 40,000 short log records in one
// notifications/message are far over the bound (red team 3). What does
// not fit is left out, the small fields are kept, and the cut is marked.
func TestExitFitsNotificationsOfManySmallParts(t *testing.T) {
	const limit = 16 << 10
	x := testExit(limit)
	records := make([]any, 40_000)
	fields := map[string]any{}
	for i := range records {
		records[i] = fmt.Sprintf("r%d", i)
		fields[fmt.Sprintf("k%05d", i)] = i
	}
	for name, data := range map[string]any{"array": records, "object": fields} {
		t.Run(name, func(t *testing.T) {
			msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/message",
				"params": map[string]any{"level": "info", "logger": "mini", "data": data}})
			out := x.message(msg)
			if len(out) > limit+boundSlack {
				t.Fatalf("%d bytes sent, bound %d", len(out), limit)
			}
			var n struct {
				Params map[string]json.RawMessage
			}
			if err := json.Unmarshal(out, &n); err != nil {
				t.Fatal(err)
			}
			if string(n.Params["level"]) != `"info"` || string(n.Params["logger"]) != `"mini"` ||
				!strings.Contains(string(n.Params["_meta"]), `"quiver/truncated":true`) || len(n.Params["data"]) < limit/2 {
				t.Fatalf("sent %.300s", out)
			}
		})
	}
}

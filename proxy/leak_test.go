package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/registry"
)

// serveLeaky is a downstream server that puts its TOKEN wherever a
// result can carry text besides a text item: a resource link's uri and
// name, a log message, a prompt, a resource's contents.
func serveLeaky() error {
	token := os.Getenv("TOKEN")
	s := server.NewMCPServer("leaky", "1", server.WithLogging(), server.WithResourceCapabilities(false, false), server.WithPromptCapabilities(false))
	s.AddTool(mcp.NewTool("leak", mcp.WithDescription("Leak the token "+token+"."), mcp.WithString("api_key", mcp.DefaultString(token), mcp.Description("defaults to "+token)), mcp.WithTitleAnnotation("title "+token), mcp.WithReadOnlyHintAnnotation(true), mcp.WithDestructiveHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false)), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = s.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelError, "leaky", "log says "+token))
		return &mcp.CallToolResult{
			Result: mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{"note": "meta says " + token}}},
			Content: []mcp.Content{
				mcp.NewTextContent("text says " + token),
				mcp.TextContent{Type: "text", Text: "plain", Meta: &mcp.Meta{AdditionalFields: map[string]any{"note": "item meta says " + token}}},
				mcp.NewResourceLink("https://example.com/?key="+token, "link "+token, "", "text/plain"),
			}}, nil
	})
	s.AddPrompt(mcp.NewPrompt("fail"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return nil, fmt.Errorf("prompt error says %s", token)
	})
	s.AddPrompt(mcp.NewPrompt("quote", mcp.WithPromptDescription("pdesc "+token)), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("q", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("prompt says "+token))}), nil
	})
	s.AddResource(mcp.NewResource("leak://token", "name "+token), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "leak://token", Text: "resource says " + token}}, nil
	})
	return server.ServeStdio(s)
}

// TestSecretsAreRedactedEverywhere: a secret given to a server through
// ${VAR} does not reach the host in any shape the server sends it back.
func TestSecretsAreRedactedEverywhere(t *testing.T) {
	const token = "s3cr3t-0123456789"
	t.Setenv("QUIVER_TEST_TOKEN", token)
	yaml := fmt.Sprintf("surface: {reveal: direct}\nservers:\n  leaky:\n    command: %q\n    env: {%s: leaky, TOKEN: \"${QUIVER_TEST_TOKEN}\"}\n", os.Args[0], childEnv)
	cfg, err := registry.ParseConfig("servers.yaml", []byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background())
	t.Cleanup(func() { s.Close() })
	<-s.Ready()
	c := connectInProcess(t, s)
	var mu sync.Mutex
	var notes []string
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		b, _ := json.Marshal(n)
		mu.Lock()
		notes = append(notes, string(b))
		mu.Unlock()
	})
	ctx := context.Background()
	//lint:ignore SA1019 logging/setLevel is current for the 2025-11-25 host this test plays
	if err := c.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	req := mcp.CallToolRequest{}
	req.Params.Name = "leaky__leak"
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	seen["tool result"] = string(b)
	pr, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "leaky__quote"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(pr)
	seen["prompt"] = string(b)
	rr, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "leak://token"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(rr)
	seen["resource"] = string(b)
	_, err = c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "leaky__fail"}})
	seen["prompt error"] = fmt.Sprint(err)
	lists := ""
	tl, _ := c.ListTools(ctx, mcp.ListToolsRequest{})
	pl, _ := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	rl, _ := c.ListResources(ctx, mcp.ListResourcesRequest{})
	for _, v := range []any{tl, pl, rl} {
		b, _ := json.Marshal(v)
		lists += string(b)
	}
	seen["listings"] = lists
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		seen["log"] = strings.Join(notes, "\n")
		mu.Unlock()
		if strings.Contains(seen["log"], "log says") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for where, text := range seen {
		if strings.Contains(text, token) {
			t.Errorf("the secret reached the host in the %s: %s", where, text)
		}
		if !strings.Contains(text, "[redacted:QUIVER_TEST_TOKEN]") {
			t.Errorf("the %s does not show the redaction: %s", where, text)
		}
	}
}

// TestRelayedRequestsAreRedacted: a downstream's sampling and elicitation
// requests keep their shape through redaction and lose the secret.
func TestRelayedRequestsAreRedacted(t *testing.T) {
	const token = "s3cr3t-0123456789"
	redact := func(s string) string { return registry.Redact(s, []registry.Secret{{Var: "T", Value: token}}) }
	sampling := mcp.CreateMessageRequest{}
	sampling.CreateMessageParams.Messages = []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("summarize " + token)}}
	sampling.CreateMessageParams.MaxTokens = 10
	got, ok := redactJSON(sampling, redact, func(b json.RawMessage) (mcp.CreateMessageRequest, error) {
		var out mcp.CreateMessageRequest
		return out, json.Unmarshal(b, &out)
	})
	b, _ := json.Marshal(got)
	if !ok || strings.Contains(string(b), token) || !strings.Contains(string(b), "summarize [redacted:T]") || got.CreateMessageParams.MaxTokens != 10 {
		t.Errorf("sampling request after redaction (ok %v): %s", ok, b)
	}
	elicit := mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: "confirm " + token, RequestedSchema: map[string]any{"type": "object"}}}
	e, ok := redactJSON(elicit, redact, func(b json.RawMessage) (mcp.ElicitationRequest, error) {
		var out mcp.ElicitationRequest
		return out, json.Unmarshal(b, &out)
	})
	if !ok || e.Params.Message != "confirm [redacted:T]" {
		t.Errorf("elicitation request after redaction (ok %v): %+v", ok, e)
	}
}

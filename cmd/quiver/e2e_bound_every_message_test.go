package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// Every message to the host is bounded by surface.max_result_bytes,
// whatever its shape (issue 22): a completion of 40,000 values, a
// downstream's elicitation form of thousands of fields and its 2.3 MB
// sampling request all went whole.

const boundEnv = "QUIVER_BOUND_EVERY"

const boundLimit = 16 << 10

func init() {
	serveMini(boundEnv, "bound-every", func(s *server.MCPServer) {
		server.WithCompletions()(s)
		server.WithPromptCompletionProvider(manyCompletions{})(s)
		s.AddPrompt(mcp.NewPrompt("pick", mcp.WithPromptDescription("Pick a value."), mcp.WithArgument("name")),
			func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("x")}}}, nil
			})
		s.AddTool(mcp.NewTool("ask_form", mcp.WithDescription("Asks the person a form of many fields."),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				props := map[string]any{}
				for i := range 3000 {
					props[fmt.Sprint("field", i)] = map[string]any{"type": "string", "description": "a field"}
				}
				_, err := server.ServerFromContext(ctx).RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
					Message: "Fill in the form", RequestedSchema: map[string]any{"type": "object", "properties": props}}})
				return mcp.NewToolResultText(fmt.Sprint("answer: ", err)), nil
			})
		s.AddTool(mcp.NewTool("ask_model", mcp.WithDescription("Asks the host's model about a 2.3 MB text."),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				//lint:ignore SA1019 the downstream asks as servers still do
				_, err := server.ServerFromContext(ctx).RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
					Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(strings.Repeat("words ", 2300000/6))}},
					MaxTokens: 10}})
				return mcp.NewToolResultText(fmt.Sprint("answer: ", err)), nil
			})
	})
}

type manyCompletions struct{}

func (manyCompletions) CompletePromptArgument(context.Context, string, mcp.CompleteArgument, mcp.CompleteContext) (*mcp.Completion, error) {
	values := make([]string, 40000)
	for i := range values {
		values[i] = fmt.Sprint("value-", i)
	}
	return &mcp.Completion{Values: values}, nil
}

// biggestAsk records the largest request the host was asked to show.
type biggestAsk struct{ n atomic.Int64 }

func (b *biggestAsk) seen(v any) {
	raw, _ := json.Marshal(v)
	for {
		old := b.n.Load()
		if int64(len(raw)) <= old || b.n.CompareAndSwap(old, int64(len(raw))) {
			return
		}
	}
}

func (b *biggestAsk) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	b.seen(req)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
}

func (b *biggestAsk) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	b.seen(req)
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("ok")}, Model: "m"}, nil
}

func TestBoundOnEveryMessage(t *testing.T) {
	asks := &biggestAsk{}
	h := startQuiver(t, fmt.Sprintf(`
surface:
  reveal: direct
  max_result_bytes: %d
servers:
  mini:
    command: %q
    env: {%s: "1"}
%s`, boundLimit, testBinary(t), boundEnv, allowAll), hostOptions{client: []client.ClientOption{
		client.WithElicitationHandler(asks), client.WithSamplingHandler(asks)}})
	h.waitTools("mini__ask_form", "mini__ask_model")

	t.Run("completion", func(t *testing.T) {
		req := mcp.CompleteRequest{}
		req.Params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: "mini__pick"}
		req.Params.Argument = mcp.CompleteArgument{Name: "name", Value: "v"}
		res, err := h.c.Complete(h.ctx(), req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(res)
		c := res.Completion
		if len(raw) > boundLimit+1024 || len(c.Values) == 0 || len(c.Values) > 100 || !c.HasMore || c.Total != 40000 {
			t.Fatalf("a completion of %d bytes, %d values (hasMore %v, total %d) reached the host; the specification allows 100, the bound is %d",
				len(raw), len(c.Values), c.HasMore, c.Total, boundLimit)
		}
	})
	for _, tool := range []string{"mini__ask_form", "mini__ask_model"} {
		t.Run(tool, func(t *testing.T) {
			asks.n.Store(0)
			text := toolresult.Text(h.call(tool, map[string]any{}))
			if n := asks.n.Load(); n > boundLimit {
				t.Fatalf("the host was sent a request of %d bytes; the bound is %d", n, boundLimit)
			}
			if !strings.Contains(text, "max_result_bytes") || !strings.Contains(text, "ask for less") {
				t.Fatalf("the server was not told why its request was refused: %s", text)
			}
		})
	}
}

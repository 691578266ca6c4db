package registry

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// A server may answer a tools/call with input requests: "input required"
// (protocol 2026-07-28, SEP-2322), which mcp-go's client answers itself
// through its handlers and retries. The Go reference SDK, talking to a
// client on 2025-11-25 (quiver pins that version downstream, so that such
// servers may still elicit the old way), bridges one round the old way and
// returns the next round's inputRequests without resultType; mcp-go takes
// that for a finished, empty result. rounds finishes the exchange: it has
// Options.AnswerInput answer each such round and sends the call again,
// with the answers and the server's requestState, as the protocol says.

// maxRounds bounds the exchange as mcp-go's client does its own.
const maxRounds = 10

// rounds takes a tools/call result and, while it carries input requests
// mcp-go left unanswered, answers them and calls again.
func (c *conn) rounds(ctx context.Context, cl *client.Client, name string, args json.RawMessage, meta *mcp.Meta, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	answer := c.reg.opts.AnswerInput
	for round := 0; answer != nil && res != nil && len(res.InputRequests) > 0; round++ {
		if round == maxRounds {
			return nil, fmt.Errorf("%s asked for input %d times in one call; quiver stopped there", c.srv.Name, maxRounds)
		}
		answers, err := answer(ctx, c.srv.Name, res.InputRequests)
		if err != nil {
			return nil, err
		}
		if res, err = c.again(ctx, cl, name, args, meta, mcp.MultiRoundTripParams{InputResponses: answers, RequestState: res.RequestState}); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// again sends tools/call with the answers to a round. It goes raw: the
// typed CallTool replaces the caller's answers with its own.
func (c *conn) again(ctx context.Context, cl *client.Client, name string, args json.RawMessage, meta *mcp.Meta, rt mcp.MultiRoundTripParams) (*mcp.CallToolResult, error) {
	params := map[string]any{"name": name, "inputResponses": rt.InputResponses}
	if len(args) > 0 {
		params["arguments"] = args
	}
	if rt.RequestState != "" {
		params["requestState"] = rt.RequestState
	}
	if meta != nil {
		params["_meta"] = meta
	}
	resp, err := cl.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		// String IDs never clash with the client's own integer IDs.
		ID:     mcp.NewRequestId(fmt.Sprintf("quiver-round-%d", c.reqID.Add(1))),
		Method: string(mcp.MethodToolsCall),
		Params: params,
	})
	if err == nil && resp.Error != nil {
		err = resp.Error.AsError()
	}
	if err != nil {
		return nil, fmt.Errorf("tools/call %s (with input): %w", name, err)
	}
	return mcp.ParseCallToolResult(&resp.Result)
}

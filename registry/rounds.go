package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// A server may answer a tools/call with input requests: "input required"
// (protocol 2026-07-28, SEP-2322). mcp-go's typed CallTool answers those
// itself through its handlers and retries; quiver sends tools/call raw
// (conn.send), so rounds does it. The Go reference SDK, talking to a
// client on 2025-11-25 (quiver pins that version downstream, so that such
// servers may still elicit the old way), bridges one round the old way and
// returns the next round's inputRequests without resultType. rounds
// finishes either exchange: it has Options.AnswerInput answer each round
// (the way the server's own requests are answered) and sends the call
// again, with the answers and the server's requestState, as the protocol
// says.

// maxRounds bounds the exchange as mcp-go's client does its own.
const maxRounds = 10

// rounds takes a tools/call result and, while it asks for input (input
// requests, or resultType input_required, which mcp-go's typed CallTool
// would have answered itself), answers them and calls again. A result that
// mentions neither is not decoded.
func (c *conn) rounds(ctx context.Context, cl *client.Client, name string, args json.RawMessage, meta *mcp.Meta, res json.RawMessage) (json.RawMessage, error) {
	answer := c.reg.opts.AnswerInput
	for round := 0; answer != nil; round++ {
		ask, ok := asksInput(res)
		if !ok {
			return res, nil
		}
		if round == maxRounds {
			return nil, fmt.Errorf("%s asked for input %d times in one call; quiver stopped there", c.srv.Name, maxRounds)
		}
		answers, err := answer(ctx, c.srv.Name, ask.InputRequests)
		if err != nil {
			return nil, err
		}
		if res, err = c.again(ctx, cl, name, args, meta, mcp.MultiRoundTripParams{InputResponses: answers, RequestState: ask.RequestState}); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// inputAsk is what a result that asks for input carries.
type inputAsk struct {
	ResultType    mcp.ResultType    `json:"resultType"`
	InputRequests mcp.InputRequests `json:"inputRequests"`
	RequestState  string            `json:"requestState"`
}

// asksInput reports whether a tools/call result asks for input, and what.
// Nearly none does: a result without the word "input" (or an escape that
// could spell it) is not decoded at all. One that cannot be decoded asks
// nothing here; the proxy's own decoding says what is wrong with it.
func asksInput(res json.RawMessage) (inputAsk, bool) {
	var ask inputAsk
	if !bytes.Contains(res, []byte("input")) && !bytes.Contains(res, []byte(`\u`)) {
		return ask, false
	}
	if json.Unmarshal(res, &ask) != nil {
		return ask, false
	}
	return ask, len(ask.InputRequests) > 0 || ask.ResultType == mcp.ResultTypeInputRequired
}

// again sends tools/call with the answers to a round. It goes raw: the
// typed CallTool replaces the caller's answers with its own.
func (c *conn) again(ctx context.Context, cl *client.Client, name string, args json.RawMessage, meta *mcp.Meta, rt mcp.MultiRoundTripParams) (json.RawMessage, error) {
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
	res, err := c.send(ctx, cl, "round", mcp.MethodToolsCall, params)
	if err != nil {
		return nil, fmt.Errorf("tools/call %s (with input): %w", name, err)
	}
	return res, nil
}

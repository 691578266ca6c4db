package exampleserver

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The tools in this file exist for quiver's end-to-end tests and benchmarks
// and are registered only with Options.TestTools.

const (
	maxSleepMS    = 600_000
	maxSleepSteps = 1000
	maxBigBytes   = 64 << 20
	// CrashExitStatus is the status the crash tool exits with.
	CrashExitStatus = 3
)

const echoSchema = `{
  "type": "object",
  "properties": {
    "value": {"description": "Any JSON value; it comes back unchanged. Other arguments are accepted and echoed too."}
  },
  "additionalProperties": true
}`

func echoTool() server.ServerTool {
	return server.ServerTool{
		Tool: newTool("echo", "Echo arguments",
			"Test tool: return the call's arguments as raw JSON, byte for byte as they arrived, so a proxy can be checked for lossless forwarding (large integers included).",
			echoSchema, readOnly()),
		Handler: echo,
	}
}

// echo answers with the arguments' wire bytes, never a re-encoding: decoding
// into Go values would turn 12345678901234567890 into 12345678901234567000.
func echo(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	raw, err := rawArguments(req)
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("The arguments could not be encoded as JSON (%v).", err)), nil
	}
	return mcp.NewToolResultText(string(raw)), nil
}

const sleepSchema = `{
  "type": "object",
  "properties": {
    "ms": {"type": "integer", "minimum": 0, "maximum": 600000, "description": "How long to sleep, in milliseconds."},
    "steps": {"type": "integer", "minimum": 0, "maximum": 1000, "default": 0, "description": "How many notifications/progress messages to send, evenly spaced, when the request carries a progressToken."}
  },
  "required": ["ms"],
  "additionalProperties": false
}`

const sleepExample = `{"ms": 250, "steps": 5}`

func sleepTool(logger *slog.Logger) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("sleep", "Sleep",
			"Test tool: wait the given number of milliseconds, reporting progress if asked, then answer \"slept N ms\". Cancelling the request ends the wait at once.",
			sleepSchema, readOnly()),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return sleep(ctx, req, logger)
		},
	}
}

func sleep(ctx context.Context, req mcp.CallToolRequest, logger *slog.Logger) (*mcp.CallToolResult, error) {
	var args struct {
		MS    *int64 `json:"ms"`
		Steps int64  `json:"steps"`
	}
	if problem := decodeArgs(req, &args); problem != "" {
		return callError(problem, sleepExample), nil
	}
	switch {
	case args.MS == nil:
		return callError(`Argument "ms" is required.`, sleepExample), nil
	case *args.MS < 0 || *args.MS > maxSleepMS:
		return callError(fmt.Sprintf(`Argument "ms" must be between 0 and %d, not %d.`, maxSleepMS, *args.MS), sleepExample), nil
	case args.Steps < 0 || args.Steps > maxSleepSteps:
		return callError(fmt.Sprintf(`Argument "steps" must be between 0 and %d, not %d.`, maxSleepSteps, args.Steps), sleepExample), nil
	}
	start := time.Now()
	total := time.Duration(*args.MS) * time.Millisecond

	var token mcp.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	srv := server.ServerFromContext(ctx)
	steps := args.Steps
	if token == nil || srv == nil {
		steps = 0
	}
	for i := int64(1); i <= steps; i++ {
		if err := sleepUntil(ctx, start.Add(total*time.Duration(i)/time.Duration(steps))); err != nil {
			return nil, fmt.Errorf("sleep cancelled after %d ms: %w", time.Since(start).Milliseconds(), err)
		}
		err := srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
			"progressToken": token,
			"progress":      i,
			"total":         steps,
			"message":       fmt.Sprintf("slept %d of %d ms", total.Milliseconds()*i/steps, total.Milliseconds()),
		})
		if err != nil {
			logger.DebugContext(ctx, "progress notification not sent", "tool", "sleep", "error", err)
		}
	}
	if err := sleepUntil(ctx, start.Add(total)); err != nil {
		return nil, fmt.Errorf("sleep cancelled after %d ms: %w", time.Since(start).Milliseconds(), err)
	}
	return mcp.NewToolResultText(fmt.Sprintf("slept %d ms", *args.MS)), nil
}

// sleepUntil waits until t or until ctx ends, returning ctx's error then.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

const crashSchema = `{
  "type": "object",
  "properties": {},
  "additionalProperties": false
}`

func crashTool(logger *slog.Logger) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("crash", "Crash the server",
			"Test tool: end the server process at once with exit status 3, without answering, to simulate a downstream server that dies in the middle of a call.",
			crashSchema, hints{destructive: true}),
		Handler: func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			logger.WarnContext(ctx, "crash tool called: exiting", "tool", "crash", "status", CrashExitStatus)
			// os.Exit here, in the handler, is the point of the tool: the
			// process must vanish while the call is in flight, with no
			// response written and no deferred cleanup run. A panic would be
			// recovered by mcp-go and answered as an internal error, and
			// returning an error would leave the process alive.
			os.Exit(CrashExitStatus)
			return nil, nil
		},
	}
}

const bigSchema = `{
  "type": "object",
  "properties": {
    "bytes": {"type": "integer", "minimum": 0, "maximum": 67108864, "description": "The exact size of the text to return, in bytes (at most 64 MiB)."}
  },
  "required": ["bytes"],
  "additionalProperties": false
}`

const bigExample = `{"bytes": 1048576}`

// bigLine is the 64-byte line the big tool repeats.
const bigLine = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.\n"

func bigTool() server.ServerTool {
	return server.ServerTool{
		Tool: newTool("big", "Big output",
			"Test tool: return a text of exactly the given number of bytes, ASCII in 64-byte lines, for testing how large outputs are handled.",
			bigSchema, readOnly()),
		Handler: big,
	}
}

func big(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Bytes *int64 `json:"bytes"`
	}
	if problem := decodeArgs(req, &args); problem != "" {
		return callError(problem, bigExample), nil
	}
	switch {
	case args.Bytes == nil:
		return callError(`Argument "bytes" is required.`, bigExample), nil
	case *args.Bytes < 0 || *args.Bytes > maxBigBytes:
		return callError(fmt.Sprintf(`Argument "bytes" must be between 0 and %d, not %d.`, maxBigBytes, *args.Bytes), bigExample), nil
	}
	n := int(*args.Bytes)
	text := strings.Repeat(bigLine, n/len(bigLine)+1)[:n]
	return mcp.NewToolResultText(text), nil
}

package registry

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Over HTTP, mcp-go gives up a request by ending its HTTP exchange and
// sends no notifications/cancelled. quiver speaks 2025-11-25 to its
// servers, and that version says a server must not take a dropped
// connection for a cancellation, so a downstream server would go on with a
// call its caller has cancelled. These wrappers tell it, the way stdio
// does. (From 2026-07-28 the dropped exchange is the cancellation; the
// extra notification is then harmless, as one for a finished request is.) Embedding the
// concrete transports keeps every interface mcp-go looks for on them
// (server requests, the protocol version header, legacy detection).

type cancellingHTTP struct{ *transport.StreamableHTTP }

func (t cancellingHTTP) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.StreamableHTTP.SendRequest(ctx, req)
	cancelled(ctx, req, err, t.StreamableHTTP.SendNotification)
	return resp, err
}

type cancellingSSE struct{ *transport.SSE }

func (t cancellingSSE) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.SSE.SendRequest(ctx, req)
	cancelled(ctx, req, err, t.SSE.SendNotification)
	return resp, err
}

// cancelNotifyTimeout bounds sending a notifications/cancelled.
const cancelNotifyTimeout = 5 * time.Second

// cancelled sends notifications/cancelled for req when it failed because
// its context ended, off the caller's path: the caller already has its
// error. initialize is never cancelled (MCP).
func cancelled(ctx context.Context, req transport.JSONRPCRequest, err error, notify func(context.Context, mcp.JSONRPCNotification) error) {
	if err == nil || req.Method == string(mcp.MethodInitialize) {
		return
	}
	// The SSE transport's own timer can fire a moment before the context
	// says it is done: a passed deadline counts too.
	if d, ok := ctx.Deadline(); ctx.Err() == nil && (!ok || time.Now().Before(d)) {
		return
	}
	why := ctx.Err()
	if why == nil {
		why = context.DeadlineExceeded
	}
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": req.ID, "reason": why.Error()}},
		},
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelNotifyTimeout)
		defer cancel()
		_ = notify(ctx, n)
	}()
}

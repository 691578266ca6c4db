package registry

import "context"

type headersKey struct{}

// WithHeaders returns a context whose requests to a remote (HTTP or SSE)
// server carry headers besides the entry's own: the proxy gives the
// downstream a call's trace context this way (traceparent, tracestate).
// A stdio server gets none. mcp-go sets these after the entry's own
// headers and its OAuth token, so a caller must give only headers of its
// own kind (the proxy gives trace context, nothing else).
func WithHeaders(ctx context.Context, headers map[string]string) context.Context {
	return context.WithValue(ctx, headersKey{}, headers)
}

// headersOf is the transports' header function: the headers WithHeaders
// put in the request's context.
func headersOf(ctx context.Context) map[string]string {
	h, _ := ctx.Value(headersKey{}).(map[string]string)
	return h
}

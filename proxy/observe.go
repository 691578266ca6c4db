package proxy

import (
	"context"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/registry"
)

// An Observer watches the steps of the requests that reach a server, for
// metrics and traces (the telemetry package is the real one). The proxy
// calls it at the places each step already passes once (ARCHITECTURE.md,
// "Observing a request"); it never sees an argument value. Step begins a
// step and returns the context that carries it (a child step begun with
// that context belongs to it) and the function that ends it with a code:
// the gate's decision code for StepGate and StepApproval, the code the
// request ended with for StepRequest ("" for none), an error code for a
// StepDownstream that failed. Both must be safe for concurrent use.
type Observer interface {
	Step(ctx context.Context, s Step) (context.Context, func(code string))
}

// A StepKind names one step of a request.
type StepKind string

const (
	// StepRequest is a request from the host that may reach a server:
	// a tools/call (directly or through call_tool), resources/read,
	// prompts/get. Its children are the steps below.
	StepRequest StepKind = "request"
	// StepGate is the gate's decision.
	StepGate StepKind = "gate"
	// StepApproval is the wait for a person's answer to an ask.
	StepApproval StepKind = "approval"
	// StepDownstream is the call to the server.
	StepDownstream StepKind = "downstream"
	// StepExit is the result made safe to show: redacted and bounded.
	StepExit StepKind = "exit"
	// StepSearch is a search_tools call.
	StepSearch StepKind = "search"
)

// A Step is what an Observer is told of a step as it begins.
type Step struct {
	Kind StepKind
	// Method is the request's MCP method (tools/call, resources/read,
	// prompts/get).
	Method string
	// Tool is the name the host asked for; Server the server it belongs
	// to ("" for a name no server has).
	Tool, Server string
	// Meta is the request's _meta fields. On StepRequest the observer may
	// read trace context from it (traceparent, tracestate); on
	// StepDownstream it is empty and the observer may write the trace
	// context the server should continue into it: the proxy forwards it
	// in the request's _meta and, to a remote server, as HTTP headers.
	Meta map[string]any
}

// observe begins a step, or does nothing without an observer. A step
// other than a request's own (StepRequest, StepSearch) is observed only
// within an observed request: a completion or a subscription is admitted
// by the same gate, but is no call of the host's to count or trace.
func (s *Server) observe(ctx context.Context, st Step) (context.Context, func(code string)) {
	if s.opts.Observer == nil || (st.Kind != StepRequest && st.Kind != StepSearch && noteOf(ctx) == nil) {
		return ctx, noEnd
	}
	return s.opts.Observer.Step(ctx, st)
}

func noEnd(string) {}

// observeDownstream begins the downstream step of a request whose
// forwarded _meta is out (nil for none): the trace context the observer
// gives is added to it and to the HTTP headers of a remote server's
// request (registry.WithHeaders).
func (s *Server) observeDownstream(ctx context.Context, srv, tool string, out *mcp.Meta) (context.Context, *mcp.Meta, func(code string)) {
	if s.opts.Observer == nil || noteOf(ctx) == nil {
		return ctx, out, noEnd
	}
	fields := map[string]any{}
	ctx, end := s.opts.Observer.Step(ctx, Step{Kind: StepDownstream, Server: srv, Tool: tool, Meta: fields})
	if len(fields) == 0 {
		return ctx, out, end
	}
	m := &mcp.Meta{AdditionalFields: map[string]any{}}
	if out != nil {
		m.ProgressToken = out.ProgressToken
		for k, v := range out.AdditionalFields {
			m.AdditionalFields[k] = v
		}
	}
	headers := map[string]string{}
	for k, v := range fields {
		m.AdditionalFields[k] = v
		if str, ok := v.(string); ok {
			headers[k] = str
		}
	}
	return registry.WithHeaders(ctx, headers), m, end
}

// metaFields is a request's _meta fields, for StepRequest.
func metaFields(m *mcp.Meta) map[string]any {
	if m == nil {
		return nil
	}
	return m.AdditionalFields
}

// callNote carries, from admit to the end of a request, the code the
// request ends with; its presence in a context marks an observed request.
type callNote struct{ code string }

type callNoteKey struct{}

func noteOf(ctx context.Context) *callNote {
	n, _ := ctx.Value(callNoteKey{}).(*callNote)
	return n
}

// observePass begins the request step of a pass-through request (a
// resource read, a prompt) of operation op to srv; the function it
// returns ends it with the request's error.
func (s *Server) observePass(ctx context.Context, srv, op string, meta *mcp.Meta) (context.Context, func(error)) {
	if s.opts.Observer == nil {
		return ctx, func(error) {}
	}
	note := &callNote{}
	ctx, end := s.opts.Observer.Step(context.WithValue(ctx, callNoteKey{}, note),
		Step{Kind: StepRequest, Method: strings.ReplaceAll(op, ".", "/"), Tool: op, Server: srv, Meta: metaFields(meta)})
	return ctx, func(err error) {
		if err != nil && !errors.Is(err, errRefused) {
			note.code = failureCode(err)
		}
		end(note.code)
	}
}

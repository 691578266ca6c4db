package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/index"
	"github.com/quiver-mcp/quiver/registry"
)

// The one path every tools/call takes, top to bottom: it enters
// (handleDirect, or call_tool through handleBuiltin) and takes one view
// of the snapshot in force; dispatch resolves the name and builds the
// gate's question, admit decides and records it, forward sends an allowed
// call to its server, and finish records how it ended and makes the
// result safe to show. Every step reads the view it was given.

// handleDirect serves a tools/call of a downstream tool by name.
func (s *Server) handleDirect(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ctx = withRoundTrip(ctx, req.Params.MultiRoundTripParams)
	v := s.viewOf(s.session(ctx))
	defer v.release()
	res := v.dispatch(ctx, req.Params.Name, rawArgs(req), req.Params.Meta)
	if len(v.tools[req.Params.Name].RawOutputSchema) > 0 {
		res = withoutRefusalStructure(res)
	}
	return res, nil
}

// withoutRefusalStructure leaves out quiver's {code, reason} from a
// refusal of a tool that declares an output schema: a client that checks
// structured content against the schema, error or not (the TypeScript
// SDK does), would throw it away for not matching, and with it the
// sentence that says what to do. The code still leads the text.
func withoutRefusalStructure(res *mcp.CallToolResult) *mcp.CallToolResult {
	m, ok := res.StructuredContent.(map[string]any)
	if !res.IsError || !ok || len(m) != 2 || len(res.Content) != 1 {
		return res
	}
	code, _ := m["code"].(string)
	reason, _ := m["reason"].(string)
	if tc, ok := res.Content[0].(mcp.TextContent); ok && code != "" && tc.Text == code+": "+reason {
		res.StructuredContent = nil
	}
	return res
}

// dispatch is the one path every call takes: resolve, gate, forward. It
// is the request's step for an Observer (observe.go), which ends with the
// code the call ended with.
func (v reqView) dispatch(ctx context.Context, name string, args json.RawMessage, meta *mcp.Meta) *mcp.CallToolResult {
	if v.s.opts.Observer == nil {
		return v.decide(ctx, name, args, meta)
	}
	t, _ := v.cat.Lookup(name)
	note := &callNote{}
	ctx, end := v.s.observe(context.WithValue(ctx, callNoteKey{}, note),
		Step{Kind: StepRequest, Method: string(mcp.MethodToolsCall), Tool: name, Server: t.Server, Meta: metaFields(meta)})
	res := v.decide(ctx, name, args, meta)
	end(note.code)
	return res
}

// decide is dispatch's body.
func (v reqView) decide(ctx context.Context, name string, args json.RawMessage, meta *mcp.Meta) *mcp.CallToolResult {
	s, ss := v.s, v.ss
	if state := roundTrip(ctx).RequestState; state != "" && modernHost(ctx) {
		// The retry of a call whose downstream waits on the host's input
		// (park.go): it was decided when it started.
		if st, err := s.seal.read(state, s.opts.Now()); err == nil && st.Kind == stateParking {
			if st, err = s.seal.open(state, s.opts.Now()); err != nil {
				noteCode(ctx, gate.CodeInputLost)
				return refusal{deny(gate.CodeInputLost, fmt.Sprintf("The answers' state cannot be used (%v); call the tool again from the start.", err))}.result()
			}
			return v.resumed(ctx, name, args, st)
		}
	}
	call := gate.Call{Session: ss.key, Name: name, Args: args, Turn: ss.currentTurn(), Roots: s.relay.sessionRoots(ctx)}
	// A tool the install left out (invalid header annotations) is unknown.
	if t, ok := v.cat.Lookup(name); ok && v.tools[name].Name != "" {
		v.callFacts(&call, t, false)
	} else {
		call.Closest = v.closest(name, 3, index.KindMCP)
	}
	v.frame(call.Tool, call.Roots)
	if call.Tool != nil {
		// Held from before the gate's decision until the server answers
		// (pathlock.go); given back however the call ends, a panic too.
		v.paths = s.paths.hold(v.gate.ClassOf(call.Tool))
		defer v.paths.release()
	}
	d, id, input := v.admit(ctx, call, true)
	if d.Verdict != gate.Allow || input != nil || len(d.Resolved) == 0 {
		v.paths.release() // no path of this call was judged, or it does not run
	} else {
		v.paths.retake() // a no-op: an approved call retook it before it was judged again (approval.go decided)
	}
	if input != nil {
		return input // the approval card, as an input request
	}
	if d.Verdict != gate.Allow {
		s.log.Info("call refused", "session", ss.id, "tool", name, "code", d.Code, "reason", d.Reason)
		return builtin.Refusal(d.Code, d.Reason)
	}
	if v.paths.holding() {
		ctx = withHold(ctx, v.paths)
	}
	if modernHost(ctx) {
		return v.parkedCall(ctx, name, d, id, meta)
	}
	res, err := v.forward(ctx, name, d.Args, meta)
	v.paths.release()
	return v.finish(ctx, name, d, id, res, err)
}

// admit decides a call and records it. An allowed call comes back with
// its ledger id, already recorded as started (the one write a call waits
// for); a refusal is recorded in the background; an ask goes to approval
// when mayAsk, and is refused when not. The decision's reason and
// justification are redacted before anything stores or shows them: a
// reason may quote the arguments, and the arguments may hold a token.
//
// For a host on 2026-07-28 an approval card is an input request: then
// admit returns the result that asks for it, and the call must return
// that instead of running.
func (v reqView) admit(ctx context.Context, call gate.Call, mayAsk bool) (gate.Decision, int64, *mcp.CallToolResult) {
	s, ss := v.s, v.ss
	gctx, decided := s.observe(ctx, Step{Kind: StepGate, Tool: call.Name, Server: serverOf(call)})
	d := v.gate.Evaluate(gctx, call)
	d.Reason, d.Justification = v.redacted(d.Reason), v.redacted(d.Justification)
	if d.Verdict == gate.Ask && !mayAsk {
		d.Verdict = gate.Deny
		d.Reason += " quiver asks no one about this kind of request, so it was refused."
	}
	decided(d.Code)
	defer func() { noteCode(ctx, d.Code) }()
	if s.ledger == nil {
		var input *mcp.CallToolResult
		if d.Verdict == gate.Ask {
			v.paths.release() // never wait on a person holding it
			d, input = v.observedApproval(ctx, call, d, 0)
		}
		return d, 0, input
	}
	switch d.Verdict {
	case gate.Allow:
		id, err := s.ledger.RecordStarted(ctx, ss.key, call.Name, call.Args, d)
		if err != nil {
			s.log.Error("ledger: recording a call failed", "tool", call.Name, "err", err)
		}
		return d, id, nil
	case gate.Deny:
		s.ledger.RecordRefusal(ss.key, call.Name, call.Args, d)
		return d, 0, nil
	}
	id, err := s.ledger.RecordDecision(ctx, ss.key, call.Name, call.Args, d)
	if err != nil {
		s.log.Error("ledger: recording a decision failed", "tool", call.Name, "err", err)
	}
	v.paths.release() // never wait on a person holding it
	d, input := v.observedApproval(ctx, call, d, id)
	if input != nil {
		return d, id, input
	}
	if id != 0 {
		if d.Verdict == gate.Allow {
			err = s.ledger.RecordStart(ctx, id)
		} else {
			err = s.ledger.RecordApproval(ctx, id, d.Code)
		}
		if err != nil {
			s.log.Error("ledger: recording an approval failed", "call", id, "err", err)
		}
	}
	return d, id, nil
}

// forward sends an allowed tools/call to its server as a flight of the
// calling session: progress and server-to-client requests find their way
// back to it.
func (v reqView) forward(ctx context.Context, name string, args json.RawMessage, meta *mcp.Meta) (forwarded, error) {
	srv := ""
	if t, ok := v.cat.Lookup(name); ok {
		srv = t.Server
	}
	fctx, out, end := v.s.relay.begin(ctx, srv, meta)
	defer end()
	fctx, out, called := v.s.observeDownstream(fctx, srv, name, out)
	raw, err := v.s.reg.Call(fctx, name, args, out)
	called(failureCode(err))
	return forwarded{raw: raw, asBytes: mayHoldBytes(ctx)}, err
}

// observedApproval is approve as the approval step of an Observer.
func (v reqView) observedApproval(ctx context.Context, call gate.Call, d gate.Decision, id int64) (gate.Decision, *mcp.CallToolResult) {
	actx, answered := v.s.observe(ctx, Step{Kind: StepApproval, Tool: call.Name, Server: serverOf(call)})
	d, input := v.approve(actx, call, d, id)
	answered(d.Code)
	return d, input
}

// serverOf is the server a call's tool belongs to, "" for none.
func serverOf(call gate.Call) string {
	if call.Tool == nil {
		return ""
	}
	return call.Tool.Server
}

// noteCode sets the code the request in ctx ends with, when an Observer
// watches it.
func noteCode(ctx context.Context, code string) {
	if n := noteOf(ctx); n != nil {
		n.code = code
	}
}

// finish records how an allowed call ended and makes its result safe to
// show: a downstream failure becomes a refusal with a code, a result is
// redacted and bounded.
func (v reqView) finish(ctx context.Context, name string, d gate.Decision, id int64, out forwarded, err error) *mcp.CallToolResult {
	s, ss := v.s, v.ss
	var res *mcp.CallToolResult
	if err == nil {
		_, bounded := s.observe(ctx, Step{Kind: StepExit, Tool: name})
		res, err = v.shown(name, out)
		bounded("")
	}
	if err != nil {
		reason := v.redacted(err.Error())
		s.log.Warn("call failed", "session", ss.id, "tool", name, "code", d.Code, "err", reason)
		code, outcome := failureCode(err), gate.OutcomeError
		switch code {
		case gate.CodeServerDown:
			if d.Class != gate.ClassRead {
				// It may have run: say so, and never retry it.
				outcome = gate.OutcomeUnknown
			}
		case gate.CodeTimeout:
			outcome = gate.OutcomeUnknown
		case gate.CodeCancelled:
			outcome = gate.OutcomeCancelled
		}
		s.ended(id, outcome, boundDetail(code+": "+reason))
		noteCode(ctx, code)
		if outcome == gate.OutcomeUnknown {
			reason += "; it may or may not have taken effect: check before calling it again"
		}
		return builtin.Refusal(code, reason)
	}
	outcome, detail := gate.OutcomeOK, ""
	if res.IsError {
		// Why it failed, in the server's words: read from what the server
		// sent, so that a result that leaves as bytes (bytepath.go) is
		// recorded as a decoded one is.
		// Quoted and labelled (red team 67): the server's text is not
		// quiver's reason, however much it reads like one.
		outcome, detail = gate.OutcomeError, serverSaid(v.redacted(errorText(out.raw)))
	}
	s.ended(id, outcome, detail)
	// Every call passes here: a logger With its attributes cost three
	// allocations a call even with debug off.
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("call done", "session", ss.id, "tool", name, "code", d.Code, "is_error", res.IsError)
	}
	return res
}

// failureCode is the code of a downstream failure, "" for none.
func failureCode(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, registry.ErrServerDown):
		return gate.CodeServerDown
	case errors.Is(err, context.DeadlineExceeded):
		return gate.CodeTimeout
	case errors.Is(err, context.Canceled):
		return gate.CodeCancelled
	}
	return gate.CodeDownstream
}

// maxDetail bounds the text the ledger keeps of why a call failed: enough
// to read the cause in quiver audit, never a whole result.
const maxDetail = 500

// boundDetail cuts text, already redacted, to maxDetail bytes on a
// character boundary, on one line.
func boundDetail(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if len(text) <= maxDetail {
		return text
	}
	cut := maxDetail
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}

// serverSaid labels and quotes a server's text (already redacted) for
// the ledger's detail, within maxDetail bytes in all.
func serverSaid(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if text == "" {
		return ""
	}
	const label = "the server said: "
	cut, more := len(text), ""
	for {
		d := label + strconv.Quote(text[:cut]) + more
		if len(d) <= maxDetail || cut == 0 {
			return d
		}
		cut = max(0, cut-(len(d)-maxDetail))
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		more = "…"
	}
}

// errorText is the text of a tools/call result as the server sent it: its
// text contents joined with nothing between them, so that a secret split
// across two of them is whole for the redactor (as redactAcross sees it).
func errorText(raw json.RawMessage) string {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range r.Content {
		if c.Type == mcp.ContentTypeText {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// ended records how a started call ended, in the background.
func (s *Server) ended(id int64, o gate.Outcome, detail string) {
	if s.ledger != nil && id != 0 {
		s.ledger.RecordEndLater(id, o, detail)
	}
}

func rawArgs(req mcp.CallToolRequest) json.RawMessage {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments
	}
	if req.Params.Arguments == nil {
		return nil
	}
	b, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return nil
	}
	return b
}

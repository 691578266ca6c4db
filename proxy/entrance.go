package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// The entrance is the one way in. Every request that reaches a downstream
// server and can read or change something is a gate.Call, decided by
// gate.Evaluate and recorded in the ledger by admit: tools/call and
// call_tool through dispatch, and the other methods — resources/read,
// resources/subscribe, prompts/get, completion/complete — through enter,
// as calls of the operation's own name on the server:
//
//	<prefix>__resources.read   {"resource": uri, and a template's variables}
//	<prefix>__resources.subscribe
//	<prefix>__prompts.get      the prompt's arguments
//	<prefix>__completion.complete  the argument being completed and its context
//
// A dot never occurs in an exposed tool name, so these names cannot be
// confused with a tool's; policy rules and classes can name them (a rule
// for "filesystem__*" covers them). Each is a read: the fence judges the
// paths in its arguments (a file: URI, a value shaped like a path, an
// argument named like one) exactly as it judges a tool's.
const (
	opResourceRead = "resources.read"
	opSubscribe    = "resources.subscribe"
	opPrompt       = "prompts.get"
	opComplete     = "completion.complete"
)

// errRefused marks a pass-through request the gate refused; the error's
// text is the decision's code and sentence.
var errRefused = errors.New("refused by quiver's gate")

type refusal struct{ d gate.Decision }

func (r refusal) Error() string        { return r.d.Code + ": " + r.d.Reason }
func (r refusal) Is(target error) bool { return target == errRefused }

// result is the refusal as a tool result the model reads.
func (r refusal) result() *mcp.CallToolResult { return builtin.Refusal(r.d.Code, r.d.Reason) }

// enter admits one pass-through request of operation op to server srv.
// mayAsk says whether an ask may become an approval card: reads and
// prompts may; a completion (asked at every keystroke) or a subscription
// may not, and is refused instead. On success it returns a function that
// records how the request ended.
func (s *Server) enter(ctx context.Context, srv, op string, args map[string]any, mayAsk bool) (func(error), error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encode the arguments of %s: %w", op, err)
	}
	ss := s.session(ctx)
	v := s.viewOf(ss)
	defer v.release()
	name := prefixOf(v.cfg, srv) + "__" + op
	call := gate.Call{Session: ss.key, Name: name, Args: raw, Turn: ss.currentTurn(),
		Roots: s.relay.sessionRoots(ctx)}
	v.callFacts(&call, v.opTool(name, srv), true)
	v.frame(call.Tool, call.Roots)
	d, id, input := v.admit(ctx, call, mayAsk)
	if input != nil {
		// A 2026-07-28 host answers cards only within tools/call.
		d = deny(gate.CodeApprovalUnavailable, d.Reason+" This host takes approval cards only for tool calls; read it through a tool (e.g. read_file), or ask the user to widen the fence.")
	}
	if d.Verdict != gate.Allow {
		s.log.Info("request refused", "session", ss.id, "op", name, "code", d.Code, "reason", d.Reason)
		return nil, refusal{d}
	}
	return func(err error) {
		switch {
		case err == nil:
			s.ended(id, gate.OutcomeOK, "")
		case errors.Is(err, context.Canceled):
			s.ended(id, gate.OutcomeCancelled, gate.CodeCancelled)
		default:
			s.ended(id, gate.OutcomeError, gate.CodeDownstream)
		}
	}, nil
}

// opTool is a pass-through operation on srv as a catalog tool: a read,
// judged in the server's frame like its tools, and switched off like them
// (tools.yaml's "hostile__*" or tools_default: off covers
// hostile__prompts.get).
func (v reqView) opTool(name, srv string) registry.Tool {
	t := registry.Tool{Exposed: name, Server: srv, Name: name,
		Annotations: mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true)}}
	if sc, ok := v.cfg.Server(srv); ok {
		t.Off, t.Toggle = v.cfg.SwitchedOff(sc, name)
	}
	return t
}

// resourceArgs are the arguments the gate sees for a URI of srv: the URI
// itself, under a name that says nothing of paths (a file: URI is a path
// by its shape; notes://x is not a path at all) and, for a URI that fills a
// template of another scheme, the template's variables, so that
// notes://{+path} has its path fenced like any argument named path. A
// file: template's variables are the URI's own path, already judged.
func (m *mirror) resourceArgs(srv, uri string) map[string]any {
	args := map[string]any{"resource": uri}
	if schemeOf(uri) == "file" {
		// resources/read takes a URI, never a file name: the gate gets the
		// path it names (decoded, as the server decodes it), not a string
		// it would also have to read as a relative name. A file URI with
		// a remote host or no absolute path stays as written, which the
		// gate cannot place: outside.
		if u, err := url.Parse(uri); err == nil && (u.Host == "" || u.Host == "localhost") && strings.HasPrefix(u.Path, "/") {
			args["resource"] = u.Path
		}
		return args
	}
	v := m.offer(srv)
	if v == nil {
		return args
	}
	for _, t := range v.templates {
		tmpl, err := uritemplate.New(templateRaw(t))
		if err != nil {
			continue
		}
		vals := tmpl.Match(uri)
		if vals == nil {
			continue
		}
		for _, name := range tmpl.Varnames() {
			if _, taken := args[name]; taken {
				continue
			}
			val, ok := vals[name]
			switch {
			case !ok || !val.Valid():
			case val.T == uritemplate.ValueTypeString:
				args[name] = val.String()
			default:
				var list []any
				for _, e := range append(val.List(), val.KV()...) {
					list = append(list, e)
				}
				args[name] = list
			}
		}
	}
	return args
}

// stringArgs turns prompt or completion arguments into the gate's form.
func stringArgs(in map[string]string) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

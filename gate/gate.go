package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Verdict is what the gate says of a call.
type Verdict int

const (
	// Deny refuses the call; the reason says how to do it right.
	Deny Verdict = iota
	// Allow lets the call through.
	Allow
	// Ask needs a grant or a person's approval before the call may run.
	Ask
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	default:
		return "deny"
	}
}

// Stable decision codes. Hosts, logs and the ledger key on these; never
// rename one.
const (
	CodeAllow       = "allow.policy"
	CodeUnknownTool = "deny.unknown_tool"
	CodeWithheld    = "deny.withheld"
	CodeNotBound    = "deny.not_bound"
	CodeArgsShape   = "deny.args_shape"
)

// A Tool carries the facts the gate needs about one downstream or builtin
// tool. The proxy fills it from the catalog.
type Tool struct {
	Name   string          // exposed name, e.g. "github__create_issue"
	Server string          // server key; "" for quiver's builtins
	Schema json.RawMessage // input schema as the server sent it
}

// A Call is one tools/call as the model wrote it, with what the session
// knows about it.
type Call struct {
	Session string
	Name    string // the name the model used
	// Tool is nil when the name resolves to nothing.
	Tool *Tool
	// Closest holds the nearest known names, offered when Tool is nil.
	Closest []string
	// Withheld is true when the tool exists but is switched off or outside
	// the current activity.
	Withheld bool
	// Visible is true when the session may call the tool now: always-on,
	// forced by a slash command, or bound by one of its searches.
	Visible bool
	// Args are the arguments exactly as received (nil when absent).
	Args json.RawMessage
}

// A Decision is the gate's answer to one call.
type Decision struct {
	Verdict Verdict
	Code    string
	// Reason is one sentence for the model: what was wrong and how to do
	// it right.
	Reason string
	// Args are the arguments to forward (normalised: absent becomes {}).
	Args json.RawMessage
}

// Gate evaluates calls. The zero value is not usable; use New.
type Gate struct{}

// New returns a gate.
func New() *Gate { return &Gate{} }

// Evaluate decides one call. It never panics on any input and every
// decision it returns carries a code and a reason.
func (g *Gate) Evaluate(ctx context.Context, c Call) Decision {
	if d, done := resolve(c); done {
		return d
	}
	args, d, ok := shape(c)
	if !ok {
		return d
	}
	return Decision{Verdict: Allow, Code: CodeAllow, Reason: "allowed by policy", Args: args}
}

func resolve(c Call) (Decision, bool) {
	switch {
	case c.Tool == nil:
		reason := fmt.Sprintf("There is no tool named %q.", c.Name)
		if len(c.Closest) > 0 {
			reason += " Closest names: " + strings.Join(c.Closest, ", ") + "."
		}
		reason += " Use search_tools to find the tool you need."
		return deny(CodeUnknownTool, reason), true
	case c.Withheld:
		return deny(CodeWithheld, fmt.Sprintf("The tool %q is switched off here; ask the user to enable it, or use another tool.", c.Name)), true
	case !c.Visible:
		return deny(CodeNotBound, fmt.Sprintf("The tool %q is not available yet: search for it first with search_tools, then call it.", c.Name)), true
	}
	return Decision{}, false
}

// shape checks that the arguments are a JSON object. A missing or null
// value means "no arguments" and becomes {}.
func shape(c Call) (json.RawMessage, Decision, bool) {
	raw := bytes.TrimSpace(c.Args)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage("{}"), Decision{}, true
	}
	if raw[0] != '{' || !json.Valid(raw) {
		return nil, deny(CodeArgsShape, fmt.Sprintf("The arguments for %q must be a JSON object of named parameters, like {\"path\": \"/tmp/x\"}; got %s.", c.Name, describe(raw))), false
	}
	return json.RawMessage(raw), Decision{}, true
}

func describe(raw []byte) string {
	switch raw[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case '{':
		return "malformed JSON"
	default:
		if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
			return "a number"
		}
		return "something that is not JSON"
	}
}

func deny(code, reason string) Decision {
	return Decision{Verdict: Deny, Code: code, Reason: reason}
}

package gate

// Decision codes. Every refusal, permission and failure quiver reports
// carries one of these; hosts, logs, the ledger and the operator pages key
// on them, so never rename one. The gate's own decisions use most of them;
// the others are emitted by builtin and proxy but live here so that the set
// of codes is in one place.

// Allowed: the call goes to its server. Evaluate sets one of these on an
// Allow decision, naming what allowed it.
const (
	CodeAllow       = "allow.policy" // the class default allows
	CodeAllowRule   = "allow.rule"   // a rule in policy.yaml allows
	CodeAllowGrant  = "allow.grant"  // a standing grant in the ledger covers the call
	CodeAllowPermit = "allow.permit" // a per-session permit covers the call
	// CodeAllowApproval: a person approved the call on an approval card
	// (set by the proxy on the decision it recorded as ask).
	CodeAllowApproval = "allow.approval"
)

// Refused by the gate: Evaluate returns a Deny decision with one of these.
const (
	CodeUnknownTool      = "deny.unknown_tool"       // no such tool in the catalog
	CodeWithheld         = "deny.withheld"           // the tool exists but is withheld from this session
	CodeNotBound         = "deny.not_bound"          // the tool was not bound by a search this session
	CodeSlashGated       = "deny.slash_gated"        // the tool is reserved for the user's slash commands
	CodeArgsShape        = "deny.args_shape"         // the arguments are not a JSON object
	CodeArgsInvalid      = "deny.args_invalid"       // the arguments fail the tool's input schema (or a builtin's)
	CodeCorrectionBudget = "deny.correction_budget"  // too many invalid calls in a row for one tool
	CodeReadOnly         = "deny.read_only_activity" // a mutating call in a read-only activity
	CodeJustification    = "deny.justification"      // the justification argument is missing or unusable
	CodeBadPath          = "deny.bad_path"           // a path argument cannot be read as a path
	CodeOutsideFence     = "deny.outside_fence"      // policy outside_fence: deny
	CodeProtectedPath    = "deny.protected_path"     // quiver's own files (WithProtected)
	CodeArgsTooComplex   = "deny.args_too_complex"   // more paths than the fence checks per call
	CodeDenyRule         = "deny.rule"               // a rule in policy.yaml denies
	CodeDenyPolicy       = "deny.policy"             // the class default denies
	CodeInternal         = "deny.internal"           // the gate could not decide (fails closed)
	// CodeDefinitionChanged: the tool's server changed its definition since
	// it was pinned, and no person has accepted the change.
	CodeDefinitionChanged = "deny.definition_changed"
)

// Asked: Evaluate returns an Ask decision with one of these; the proxy puts
// the question to the person before the call may go on.
const (
	CodeAskReadOutside   = "ask.read_outside_fence"   // a read outside the fence
	CodeAskMutateOutside = "ask.mutate_outside_fence" // a write outside the fence
	CodeAskRule          = "ask.rule"                 // a rule in policy.yaml asks
	CodeAskPolicy        = "ask.policy"               // the class default asks
)

// Refused on the approval path, after the gate asked: the proxy records one
// of these when the question could not be put or was not answered yes.
const (
	CodeApprovalUnavailable = "deny.approval_unavailable" // the host cannot show an approval card
	CodeApprovalDenied      = "deny.approval_denied"      // the person said no
	CodeApprovalTimeout     = "deny.approval_timeout"     // no answer in time
	// CodeInputLost: a 2026-07-28 host's answers came for a call quiver no
	// longer holds.
	CodeInputLost = "deny.input_lost"
)

// Refused by a builtin tool (search_tools, read_file, call_tool,
// request_capability) for reasons of its own; bad builtin arguments use
// CodeArgsShape and CodeArgsInvalid.
const (
	// CodeRepeatedSearch refuses a search already answered this turn.
	CodeRepeatedSearch = "deny.repeated_search"
	// CodeSearchLoop ends a search repeated too often in one turn.
	CodeSearchLoop = "deny.search_loop"
	// CodeBinaryFile: read_file was asked for a file that is not text.
	CodeBinaryFile = "deny.binary_file"
)

// Failed after the decision: the call was allowed (or was a builtin) but
// did not produce a result. The proxy records these as the call's end.
const (
	CodeDownstream     = "error.downstream"       // the call to the server failed
	CodeServerDown     = "error.server_down"      // the server is not running
	CodeTimeout        = "error.timeout"          // the call ran past its deadline
	CodeCancelled      = "error.cancelled"        // the host cancelled the call
	CodeLedger         = "error.ledger"           // the ledger could not record a capability request
	CodeNotFound       = "error.not_found"        // read_file: no such file or skill
	CodeRead           = "error.read"             // read_file: the file could not be read
	CodeResultTooLarge = "error.result_too_large" // the result is over quiver's bound and cannot be cut to fit
)

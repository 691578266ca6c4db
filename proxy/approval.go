package proxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/gate"
)

// An answer is what the person chose on an approval card.
type answer int

const (
	answerNone      answer = iota // declined: grants nothing, and is final
	answerDismissed               // closed without a choice: grants nothing, asks again next time
	answerOnce
	answerSession
)

// canElicit reports whether the session's client declared elicitation.
func canElicit(ctx context.Context) bool {
	cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	return ok && cs.GetClientCapabilities().Elicitation != nil
}

// ask shows the person an approval card and waits for the answer, at most
// the policy's approval timeout. The card is shown in the host when elicit
// is set, and with the operator page on (Options.ApprovalPage) request id
// waits there too: whichever answers first decides, the other is
// withdrawn. Only an explicit "allow" grants anything.
func (v reqView) ask(ctx context.Context, c approvalCard, id int64, elicit bool) (answer, error) {
	s := v.s
	ctx, cancel := context.WithTimeout(ctx, v.approvalTimeout())
	defer cancel()
	// The page answers through the door at once; a terminal's answer is
	// read back from the ledger.
	var page, terminal <-chan answer
	if s.opts.ApprovalPage && id != 0 && s.ledger != nil {
		door, done := s.waits.open(id)
		defer done()
		page, terminal = door, s.settledElsewhere(ctx, id, time.Second)
	}
	type hostAnswer struct {
		a   answer
		err error
	}
	host := make(chan hostAnswer, 1)
	if elicit {
		go func() {
			a, err := s.elicitCard(ctx, c)
			host <- hostAnswer{a, err}
		}()
	}
	select {
	case a := <-page:
		return a, nil
	case a := <-terminal:
		return a, nil
	case h := <-host:
		if h.err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return answerNone, context.DeadlineExceeded
		}
		return h.a, h.err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return answerNone, context.DeadlineExceeded
		}
		return answerNone, ctx.Err()
	}
}

// elicitCard shows the card in the host.
func (s *Server) elicitCard(ctx context.Context, c approvalCard) (answer, error) {
	res, err := s.mcp.RequestElicitation(ctx, mcp.ElicitationRequest{Params: cardParams(c)})
	if err != nil {
		return answerNone, err
	}
	switch res.Action {
	case mcp.ElicitationResponseActionAccept:
	case mcp.ElicitationResponseActionCancel:
		return answerDismissed, nil
	default:
		return answerNone, nil
	}
	content, _ := res.Content.(map[string]any)
	switch content["decision"] {
	case "allow_once":
		return answerOnce, nil
	case "allow_session":
		return answerSession, nil
	}
	return answerNone, nil
}

// An approvalCard is what a person reads before answering: quiver's own
// text, and the model's words apart from it. They are two fields so that
// no renderer can show the model's words as quiver's: the host's card
// (String), the ledger's request (Reason and Justification, which the
// operator page and `quiver grants --pending` label in their own way)
// each quote and label Model (issue 22: request_capability's reason was
// stored as the card and shown in the box quiver's own cards use).
type approvalCard struct {
	Quiver string // quiver's text, where every value a model chose is quoted
	Model  string // the model's own words, shown only quoted and labelled
}

// String is the card as one text, for a host's elicitation: quiver's
// text, then the model's words on a line of their own, labelled.
func (c approvalCard) String() string {
	if c.Model == "" {
		return c.Quiver
	}
	return c.Quiver + "\n" + gate.ModelSays(c.Model)
}

// card is the approval card for a call: what it will do, so a person can
// decide without guessing. It names the tool and its class, each path as
// the model wrote it and as quiver resolved it (or why quiver could not),
// and whether it lies outside; for anything but a read, the start of every
// string of the arguments at any depth (the content of a write, the edits
// of an edit); and, apart, the model's own words. Every value a model or
// a server chose is written with %q: a newline, a bidi override or a line
// separator shows as an escape, never as layout.
func card(tool string, d gate.Decision) approvalCard {
	var b strings.Builder
	fmt.Fprintf(&b, "quiver: allow %s (a %s tool)?\n%s", tool, orWord(string(d.Class), "tool"), d.Reason)
	paths := map[string]bool{}
	if len(d.Resolved) > 0 {
		b.WriteString("\nPaths:")
	}
	for _, rp := range d.Resolved {
		paths[rp.Raw] = true
		where := fmt.Sprintf("%q", rp.Path)
		switch {
		case rp.Unresolved != "":
			where = "not placed: " + rp.Unresolved + " (counts as outside)"
		case rp.Outside:
			where += " (outside the allowed folders)"
		default:
			where += " (inside)"
		}
		// The argument's name is the model's too: quoted like its value,
		// so a key with a newline cannot add lines to the card.
		if rp.Raw == rp.Path || rp.Unresolved != "" {
			fmt.Fprintf(&b, "\n- %q %q: %s", rp.Arg, rp.Raw, where)
		} else {
			fmt.Fprintf(&b, "\n- %q %q resolves to %s", rp.Arg, rp.Raw, where)
		}
	}
	for _, n := range d.Needs {
		if n.Path == "" {
			fmt.Fprintf(&b, "\nNeeds: %s", n.Capability)
		}
	}
	if d.Class != gate.ClassRead {
		if lines := argPreview(d.Args, paths); len(lines) > 0 {
			b.WriteString("\nArguments (the model's, quoted):")
			for _, line := range lines {
				b.WriteString("\n" + line)
			}
		}
	}
	if d.Digest != "" {
		fmt.Fprintf(&b, "\nArguments digest: %.12s", d.Digest)
	}
	// What "for this session" grants is wider than this call: say so
	// (red team: a session yes to listing "/" let every tool read it all).
	var scope []string
	once := false
	for _, n := range d.Needs {
		switch {
		case n.Unresolved != "":
			once = true
		case n.Path != "":
			scope = append(scope, fmt.Sprintf("%s of %q and everything under it, by any tool", n.Capability, n.Path))
		default:
			scope = append(scope, fmt.Sprintf("%s calls of %s", n.Capability, tool))
		}
	}
	switch {
	case once:
		b.WriteString("\nAllow for this session allows this call once only: quiver cannot place one of its paths.")
	case len(scope) > 0:
		fmt.Fprintf(&b, "\nAllow for this session grants, until the session ends: %s.", strings.Join(scope, "; "))
	}
	return approvalCard{Quiver: b.String(), Model: d.Justification}
}

// previewBytes is how much of each string a card shows; previewValues is
// how many values it shows before it says how many it left out, and
// previewDepth how deep it looks.
const (
	previewBytes  = 200
	previewValues = 64
	previewDepth  = 32
)

// argPreview is one line per value in the arguments, at any depth, that
// is not a path the card lists already: where it is (ops[0].text) and
// its start, quoted. A write's content is on the card wherever the
// arguments put it (issue 22: {ops: [{target, text}]} showed the target
// and never the text). Past previewValues values the card says how many
// it left out, so a person knows there is more than it shows.
func argPreview(args json.RawMessage, shownPaths map[string]bool) []string {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var top map[string]any
	if dec.Decode(&top) != nil {
		return nil
	}
	p := preview{paths: shownPaths}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		p.walk(previewKey("", k), top[k], 0)
	}
	if p.left > 0 {
		p.lines = append(p.lines, fmt.Sprintf("… and %d more values (%d bytes of text) not shown; the arguments digest covers them all.", p.left, p.leftBytes))
	}
	return p.lines
}

type preview struct {
	paths           map[string]bool
	lines           []string
	left, leftBytes int
}

func (p *preview) add(line string, size int) {
	if len(p.lines) >= previewValues {
		p.left++
		p.leftBytes += size
		return
	}
	p.lines = append(p.lines, line)
}

func (p *preview) walk(at string, v any, depth int) {
	if depth > previewDepth {
		p.add(fmt.Sprintf("- %q: … (nested deeper than %d levels, not shown)", at, previewDepth), 0)
		return
	}
	switch x := v.(type) {
	case string:
		if p.paths[x] {
			return // on the card already, under Paths
		}
		str, more := x, ""
		if len(str) > previewBytes {
			cut := previewBytes
			for cut > 0 && !utf8.RuneStart(str[cut]) {
				cut--
			}
			more = fmt.Sprintf(" … (%d bytes in all)", len(str))
			str = str[:cut]
		}
		p.add(fmt.Sprintf("- %q: %q%s", at, str, more), len(x))
		if text, ok := base64Text(x); ok {
			// Content handed over encoded is shown as what it decodes
			// to (red team 5: a write's payload in base64 read as noise).
			p.add(fmt.Sprintf("- %q decoded from base64: %q", at, clip(text)), 0)
		}
	case []any:
		if len(x) == 0 {
			p.add(fmt.Sprintf("- %q: []", at), 0)
		}
		if raw, ok := byteArray(x); ok {
			// A write's content as an array of bytes shows as the text
			// it is, once, not as one number a line (red team 5).
			if utf8.Valid(raw) {
				p.add(fmt.Sprintf("- %q: %d bytes, as text: %q", at, len(raw), clip(string(raw))), len(raw))
			} else {
				p.add(fmt.Sprintf("- %q: %d bytes, not text: %x", at, len(raw), raw[:min(len(raw), previewBytes/2)]), len(raw))
			}
			return
		}
		for i, e := range x {
			p.walk(fmt.Sprintf("%s[%d]", at, i), e, depth+1)
		}
	case map[string]any:
		if len(x) == 0 {
			p.add(fmt.Sprintf("- %q: {}", at), 0)
		}
		// {"files": {"/etc/x": "content"}}: a key that is a path is
		// listed under Paths, and its content is shown here under it.
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p.walk(previewKey(at, k), x[k], depth+1)
		}
	default: // a number, true, false, null: as JSON
		b, _ := json.Marshal(x)
		p.add(fmt.Sprintf("- %q: %s", at, b), 0)
	}
}

// clip cuts s to previewBytes on a character boundary, saying so.
func clip(s string) string {
	if len(s) <= previewBytes {
		return s
	}
	cut := previewBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s … (%d bytes in all)", s[:cut], len(s))
}

// byteArray reads an array of at least four integers 0-255 as the bytes
// it spells.
func byteArray(x []any) ([]byte, bool) {
	if len(x) < 4 {
		return nil, false
	}
	raw := make([]byte, 0, len(x))
	for _, e := range x {
		n, ok := e.(json.Number)
		if !ok {
			return nil, false
		}
		i, err := n.Int64()
		if err != nil || i < 0 || i > 255 {
			return nil, false
		}
		raw = append(raw, byte(i))
	}
	return raw, true
}

// base64Text decodes s when it is base64 (standard or URL alphabet,
// padded or not) of at least 12 characters, without white space, whose
// bytes are UTF-8 text without control characters but line breaks and
// tabs: what a person needs to read to know what a write will put down.
func base64Text(s string) (string, bool) {
	if len(s) < 12 || strings.ContainsAny(s, " \t\r\n") {
		return "", false
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		raw, err := enc.DecodeString(s)
		if err != nil || !utf8.Valid(raw) {
			continue
		}
		text := string(raw)
		if strings.IndexFunc(text, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' }) >= 0 {
			continue
		}
		return text, true
	}
	return "", false
}

// plainKey is a key that reads unambiguously after a dot.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// previewKey names key k of the object at: at.k, or at["k"] for a key
// that is not a plain name (the whole is quoted again on the card).
func previewKey(at, k string) string {
	switch {
	case !plainKey.MatchString(k):
		return fmt.Sprintf("%s[%q]", at, k)
	case at == "":
		return k
	}
	return at + "." + k
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// approve turns an ask into a decision: a card when the host can show one,
// else a refusal that tells how to approve from a terminal. On approval
// the call is evaluated again, so what runs is what the ledger now allows.
// A host on 2026-07-28 gets the card as an input request (mrtr.go): then
// the call returns that result instead of running, and its retry decides.
func (v reqView) approve(ctx context.Context, call gate.Call, d gate.Decision, callID int64) (gate.Decision, *mcp.CallToolResult) {
	if server.IsModernRequest(ctx) {
		return v.approveByInput(ctx, call, d, callID)
	}
	s, ss := v.s, v.ss
	page := s.opts.ApprovalPage && s.ledger != nil
	if ss.ephemeral && !canElicit(ctx) && !page {
		// An approval from a terminal becomes a permit for this session,
		// and this session ends with this request.
		return deny(gate.CodeApprovalUnavailable, d.Reason+" This client has no session, so an approval given elsewhere could not reach its next call, and it cannot show approval cards; the call did not run. Connect with a session (or from a host that answers input requests), or ask the user to widen the fence in servers.yaml."), nil
	}
	pending, _ := v.file(ctx, call, d)
	if pending.State == gate.Denied {
		return declinedBefore(pending.ID), nil
	}
	if !canElicit(ctx) && !page {
		if pending.ID == 0 {
			return deny(gate.CodeApprovalUnavailable, d.Reason+" This host cannot show approval cards and quiver has no ledger to file the request in; the call did not run."), nil
		}
		return deny(gate.CodeApprovalUnavailable, d.Reason+" This host cannot show approval cards: "+ss.terminalHint(pending.ID)), nil
	}
	return v.waitForAnswer(ctx, call, d, callID, pending), nil
}

// waitForAnswer shows the card (in the host when it can elicit, on the
// operator page when it is on) and decides the call by the answer.
func (v reqView) waitForAnswer(ctx context.Context, call gate.Call, d gate.Decision, callID int64, pending gate.Approval) gate.Decision {
	elicit := canElicit(ctx) && !server.IsModernRequest(ctx)
	a, err := v.ask(ctx, card(call.Name, d), pending.ID, elicit)
	if errors.Is(err, context.DeadlineExceeded) {
		// Nobody answered: the request stays pending (quiver approve N
		// still works), and the same call again shows the card again.
		if !elicit {
			return deny(gate.CodeApprovalTimeout, fmt.Sprintf("The user did not answer approval %d on quiver's page in time; the call did not run. ", pending.ID)+v.ss.terminalHint(pending.ID))
		}
		return deny(gate.CodeApprovalTimeout, "The user did not answer the approval card in time; the call did not run. Ask the user before trying again.")
	}
	if err != nil {
		v.s.log.Warn("approval card failed", "session", v.ss.id, "tool", call.Name, "err", err)
		return deny(gate.CodeApprovalUnavailable, d.Reason+" quiver could not show the approval card ("+err.Error()+"); the call did not run.")
	}
	return v.decided(ctx, call, d, callID, pending, a)
}

// file records the pending request for an ask, with the card's text, so
// that `quiver grants --pending` says what the card says.
func (v reqView) file(ctx context.Context, call gate.Call, d gate.Decision) (gate.Approval, error) {
	s, ss := v.s, v.ss
	if s.ledger == nil {
		return gate.Approval{}, nil
	}
	filed := d
	// The card quotes the arguments, which may hold a token: the ledger
	// gets it redacted, as the host does at the exit. The model's words
	// go in their own column.
	c := card(call.Name, d)
	filed.Reason, filed.Justification = v.redacted(c.Quiver), v.redacted(c.Model)
	pending, err := s.ledger.RequestApproval(ctx, ss.key, call.Name, filed)
	if err != nil {
		s.log.Error("filing an approval failed", "session", ss.id, "tool", call.Name, "err", err)
	}
	return pending, err
}

// terminalHint tells the model how the user can approve request id from a
// terminal (or, with no request filed, that they cannot).
func (ss *session) terminalHint(id int64) string {
	if id == 0 || ss.ephemeral {
		return "ask the user to widen the fence or the policy in servers.yaml if this call should be allowed."
	}
	return fmt.Sprintf("ask the user to run `quiver approve %d` (this call once) or `quiver approve %d --session` in a terminal, then call again.", id, id)
}

// decided applies the person's answer to a pending request: a no is
// final, a closed card asks again next time, a yes is recorded and the
// call evaluated again.
func (v reqView) decided(ctx context.Context, call gate.Call, d gate.Decision, callID int64, pending gate.Approval, a answer) gate.Decision {
	s, ss := v.s, v.ss
	switch a {
	case answerDismissed:
		return deny(gate.CodeApprovalDenied, fmt.Sprintf("The user closed the approval card for %s without choosing; it did not run. Ask the user before trying again.", call.Name))
	case answerNone:
		s.resolve(ctx, pending, false, gate.Once)
		return deny(gate.CodeApprovalDenied, fmt.Sprintf("The user declined %s; it did not run. Do not retry it; ask the user what to do instead.", call.Name))
	}
	lifetime := gate.Once
	if a == answerSession && !ss.ephemeral {
		lifetime = gate.ForSession
	}
	// The paths are judged again holding the path lock, and it stays held
	// until the server answers (pathlock.go): a move made through quiver
	// while the person was asked is seen by this judgement, and none can
	// land between it and the server's open (red team 3).
	v.paths.retake()
	if s.ledger == nil {
		// Nothing to record a grant in: this call, once, if its paths
		// still lead where the person was shown.
		again := v.gate.Evaluate(ctx, call)
		// The digest covers where the paths resolve.
		if again.Verdict == gate.Ask && again.Digest == d.Digest {
			again.Verdict, again.Code = gate.Allow, gate.CodeAllowApproval
		} else if again.Verdict == gate.Ask {
			return deny(gate.CodeApprovalDenied, fmt.Sprintf("The paths of %s lead elsewhere than when the user approved it; it did not run. Call it again to ask the user about where they lead now.", call.Name))
		}
		return again
	}
	s.resolve(ctx, pending, true, lifetime)
	_ = s.ledger.RecordApproval(ctx, callID, string(lifetime))
	return v.gate.Evaluate(ctx, call)
}

func (s *Server) resolve(ctx context.Context, a gate.Approval, approve bool, l gate.Lifetime) {
	if s.ledger == nil || a.ID == 0 {
		return
	}
	if _, err := s.ledger.ResolveApproval(ctx, a.ID, gate.Resolution{Approve: approve, Lifetime: l}); err != nil && !errors.Is(err, gate.ErrResolved) {
		s.log.Error("resolving an approval failed", "approval", a.ID, "err", err)
	}
}

// declinedBefore is the answer to a call whose request the user already
// declined.
func declinedBefore(id int64) gate.Decision {
	return deny(gate.CodeApprovalDenied, fmt.Sprintf("The user declined this call (approval %d); it did not run. Do not retry it; ask the user what to do instead.", id))
}

func deny(code, reason string) gate.Decision {
	return gate.Decision{Verdict: gate.Deny, Code: code, Reason: reason}
}

// capabilities serves request_capability for one session.
type capabilities struct{ v reqView }

func (c capabilities) RequestCapability(ctx context.Context, r builtin.CapabilityRequest) *mcp.CallToolResult {
	s := c.v.s
	if s.ledger == nil {
		return builtin.Refusal(gate.CodeApprovalUnavailable, "quiver runs without a state dir here, so it cannot record grants.")
	}
	a := gate.Approval{Session: c.v.ss.key, Capability: r.Capability}
	what := r.Capability
	if r.Path != "" {
		p := filepath.Clean(r.Path)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real // the fence compares resolved paths
		}
		a.Path = p
		what += fmt.Sprintf(" for %q and what is under it", p)
	} else {
		a.Tool = r.Tool
		what += " for " + a.Tool
	}
	// quiver's card says what is asked; the reason is the model's, filed
	// and shown apart from it.
	cd := approvalCard{Quiver: fmt.Sprintf("quiver: the model asks for %s.", what), Model: r.Reason}
	a.Reason, a.Justification = c.v.redacted(cd.Quiver), c.v.redacted(cd.Model)
	id, err := s.ledger.CreateApproval(ctx, a)
	if err != nil {
		return builtin.Refusal(gate.CodeLedger, err.Error())
	}
	a.ID = id
	if prev, err := s.ledger.Approval(ctx, id); err == nil && prev.State == gate.Denied {
		return builtin.Refusal(gate.CodeApprovalDenied, fmt.Sprintf("The user declined this request (approval %d). Do not ask again; ask the user what to do instead.", id))
	}
	elicit := canElicit(ctx)
	if !elicit && !s.opts.ApprovalPage {
		return builtin.Refusal(gate.CodeApprovalUnavailable, fmt.Sprintf(
			"This host cannot show approval cards: ask the user to run `quiver approve %d --session` in a terminal; then go ahead.", id))
	}
	ans, err := c.v.ask(ctx, cd, id, elicit)
	if errors.Is(err, context.DeadlineExceeded) {
		return builtin.Refusal(gate.CodeApprovalTimeout, "The user did not answer in time; nothing was granted. Ask the user before asking again.")
	}
	if err != nil {
		return builtin.Refusal(gate.CodeApprovalUnavailable, fmt.Sprintf("quiver could not show the request (%v): ask the user to run `quiver approve %d --session` in a terminal.", err, id))
	}
	if ans == answerDismissed {
		return builtin.Refusal(gate.CodeApprovalDenied, "The user closed the request without choosing; nothing was granted. Ask the user before asking again.")
	}
	if ans == answerNone {
		s.resolve(ctx, a, false, gate.Once)
		return builtin.Refusal(gate.CodeApprovalDenied, "The user did not grant "+what+". Do not ask again for the same thing; ask the user what to do instead.")
	}
	lifetime := gate.Once
	if ans == answerSession {
		lifetime = gate.ForSession
	}
	s.resolve(ctx, a, true, lifetime)
	return mcp.NewToolResultText(fmt.Sprintf("Granted: %s (%s). Go ahead.", what, lifetime))
}

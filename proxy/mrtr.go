package proxy

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/gate"
)

// Protocol 2026-07-28 replaced server-to-client requests with input
// requests (SEP-2322): a tools/call answers "input required" with what it
// needs, and the host calls again with the answers. For such a host an
// approval card is an input request: the first round files the request in
// the ledger and returns the card with a sealed state; the retry carries
// the person's answer and the state back, and quiver decides as it would
// after an elicitation. Hosts on 2025-11-25 keep the synchronous
// elicitation in approval.go.
//
// The state is sealed (AES-GCM, a key that lives as long as the process)
// and names the call it belongs to: the session key, the tool, the
// arguments' digest, the approval, an expiry and a nonce that is used up
// on its first use. A host cannot forge it, replay it, or carry an answer
// over to another call. A client without a session (2026-07-28 over HTTP)
// is known by nothing else; for it the sealed session key is what ties
// the retry to the first round.

// cardInput is the id of quiver's approval card among a round's input
// requests.
const cardInput = "quiver/approve"

// rtKey carries the host's answers to a previous round through the
// builtins (call_tool, read_file) to approve.
type rtKey struct{}

func withRoundTrip(ctx context.Context, p mcp.MultiRoundTripParams) context.Context {
	if p.RequestState == "" && len(p.InputResponses) == 0 {
		return ctx
	}
	return context.WithValue(ctx, rtKey{}, p)
}

func roundTrip(ctx context.Context) mcp.MultiRoundTripParams {
	p, _ := ctx.Value(rtKey{}).(mcp.MultiRoundTripParams)
	return p
}

// Kinds of sealed state.
const (
	stateCard    = ""  // an approval card
	stateParking = "p" // a parked downstream call (park.go)
)

// sealed is what a state quiver hands a 2026-07-28 host says.
type sealed struct {
	Kind     string `json:"k,omitempty"`
	Parking  string `json:"p,omitempty"`
	Session  string `json:"s"`
	Tool     string `json:"t"`
	Digest   string `json:"d"`
	Approval int64  `json:"a"`
	Expires  int64  `json:"e"`
	Nonce    string `json:"n"`
}

// seal keeps card states: the key they are sealed with and the nonces
// already used.
type seal struct {
	aead cipher.AEAD
	mu   sync.Mutex
	used map[string]time.Time // nonce -> expiry
}

func newSeal() *seal {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	return &seal{aead: aead, used: map[string]time.Time{}}
}

func (s *seal) close(v sealed) string {
	b, _ := json.Marshal(v)
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, b, []byte("quiver-card")))
}

var errBadState = errors.New("the approval state is not one quiver issued, or has expired")

// open reads a state, checks its expiry and uses up its nonce.
func (s *seal) open(state string, now time.Time) (sealed, error) {
	v, err := s.read(state, now)
	if err != nil {
		return v, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for n, e := range s.used {
		if now.After(e) {
			delete(s.used, n)
		}
	}
	if _, dup := s.used[v.Nonce]; dup {
		return v, fmt.Errorf("%w: it was used already", errBadState)
	}
	s.used[v.Nonce] = time.Unix(v.Expires, 0)
	return v, nil
}

// read reads a state and checks its expiry, leaving its nonce unused.
func (s *seal) read(state string, now time.Time) (sealed, error) {
	var v sealed
	b, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil || len(b) < s.aead.NonceSize() {
		return v, errBadState
	}
	plain, err := s.aead.Open(nil, b[:s.aead.NonceSize()], b[s.aead.NonceSize():], []byte("quiver-card"))
	if err != nil || json.Unmarshal(plain, &v) != nil {
		return v, errBadState
	}
	if now.After(time.Unix(v.Expires, 0)) {
		return v, errBadState
	}
	return v, nil
}

// hostCaps are the capabilities the host declared for this request: per
// request on 2026-07-28, per session before.
func hostCaps(ctx context.Context) mcp.ClientCapabilities {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		if info.ClientCapabilities != nil {
			return *info.ClientCapabilities
		}
		return mcp.ClientCapabilities{}
	}
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return clientCaps(cs)
	}
	return mcp.ClientCapabilities{}
}

// approveByInput is approve for a 2026-07-28 host: the first round
// returns the card as an input request; the retry decides.
func (v reqView) approveByInput(ctx context.Context, call gate.Call, d gate.Decision, callID int64) (gate.Decision, *mcp.CallToolResult) {
	rt := roundTrip(ctx)
	if rt.RequestState != "" {
		return v.answered(ctx, call, d, callID, rt)
	}
	s, ss := v.s, v.ss
	if hostCaps(ctx).Elicitation == nil && s.opts.ApprovalPage && s.ledger != nil {
		// No card in the host, but one on the operator page: the call
		// waits for it there, as an older host's does.
		pending, _ := v.file(ctx, call, d)
		if pending.State == gate.Denied {
			return declinedBefore(pending.ID), nil
		}
		return v.waitForAnswer(ctx, call, d, callID, pending), nil
	}
	if hostCaps(ctx).Elicitation == nil {
		return deny(gate.CodeApprovalUnavailable, d.Reason+" This host declared no elicitation, so quiver cannot show it an approval card; the call did not run. "+ss.terminalHint(0)), nil
	}
	pending, err := v.file(ctx, call, d)
	if err != nil || pending.ID == 0 {
		return deny(gate.CodeApprovalUnavailable, d.Reason+" quiver has no ledger to file the request in; the call did not run."), nil
	}
	if pending.State == gate.Denied {
		return declinedBefore(pending.ID), nil
	}
	state := s.seal.close(sealed{Session: ss.key, Tool: call.Name, Digest: d.Digest, Approval: pending.ID,
		Expires: s.opts.Now().Add(v.approvalTimeout()).Unix(), Nonce: newRunID()})
	return d, server.NewInputRequestBuilder(state).Elicit(cardInput, cardParams(card(call.Name, d))).ToolResult()
}

// answered decides the retry of a call whose card the host showed.
func (v reqView) answered(ctx context.Context, call gate.Call, d gate.Decision, callID int64, rt mcp.MultiRoundTripParams) (gate.Decision, *mcp.CallToolResult) {
	ss := v.ss
	st, err := v.s.seal.open(rt.RequestState, v.s.opts.Now())
	if err == nil && (st.Kind != stateCard || st.Tool != call.Name || st.Digest != d.Digest || (st.Session != ss.key && !ss.ephemeral)) {
		err = fmt.Errorf("%w: it belongs to another call", errBadState)
	}
	if err != nil {
		return deny(gate.CodeApprovalUnavailable, fmt.Sprintf("%s (%v); call again without requestState to be asked again.", d.Reason, err)), nil
	}
	if ss.ephemeral {
		// The sealed key is the one the request was filed under: the
		// retry of a client without a session is that client's.
		ss.key, call.Session = st.Session, st.Session
	}
	pending := gate.Approval{ID: st.Approval}
	res := server.ElicitationResponse(rt.InputResponses, cardInput)
	a := answerNone
	switch {
	case res == nil:
		return deny(gate.CodeApprovalUnavailable, "The host sent no answer to quiver's approval card; the call did not run. Call again without requestState to be asked again."), nil
	case res.Action == mcp.ElicitationResponseActionCancel:
		a = answerDismissed
	case res.Action == mcp.ElicitationResponseActionAccept:
		content, _ := res.Content.(map[string]any)
		switch content["decision"] {
		case "allow_once":
			a = answerOnce
		case "allow_session":
			a = answerSession
		}
	}
	return v.decided(ctx, call, d, callID, pending, a), nil
}

// cardParams is the elicitation an approval card is: the text and the
// three choices.
func cardParams(c approvalCard) mcp.ElicitationParams {
	return mcp.ElicitationParams{
		Message: c.String(),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"decision": map[string]any{
					"type":        "string",
					"title":       "Decision",
					"enum":        []string{"allow_once", "allow_session", "deny"},
					"enumNames":   []string{"Allow once", "Allow for this session", "Deny"},
					"description": "Allow once lets this exact call run. Allow for this session grants what the card's last line says, to every tool of this session, until it ends.",
				},
			},
			"required": []string{"decision"},
		},
	}
}

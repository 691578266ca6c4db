package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/gate"
)

// A downstream server may need input in the middle of a call: it sends
// elicitation/create, sampling/createMessage or roots/list (a server on
// 2025-11-25), or answers "input required" (a server on 2026-07-28, which
// mcp-go's client turns into the same handler calls). A host on
// 2025-11-25 is asked at once (relay_asks.go). A host on 2026-07-28 cannot be
// asked in the middle of a call: it must be answered "input required" and
// call again with the answers. So for such a host the downstream call is
// parked: it runs on in the background, each request it makes waits in
// the parking, the host's call returns the requests as input requests with
// a sealed state naming the parking, and the host's retry hands the
// answers in and waits again, until the downstream call ends. Nothing is
// forwarded twice, and the downstream never learns the host's protocol.

// parkKey carries a parking in the ctx of the downstream call it holds.
type parkKey struct{}

// A parking holds one downstream call for a host on 2026-07-28.
type parking struct {
	id      string
	session string // the session key of the call that parked
	tool    string
	digest  string
	d       gate.Decision
	ledger  int64
	cancel  context.CancelFunc
	done    chan parkedEnd // the downstream call's end; buffered

	mu     sync.Mutex
	next   int
	asks   map[string]*parkedAsk // by input request id, unanswered
	asked  map[string]bool       // sent to the host, not yet answered
	wake   chan struct{}         // a new ask came; buffered
	closed bool
}

type parkedAsk struct {
	req    mcp.InputRequest
	answer chan mcp.InputResponse // buffered
}

type parkedEnd struct {
	res forwarded
	err error
}

// settle is how long a parking waits after a first request for others
// the downstream sends at once (mcp-go's client answers a round's input
// requests concurrently), so that they reach the host in one round.
const settle = 20 * time.Millisecond

// ask files one request of the downstream call and waits for the host's
// answer.
func (p *parking) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	a := &parkedAsk{req: req, answer: make(chan mcp.InputResponse, 1)}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return mcp.InputResponse{}, errors.New("the host's call has ended")
	}
	p.next++
	id := fmt.Sprintf("d/%d", p.next)
	p.asks[id] = a
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	select {
	case r := <-a.answer:
		return r, nil
	case <-ctx.Done():
		p.mu.Lock()
		delete(p.asks, id)
		p.mu.Unlock()
		return mcp.InputResponse{}, ctx.Err()
	}
}

// pending are the asks not yet sent to the host; they are marked sent.
func (p *parking) pending() mcp.InputRequests {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := mcp.InputRequests{}
	for id, a := range p.asks {
		if !p.asked[id] {
			out[id] = a.req
			p.asked[id] = true
		}
	}
	return out
}

// answer hands the host's answers to the asks they are for; an ask the
// host did not answer is asked again in the next round.
func (p *parking) answer(resps mcp.InputResponses) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(p.asks)) {
		r, ok := resps[id]
		if !ok {
			delete(p.asked, id)
			continue
		}
		p.asks[id].answer <- r
		delete(p.asks, id)
		delete(p.asked, id)
	}
}

func (p *parking) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
}

// parkedCall forwards an allowed call for a host on 2026-07-28 and waits
// for its end or its first need of input.
func (v reqView) parkedCall(ctx context.Context, name string, d gate.Decision, id int64, meta *mcp.Meta) *mcp.CallToolResult {
	// The call outlives the request that started it: the host's retry is
	// another request. (It reads nothing of the view but the catalog,
	// which outlives the view's release.)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), v.callTimeout(name)+v.approvalTimeout())
	p := &parking{id: newRunID(), session: v.ss.key, tool: name, digest: d.Digest, d: d, ledger: id, cancel: cancel,
		done: make(chan parkedEnd, 1), asks: map[string]*parkedAsk{}, asked: map[string]bool{}, wake: make(chan struct{}, 1)}
	go func() {
		res, err := v.forward(context.WithValue(fctx, parkKey{}, p), name, d.Args, meta)
		releaseHold(fctx)
		p.done <- parkedEnd{res, err}
	}()
	return v.await(ctx, p)
}

// resumed hands a retry's answers to the parking its state names and
// waits again.
func (v reqView) resumed(ctx context.Context, name string, args json.RawMessage, st sealed) *mcp.CallToolResult {
	s, ss := v.s, v.ss
	s.parkMu.Lock()
	p := s.parked[st.Parking]
	delete(s.parked, st.Parking)
	s.parkMu.Unlock()
	if p == nil || p.tool != name || (p.session != ss.key && !ss.ephemeral) || p.session != st.Session {
		noteCode(ctx, gate.CodeInputLost)
		return refusal{deny(gate.CodeInputLost, "quiver holds no call waiting for these answers (it ended, timed out, or belongs to another call); call the tool again from the start.")}.result()
	}
	p.answer(roundTrip(ctx).InputResponses)
	return v.await(ctx, p)
}

// await waits for the parked call's end, or for input it needs: then it
// returns the host an input request with a state that names the parking.
func (v reqView) await(ctx context.Context, p *parking) *mcp.CallToolResult {
	s := v.s
	for {
		select {
		case end := <-p.done:
			p.close()
			return v.finish(ctx, p.tool, p.d, p.ledger, end.res, end.err)
		case <-p.wake:
			time.Sleep(settle)
			reqs := p.pending()
			if len(reqs) == 0 {
				continue
			}
			s.parkMu.Lock()
			s.parked[p.id] = p
			s.parkMu.Unlock()
			// Nobody may come back: the parking goes when its time is up.
			time.AfterFunc(v.approvalTimeout(), func() {
				s.parkMu.Lock()
				if s.parked[p.id] == p {
					delete(s.parked, p.id)
					p.close()
				}
				s.parkMu.Unlock()
			})
			state := s.seal.close(sealed{Kind: stateParking, Session: p.session, Tool: p.tool, Digest: p.digest, Parking: p.id,
				Expires: s.opts.Now().Add(v.approvalTimeout()).Unix(), Nonce: newRunID()})
			return &mcp.CallToolResult{Result: mcp.Result{ResultType: mcp.ResultTypeInputRequired},
				MultiRoundTripResult: mcp.MultiRoundTripResult{InputRequests: reqs, RequestState: state}}
		case <-ctx.Done():
			p.close()
			s.ended(p.ledger, gate.OutcomeCancelled, gate.CodeCancelled)
			return refusal{deny(gate.CodeCancelled, "The call was cancelled.")}.result()
		}
	}
}

// modernHost reports whether the request in ctx comes from a host on
// 2026-07-28, which takes input requests instead of being asked.
func modernHost(ctx context.Context) bool { return server.IsModernRequest(ctx) }

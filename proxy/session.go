package proxy

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/registry"
)

// A binding is a tool a search found for a session, and the turn it was
// (last) found in.
type binding struct {
	name string
	turn int    // the turn it was found or last found again in
	seq  uint64 // the later found, the higher; the lowest goes first
}

// session is what quiver remembers about one connected client.
// ephemeralPrefix starts the ledger key of every ephemeral session.
const ephemeralPrefix = "anon-"

type session struct {
	id string
	// key names the session to the gate and the ledger: the id plus this
	// process's run, since transports reuse ids (every stdio session is
	// "stdio") and a session grant must end with its session.
	key string

	mu       sync.Mutex
	turn     int
	explicit turnMark  // the host's last _meta["quiver/turn"]
	lastSeen time.Time // the last request or response
	modern   bool      // protocol 2026-07-28: tools/list never changes as a side effect
	// ephemeral is a session of one request, for a client that has no
	// session id: nothing it binds, grants or is granted outlives it.
	ephemeral bool
	found     []binding // in the order first found: a discovery only appends
	// lapsed says, per tool, why a binding it had ended (expired, pushed
	// out); a new binding clears it.
	lapsed map[string]string
	seq    uint64 // the last binding.seq given
	// slash is the slash command the user ran, and the turn it started;
	// it is in effect for that turn only.
	slash     *registry.Slash
	slashTurn int
	// search is the loop guard's memory of the last search.
	search builtin.LastSearch
	// listed is the surface the client last saw or was told changed; nil
	// until its first tools/list, so nothing is sent to a client that has
	// not looked yet.
	listed []string
	// surfaced describes the surface last logged.
	surfaced string
}

// A turnMark is a host's _meta["quiver/turn"]: its text (3 and "3" are
// the same mark) and, when the host sent a JSON number, its value.
type turnMark struct {
	text string
	n    int64
	num  bool
}

// maxTurnJump bounds how far one request can move the clock, so a host's
// counter that jumps to 2^62 does not overflow it.
const maxTurnJump = 1 << 20

// advance moves the turn clock, in this order of trust: an explicit turn
// from the host (a new string starts one turn; a number that grew from
// the last number starts as many turns as it grew, so bindings made at 3
// are gone at 6 when the host counts 3, 7; the same value never moves
// it); else a user action (a slash command); else an idle gap of at least
// idle since the last request or response. It reports whether the turn
// changed.
func (ss *session) advance(mark turnMark, user bool, now time.Time, idle time.Duration) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	prev := ss.turn
	switch {
	case mark.text != "":
		if mark.text != ss.explicit.text {
			step := 1
			if mark.num && ss.explicit.num && mark.n > ss.explicit.n {
				step = int(min(mark.n-ss.explicit.n, maxTurnJump))
			}
			ss.explicit = mark
			ss.turn += step
		}
	case user:
		ss.turn++
	case !ss.lastSeen.IsZero() && idle > 0 && now.Sub(ss.lastSeen) >= idle:
		ss.turn++
	}
	ss.lastSeen = now
	return ss.turn != prev
}

// touch records a response: the idle gap counts from the last one.
func (ss *session) touch(now time.Time) {
	ss.mu.Lock()
	if now.After(ss.lastSeen) {
		ss.lastSeen = now
	}
	ss.mu.Unlock()
}

// bind records names, in rank order, as found in the current turn and
// returns those bound. A binding still alive is refreshed in place (its
// position does not move, so the listed order stays append-only); an
// expired one is dropped first, so finding it again appends it as the
// discovery it is. At most max stay, the newest kept: the one found or
// refreshed longest ago goes first, and within one answer the lowest
// ranked. When evict is false the new names only take free places.
func (ss *session) bind(names []string, max, turns int, evict bool) []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.found = slices.DeleteFunc(ss.found, func(b binding) bool {
		if ss.turn >= b.turn+turns {
			ss.lapse(b.name, fmt.Sprintf("its binding from turn %d expired after %d turns", b.turn, turns))
			return true
		}
		return false
	})
	for _, n := range names {
		delete(ss.lapsed, n)
		if i := slices.IndexFunc(ss.found, func(b binding) bool { return b.name == n }); i >= 0 {
			ss.found[i].turn = ss.turn
			continue
		}
		if !evict && len(ss.found) >= max {
			continue
		}
		ss.found = append(ss.found, binding{name: n, turn: ss.turn})
	}
	for k := len(names) - 1; k >= 0; k-- {
		if i := slices.IndexFunc(ss.found, func(b binding) bool { return b.name == names[k] }); i >= 0 {
			ss.seq++
			ss.found[i].seq = ss.seq
		}
	}
	for len(ss.found) > max {
		oldest := 0
		for i, b := range ss.found {
			if b.seq < ss.found[oldest].seq {
				oldest = i
			}
		}
		ss.lapse(ss.found[oldest].name, fmt.Sprintf("newer search results took its place (at most %d tools stay bound)", max))
		ss.found = slices.Delete(ss.found, oldest, oldest+1)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if slices.ContainsFunc(ss.found, func(b binding) bool { return b.name == n }) {
			out = append(out, n)
		}
	}
	return out
}

// bound lists the live bindings, oldest first. A binding found in turn t
// lives through turn t+turns-1.
func (ss *session) bound(turns int) []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out []string
	for _, b := range ss.found {
		if ss.turn < b.turn+turns {
			out = append(out, b.name)
		}
	}
	return out
}

func (ss *session) currentTurn() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.turn
}

func (ss *session) isBound(name string, turns int) bool {
	return slices.Contains(ss.bound(turns), name)
}

// lapse remembers why a binding ended, for the refusal of a later call
// (a model told "not available yet" of a tool it used a turn ago is
// misled). ss.mu is held.
func (ss *session) lapse(name, why string) {
	if ss.lapsed == nil {
		ss.lapsed = map[string]string{}
	}
	ss.lapsed[name] = why
}

// lapsedWhy says why name, once bound in this session, is bound no more;
// "" when it never was, or is bound now.
func (ss *session) lapsedWhy(name string, turns int) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, b := range ss.found {
		if b.name == name {
			if ss.turn >= b.turn+turns {
				return fmt.Sprintf("its binding from turn %d expired after %d turns", b.turn, turns)
			}
			return ""
		}
	}
	return ss.lapsed[name]
}

// startSlash puts a slash command in effect for the current turn.
func (ss *session) startSlash(sl *registry.Slash) {
	ss.mu.Lock()
	ss.slash, ss.slashTurn = sl, ss.turn
	ss.mu.Unlock()
}

// activeSlash is the slash command in effect this turn, or nil.
func (ss *session) activeSlash() *registry.Slash {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.slash == nil || ss.slashTurn != ss.turn {
		return nil
	}
	return ss.slash
}

// Recall gives the loop guard the session's last search (builtin.SearchMemory).
func (ss *session) Recall(f func(turn int, last *builtin.LastSearch)) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	f(ss.turn, &ss.search)
}

// forgetSearch resets the loop guard: after a catalog change the same
// search may find something new.
func (ss *session) forgetSearch() {
	ss.mu.Lock()
	ss.search = builtin.LastSearch{}
	ss.mu.Unlock()
}

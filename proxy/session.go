package proxy

import (
	"slices"
	"sync"
	"time"
)

// A binding is a tool a search found for a session, and the turn it was
// (last) found in.
type binding struct {
	name string
	turn int
}

// session is what quiver remembers about one connected client.
type session struct {
	id string

	mu       sync.Mutex
	turn     int
	explicit string // the host's last _meta["quiver/turn"]
	lastSeen time.Time
	modern   bool      // protocol 2026-07-28: tools/list never changes as a side effect
	found    []binding // in the order first found: a discovery only appends
	// listed is the surface the client last saw or was told changed; nil
	// until its first tools/list, so nothing is sent to a client that has
	// not looked yet.
	listed []string
}

// advance moves the turn clock: an explicit turn from the host wins; else an
// idle gap of at least idle since the last request starts a new turn.
// It reports whether the turn changed.
func (ss *session) advance(explicit string, now time.Time, idle time.Duration) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	prev := ss.turn
	switch {
	case explicit != "":
		// Any new value the host sends (a number or an id) is a new turn.
		if explicit != ss.explicit {
			ss.explicit = explicit
			ss.turn++
		}
	case !ss.lastSeen.IsZero() && idle > 0 && now.Sub(ss.lastSeen) >= idle:
		ss.turn++
	}
	ss.lastSeen = now
	return ss.turn != prev
}

// bind records names as found in the current turn, keeping at most max;
// a name found again is refreshed in place (its position in the list does
// not move, so the listed order stays append-only).
func (ss *session) bind(names []string, max int) []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, n := range names {
		if i := slices.IndexFunc(ss.found, func(b binding) bool { return b.name == n }); i >= 0 {
			ss.found[i].turn = ss.turn
			continue
		}
		ss.found = append(ss.found, binding{name: n, turn: ss.turn})
	}
	for len(ss.found) > max {
		// Evict the binding found longest ago; ties go to the earliest.
		oldest := 0
		for i, b := range ss.found {
			if b.turn < ss.found[oldest].turn {
				oldest = i
			}
		}
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

package gate

import (
	"slices"
	"sync"
)

// maxBudgetEntries bounds the correction-budget table. Each (session, tool)
// keeps only its latest turn, and past this many pairs the oldest half is
// dropped: forgetting an old count can only give a model one more
// correction round, never let a call through.
const maxBudgetEntries = 8192

// budget counts refused argument rounds per (session, tool, turn).
type budget struct {
	mu  sync.Mutex
	seq uint64
	m   map[budgetKey]*budgetEntry
}

type budgetKey struct{ session, tool string }

type budgetEntry struct {
	turn    int
	refused int
	seq     uint64 // last touched, for eviction
}

// refuse records one refused round and returns how many the (session,
// tool) pair has had in this turn, this one included. A new turn starts the
// count over.
func (b *budget) refuse(session, tool string, turn int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[budgetKey]*budgetEntry)
	}
	b.seq++
	k := budgetKey{session, tool}
	e := b.m[k]
	if e == nil {
		if len(b.m) >= maxBudgetEntries {
			b.evictLocked()
		}
		e = &budgetEntry{turn: turn}
		b.m[k] = e
	}
	if e.turn != turn {
		e.turn, e.refused = turn, 0
	}
	e.refused++
	e.seq = b.seq
	return e.refused
}

func (b *budget) evictLocked() {
	seqs := make([]uint64, 0, len(b.m))
	for _, e := range b.m {
		seqs = append(seqs, e.seq)
	}
	slices.Sort(seqs)
	cut := seqs[len(seqs)/2]
	for k, e := range b.m {
		if e.seq <= cut {
			delete(b.m, k)
		}
	}
}

func (b *budget) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}

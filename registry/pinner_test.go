package registry

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// memPins is a PinStore in memory, shaped like the ledger's.
type memPins struct {
	mu      sync.Mutex
	defs    map[string]Definition
	pins    map[pinKey][]string // history
	holds   map[pinKey]string
	reject  map[pinKey]bool
	version int64
	fail    error
}

func newMemPins() *memPins {
	return &memPins{defs: map[string]Definition{}, pins: map[pinKey][]string{}, holds: map[pinKey]string{}, reject: map[pinKey]bool{}}
}

func (m *memPins) Pins(_ context.Context, server string) (map[string]string, map[string]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, nil, m.fail
	}
	pinned, held := map[string]string{}, map[string]string{}
	for k, h := range m.pins {
		if k.server == server {
			pinned[k.tool] = h[len(h)-1]
		}
	}
	for k, d := range m.holds {
		if k.server == server {
			held[k.tool] = d
		}
	}
	return pinned, held, nil
}

func (m *memPins) Definition(_ context.Context, digest string) (Definition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.defs[digest], nil
}

func (m *memPins) Pin(_ context.Context, server, tool string, d Definition, how string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := pinKey{server, tool}
	if h := m.pins[k]; how == PinnedFirstSight && len(h) > 0 {
		return h[len(h)-1], nil
	}
	m.defs[d.Digest()] = d
	m.pins[k] = append(m.pins[k], d.Digest())
	m.version++
	return d.Digest(), nil
}

func (m *memPins) Hold(_ context.Context, server, tool string, d Definition) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := pinKey{server, tool}
	m.defs[d.Digest()] = d
	if m.holds[k] != d.Digest() {
		m.reject[k] = false
	}
	m.holds[k] = d.Digest()
	return m.reject[k], nil
}

func (m *memPins) Unhold(_ context.Context, server, tool string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.holds, pinKey{server, tool})
	return nil
}

func (m *memPins) Version(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.version, nil
}

func toolWith(name, desc string) Tool {
	t := Tool{Name: name, Description: desc}
	t.Digest = t.Definition().Digest()
	return t
}

func TestPinner(t *testing.T) {
	mode := PinStrict
	store := newMemPins()
	p := newPinner(Options{Pins: store, Pinning: func(string) string { return mode }}, slog.New(slog.DiscardHandler))
	check := func(tools ...Tool) []Tool {
		p.check("s", tools)
		return tools
	}
	v1, v2 := toolWith("a", "one"), toolWith("a", "two")
	if got := check(v1, toolWith("b", "sibling")); got[0].Held != nil || got[1].Held != nil {
		t.Fatal("first sight held a tool")
	}
	got := check(v2, toolWith("b", "sibling"))
	if got[0].Held == nil || got[1].Held != nil {
		t.Fatalf("held: %v %v; want only the changed tool", got[0].Held, got[1].Held)
	}
	if got[0].Held.Pinned.Description != "one" || got[0].Held.Diff.Summary() != "description changed" {
		t.Fatalf("hold = %+v", got[0].Held)
	}
	if store.holds[pinKey{"s", "a"}] != v2.Digest {
		t.Fatal("the held definition is not in the store")
	}
	// Gone and back unchanged: not held; back to the pinned one: the hold
	// is forgotten.
	check(toolWith("b", "sibling"))
	if got := check(v1); got[0].Held != nil {
		t.Fatal("the pinned definition, served again, is held")
	}
	if _, ok := store.holds[pinKey{"s", "a"}]; ok {
		t.Fatal("the store still holds a tool that offers its pinned definition")
	}

	t.Run("an accept elsewhere is followed", func(t *testing.T) {
		if got := check(v2); got[0].Held == nil {
			t.Fatal("not held")
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		changed := make(chan struct{}, 1)
		done := make(chan struct{})
		go func() { defer close(done); p.follow(ctx, 10*time.Millisecond, func() { changed <- struct{}{} }) }()
		time.Sleep(30 * time.Millisecond)
		if _, err := store.Pin(ctx, "s", "a", v2.Definition(), PinnedAccepted); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatal("follow never saw the accept")
		}
		cancel()
		<-done
		if got := check(v2); got[0].Held != nil {
			t.Fatal("still held after the accept")
		}
	})
	t.Run("warn accepts and off ignores", func(t *testing.T) {
		mode = PinWarn
		v3 := toolWith("a", "three")
		if got := check(v3); got[0].Held != nil {
			t.Fatal("pinning: warn held a change")
		}
		if h := store.pins[pinKey{"s", "a"}]; h[len(h)-1] != v3.Digest {
			t.Fatal("pinning: warn did not pin the change")
		}
		mode = PinOff
		n := len(store.pins[pinKey{"s", "a"}])
		if got := check(toolWith("a", "four"), toolWith("new", "x")); got[0].Held != nil || len(store.pins[pinKey{"s", "a"}]) != n || len(store.pins[pinKey{"s", "new"}]) != 0 {
			t.Fatal("pinning: off pinned or held")
		}
	})
	t.Run("a store that fails leaves tools unchecked", func(t *testing.T) {
		mode = PinStrict
		q := newPinner(Options{Pins: &memPins{fail: errors.New("disk gone")}}, slog.New(slog.DiscardHandler))
		tools := []Tool{toolWith("a", "x")}
		q.check("s", tools)
		if tools[0].Held != nil {
			t.Fatal("held without a store")
		}
	})
}

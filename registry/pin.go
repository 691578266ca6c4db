package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Pinning modes: policy.pinning, and a server entry's pinning: (which wins).
const (
	// PinStrict (the default) holds a changed definition until a person
	// accepts it.
	PinStrict = "strict"
	// PinWarn accepts a changed definition at once and logs the diff.
	PinWarn = "warn"
	// PinOff neither pins nor compares.
	PinOff = "off"
)

// How a definition came to be pinned (the ledger's history says).
const (
	PinnedFirstSight = "first_sight" // the server was configured: consent to its tools as they were
	PinnedAccepted   = "accepted"    // a person accepted a change
	PinnedAuto       = "auto"        // pinning: warn accepted it
)

// A Definition is what a tool says of itself, and so what a person
// consents to when a server is configured: its name, title, description,
// input and output schema, and annotations. Pinning compares its digest.
type Definition struct {
	Name         string             `json:"name"`
	Title        string             `json:"title,omitempty"`
	Description  string             `json:"description,omitempty"`
	InputSchema  json.RawMessage    `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage    `json:"outputSchema,omitempty"`
	Annotations  mcp.ToolAnnotation `json:"annotations"`
}

// Definition is the tool's definition as its server sent it.
func (t Tool) Definition() Definition {
	return Definition{Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations}
}

// Canonical is d as canonical JSON (canonJSON): object keys sorted, no
// insignificant space, no HTML escaping, each number exactly, in one
// spelling (1, 1.0 and 1e0 are all 1). Two definitions that mean the
// same JSON have the same bytes, so a server that re-serializes its
// schema is not held for it; a key given twice is kept twice, so a
// definition that hides a second reading is not the same.
func (d Definition) Canonical() []byte {
	raw, err := json.Marshal(d)
	if err != nil {
		// Only a schema that is not JSON gets here.
		return raw
	}
	out, _, err := canonJSON(raw)
	if err != nil {
		return raw
	}
	return out
}

// Digest is the SHA-256 of d's canonical JSON, written "sha256:<hex>".
func (d Definition) Digest() string { return DigestOf(d.Canonical()) }

// DigestOf is the digest of canonical bytes (Definition.Canonical).
func DigestOf(canon []byte) string {
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseDefinition reads a definition stored as JSON (Canonical).
func ParseDefinition(b []byte) (Definition, error) {
	var d Definition
	if err := json.Unmarshal(b, &d); err != nil {
		return Definition{}, fmt.Errorf("stored tool definition: %w", err)
	}
	return d, nil
}

// A Hold is why a tool is withheld: the definition its server offers now
// differs from the one pinned, and no person has accepted it yet.
type Hold struct {
	Pinned Definition // what was consented to
	Diff   Diff       // from Pinned to what the server offers now
	// Rejected is true when a person looked and said no (quiver tools
	// reject); the tool stays held.
	Rejected bool
}

// A PinStore keeps pinned definitions, their history and the held ones:
// quiver's ledger, shared by every quiver process. Each method is one
// transaction, safe to call from several processes at once.
type PinStore interface {
	// Pins returns the digest pinned now for each of server's tools that
	// has one, and the digest held for each tool that has a held
	// definition.
	Pins(ctx context.Context, server string) (pinned, held map[string]string, err error)
	// Definition returns the definition stored under digest.
	Definition(ctx context.Context, digest string) (Definition, error)
	// Pin pins d for server's tool, how saying why. PinnedFirstSight pins
	// only when nothing is pinned yet (another process may have pinned
	// first); it returns the digest pinned after it.
	Pin(ctx context.Context, server, tool string, d Definition, how string) (string, error)
	// Hold records d as server's tool's held definition, and says whether
	// a person has already rejected exactly d.
	Hold(ctx context.Context, server, tool string, d Definition) (rejected bool, err error)
	// Unhold forgets a held definition: the tool offers its pinned one again.
	Unhold(ctx context.Context, server, tool string) error
	// Version changes whenever a pin is added or a hold rejected, by any
	// process.
	Version(ctx context.Context) (int64, error)
}

// pinner compares what servers offer with what is pinned. It caches the
// store's pins per server and drops the cache when the store's Version
// moves, so a build costs no queries while nothing changes.
type pinner struct {
	store PinStore
	mode  func(server string) string
	judge Judge
	log   *slog.Logger

	mu      sync.Mutex
	loaded  map[string]bool
	pinned  map[pinKey]string
	held    map[pinKey]heldTool // what this process holds, by tool
	version int64
}

// pinKey names a tool as pins and holds know it: its server and PinName.
type pinKey struct{ server, tool string }

// PinName is the name a tool is pinned and held under: its raw name as
// sanitizing makes it, the name the model, the toggles, grants and slash
// commands know it by (ExposedName). Two raw names that expose as one
// ("list_notes", "list.notes") are one tool to pinning too, so a server
// cannot get round a pin by renaming: the other raw name is a change of
// the pinned tool (its Definition's name differs), not a first sight.
func PinName(raw string) string { return sanitize(raw) }

type heldTool struct {
	digest string
	hold   *Hold
}

// storeTimeout bounds one ledger operation of pinning.
const storeTimeout = 10 * time.Second

func newPinner(opts Options, log *slog.Logger) *pinner {
	if opts.Pins == nil {
		return nil
	}
	mode := opts.Pinning
	if mode == nil {
		mode = func(string) string { return PinStrict }
	}
	return &pinner{store: opts.Pins, mode: mode, judge: opts.Judge, log: log,
		loaded: map[string]bool{}, pinned: map[pinKey]string{}, held: map[pinKey]heldTool{}}
}

// check pins server's tools on first sight and marks those whose
// definition differs from their pin Held (pinning: strict) or pins the new
// one (pinning: warn). It is the one place a tool list enters the catalog,
// so the index, binding, listing and calls all see the same held tools.
// A store that fails leaves tools as they are and logs it: pinning
// cannot then be judged, and a ledger that fails fails calls loudly too.
func (p *pinner) check(server string, tools []Tool) {
	if p == nil || len(tools) == 0 {
		return
	}
	mode := p.mode(server)
	if mode == PinOff {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loaded[server] {
		pinned, held, err := p.store.Pins(ctx, server)
		if err != nil {
			p.log.Error("pinning: reading the pinned definitions failed; tools are offered unchecked", "server", server, "err", err)
			return
		}
		for tool, d := range pinned {
			// PinName again: a ledger written before pins were keyed by it
			// may hold raw names.
			p.pinned[pinKey{server, PinName(tool)}] = d
		}
		for tool := range held {
			// Held by an earlier run: this one judges (and logs) it afresh,
			// and forgets it if the server offers its pinned definition.
			if _, ok := p.held[pinKey{server, PinName(tool)}]; !ok {
				p.held[pinKey{server, PinName(tool)}] = heldTool{}
			}
		}
		p.loaded[server] = true
	}
	// Adding a server is consent to its tools as they are then: its first
	// list is pinned as it comes. A tool it offers after that was never
	// consented to, and is held as a new tool until a person accepts it.
	consented := false
	for k := range p.pinned {
		if k.server == server {
			consented = true
			break
		}
	}
	names := map[string]int{}
	for _, t := range tools {
		names[PinName(t.Name)]++
	}
	for i := range tools {
		t := &tools[i]
		name := PinName(t.Name)
		k := pinKey{server, name}
		if names[name] > 1 && p.pinned[k] != t.Digest {
			// Two raw names of one list that pin as one: the one that is
			// exactly what was pinned (its raw name is in the digest) is
			// judged as always; any other is held as new, never accepted,
			// and takes no name from it (Registry.build: a held
			// definition has no effect until accepted). When none is
			// the pinned one, none is offered (the catalog reports the
			// collision when their exposed names are one).
			t.Held = &Hold{Diff: Diff{{Kind: ChangeName, New: t.Name,
				Flag: "its server offers two tools under this name once names are limited to [A-Za-z0-9_-]"}}}
			continue
		}
		pin, ok := p.pinned[k]
		if !ok && !consented {
			d, err := p.store.Pin(ctx, server, name, t.Definition(), PinnedFirstSight)
			if err != nil {
				p.log.Error("pinning: pinning a new tool failed", "server", server, "tool", t.Name, "err", err)
				continue
			}
			pin = d
			p.pinned[k] = d
		}
		if pin == t.Digest {
			if _, was := p.held[k]; was {
				if err := p.store.Unhold(ctx, server, name); err != nil {
					p.log.Error("pinning: forgetting a held definition failed", "server", server, "tool", t.Name, "err", err)
				}
				delete(p.held, k)
			}
			continue
		}
		prev := p.held[k]
		if prev.digest == t.Digest && prev.hold != nil {
			t.Held = prev.hold
			continue
		}
		var old Definition // a new tool: nothing pinned
		if pin != "" {
			var err error
			if old, err = p.store.Definition(ctx, pin); err != nil {
				p.log.Error("pinning: reading a pinned definition failed; the tool is held", "server", server, "tool", t.Name, "err", err)
			}
		}
		diff := DiffDefinitions(old, t.Definition(), p.judge)
		if mode == PinWarn {
			if d, err := p.store.Pin(ctx, server, name, t.Definition(), PinnedAuto); err != nil {
				p.log.Error("pinning: accepting a changed definition failed", "server", server, "tool", t.Name, "err", err)
			} else {
				p.pinned[k] = d
			}
			p.log.Warn("tool definition changed; accepted (pinning: warn)", "server", server, "tool", t.Name, "diff", diff.Short())
			continue
		}
		rejected, err := p.store.Hold(ctx, server, name, t.Definition())
		if err != nil {
			p.log.Error("pinning: recording a held definition failed", "server", server, "tool", t.Name, "err", err)
		}
		t.Held = &Hold{Pinned: old, Diff: diff, Rejected: rejected}
		p.held[k] = heldTool{digest: t.Digest, hold: t.Held}
		if prev.digest == t.Digest {
			continue // told already; judged again after a pin or a reject
		}
		p.log.Warn("tool definition changed; the tool is held until a person accepts it (quiver tools changes)",
			"server", server, "tool", t.Name, "diff", diff.Short(), "flags", len(diff.Flags()))
	}
}

// follow polls the store's Version and, when another process (quiver
// tools accept or reject) or this one moved it, drops the cache and asks
// for a new catalog, so that an accept takes effect in a running quiver
// within a poll.
//
// Why polling the ledger: the ledger is the truth that every quiver
// process shares, and a query of one row every half second costs
// nothing. A signal needs the running quivers' pids (several may share
// one ledger, one per host) and does not exist on Windows; a touched
// file needs a second watcher and can be missed or be written without
// the ledger write it announces. A poll cannot miss a committed change.
func (p *pinner) follow(ctx context.Context, interval time.Duration, changed func()) {
	if p == nil {
		return
	}
	read := func() (int64, bool) {
		qctx, cancel := context.WithTimeout(ctx, storeTimeout)
		defer cancel()
		v, err := p.store.Version(qctx)
		return v, err == nil
	}
	if v, ok := read(); ok {
		p.mu.Lock()
		p.version = v
		p.mu.Unlock()
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		v, ok := read()
		if !ok {
			continue
		}
		p.mu.Lock()
		moved := v != p.version
		if moved {
			p.version = v
			clear(p.loaded)
			clear(p.pinned)
			for k, h := range p.held {
				p.held[k] = heldTool{digest: h.digest} // judged afresh: a reject changes the hold
			}
		}
		p.mu.Unlock()
		if moved {
			changed()
		}
	}
}

package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/index"
	"github.com/quiver-mcp/quiver/registry"
	"github.com/quiver-mcp/quiver/skills"
)

// snapshot is everything a request needs, swapped as one: a search never
// sees an index that disagrees with the catalog it was built from, and a
// call never sees a gate or a configuration other than the one installed
// with its catalog. A request takes it once, as a reqView (view.go).
type snapshot struct {
	cat   *registry.Catalog
	ix    searchIndex
	tools map[string]mcp.Tool // listed definitions, by exposed name
	// The configuration and gate in force, swapped with the catalog.
	*settings

	// refs counts the holders: the server while the snapshot is in force,
	// and every request that took it. The index closes when the count
	// drops to zero, so a search that began before a reload finishes on
	// the index it began with, and no index outlives its last reader.
	refs atomic.Int64
}

// searchIndex is what a snapshot needs of its index (an *index.Index).
type searchIndex interface {
	Search(ctx context.Context, q index.Query) (index.Result, error)
	Closest(text string, n int, kinds ...index.Kind) []string
	Close() error
}

// hold takes a reference, unless the last one is gone already.
func (st *snapshot) hold() bool {
	for {
		n := st.refs.Load()
		if n <= 0 {
			return false
		}
		if st.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release gives a reference back; the last one closes the index.
func (st *snapshot) release() {
	if st.refs.Add(-1) == 0 {
		_ = st.ix.Close()
	}
}

// acquire returns the snapshot in force with a reference held. held is
// false only after Close, when nothing will replace the released
// snapshot: then the request reads a catalog whose index is closed, and a
// search says so rather than waiting forever.
func (s *Server) acquire() (st *snapshot, held bool) {
	for {
		st = s.state.Load()
		if st.hold() {
			return st, true
		}
		// An install swaps the new snapshot in before it releases the
		// old one: an unchanged pointer means the server is closed.
		if s.state.Load() == st {
			return st, false
		}
	}
}

// catalogChanged is the registry's hook; the newest catalog wins.
func (s *Server) catalogChanged(cat *registry.Catalog) {
	s.pass.catalog(cat)
	if s.opts.OnCatalog != nil {
		s.opts.OnCatalog(cat)
	}
	for {
		select {
		case s.changes <- cat:
			return
		default:
		}
		select {
		case <-s.changes: // drop the stale one
		default:
		}
	}
}

func (s *Server) rebuildLoop(ctx context.Context) {
	regReady := s.reg.Ready()
	var pending *registry.Catalog
	var installed uint64
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case cat := <-s.changes:
			pending = cat
			timer.Reset(s.opts.Debounce)
		case <-regReady:
			regReady = nil
		case <-timer.C:
			if pending != nil {
				s.install(pending)
				installed = pending.Gen
				pending = nil
			}
		}
		if regReady == nil && installed >= s.reg.ReadyGen() {
			select {
			case <-s.ready:
			default:
				close(s.ready)
			}
		}
	}
}

// install builds the index and the listed definitions for cat, swaps them
// in, registers the tools with mcp-go, and tells sessions whose list changed.
func (s *Server) install(cat *registry.Catalog) {
	set := s.pending.Load()
	cfg := set.cfg
	entries := append(builtinEntries(s.builtinsFor(cfg)), skillEntries(set.skills)...)
	tools := map[string]mcp.Tool{}
	for _, t := range s.builtinsFor(cfg) {
		tools[t.Name] = t
	}
	var serverTools []server.ServerTool
	abouts := map[string]serverAbout{} // per server, once
	for _, t := range cat.Tools {
		redact := set.redact.Redact
		def := mcp.Tool{
			Name:           t.Exposed,
			Title:          redact(t.Title),
			Description:    redact(t.Description),
			RawInputSchema: redactSchema(t.InputSchema, redact),
			Annotations:    t.Annotations,
		}
		if len(t.OutputSchema) > 0 {
			// Listed as the server wrote it: a host checks structured
			// results against it, and bound keeps them valid.
			def.RawOutputSchema = redactSchema(t.OutputSchema, redact)
		}
		if a, ok := redactJSON(def.Annotations, redact, func(b json.RawMessage) (mcp.ToolAnnotation, error) {
			var out mcp.ToolAnnotation
			return out, json.Unmarshal(b, &out)
		}); ok {
			def.Annotations = a
		}
		if set.gate.ClassOf(gateToolFor(set, t)) == gate.ClassExecute {
			// The gate wants a justification for execution; the model can
			// only give one if the schema it reads has the field.
			def.RawInputSchema = gate.WithJustification(def.RawInputSchema) // redacted, as above
		}
		if err := mcp.ValidateParamHeaderAnnotations(&def); err != nil {
			// mcp-go panics on these; leave the tool out and say why.
			s.log.Error("tool left out: invalid header annotations", "server", t.Server, "tool", t.Name, "err", err)
			continue
		}
		if slices.Contains(cfg.Surface.AlwaysOn, t.Exposed) {
			def.Meta = alwaysLoad()
		}
		// A switched-off or held tool stays registered, so that a host
		// that cached it gets deny.withheld or deny.definition_changed
		// rather than "tool not found"; it is never listed (withheld) and
		// never found (not indexed).
		tools[t.Exposed] = def
		serverTools = append(serverTools, server.ServerTool{Tool: def, Handler: s.handleDirect})
		if t.Off || t.Held != nil {
			continue
		}
		about, ok := abouts[t.Server]
		if !ok {
			about = selfDescription(cat, s.pass, t.Server, redact)
			abouts[t.Server] = about
		}
		entries = append(entries, index.Entry{
			Name: t.Exposed, Kind: index.KindMCP, Server: t.Server, Title: cmp.Or(def.Title, def.Annotations.Title),
			Description: def.Description, Keywords: t.Keywords,
			Params:      index.ParamsFromSchema(t.InputSchema),
			ReadOnly:    t.Annotations.ReadOnlyHint != nil && *t.Annotations.ReadOnlyHint,
			ServerTitle: about.title, ServerInstructions: about.instructions, ServerExtras: about.extras,
		})
	}
	ix, err := index.Build(entries)
	if err != nil {
		s.log.Error("index build failed; keeping the previous index", "err", err)
		return
	}
	for _, b := range s.builtinsFor(cfg) {
		serverTools = append(serverTools, server.ServerTool{Tool: b, Handler: s.handleBuiltin})
	}
	// Never listed (the surface names it nowhere); awaitTool sends calls
	// of unknown names to it (startup.go).
	serverTools = append(serverTools, server.ServerTool{Tool: mcp.NewTool(unknownTool), Handler: s.handleUnknown})
	st := &snapshot{cat: cat, ix: ix, tools: tools, settings: set}
	st.refs.Store(1) // the server's, until the next install replaces it
	old := s.state.Swap(st)
	s.mcp.SetTools(serverTools...)
	if old != nil {
		// Requests in flight may still hold it: its index closes when the
		// last of them is done.
		old.release()
	}
	s.log.Debug("catalog installed", "gen", cat.Gen, "tools", len(cat.Tools))
	s.unbindSwitchedOff(cat)
	for _, ss := range s.allSessions() {
		ss.forgetSearch() // the new catalog may answer the same search differently
		s.notify(ss)
	}
	s.installed.signal()
}

func alwaysLoad() *mcp.Meta {
	return &mcp.Meta{AdditionalFields: map[string]any{"anthropic/alwaysLoad": true}}
}

// builtinTools are quiver's own tools, in the fixed order they are listed.
func builtinTools(reveal string) []mcp.Tool {
	out := []mcp.Tool{builtin.SearchToolsTool()}
	if reveal != registry.RevealList {
		out = append(out, builtin.CallToolTool())
	}
	out = append(out, builtin.ReadFileTool(), builtin.RequestCapabilityTool())
	for i := range out {
		out[i].Meta = alwaysLoad()
	}
	return out
}

// builtinsFor are quiver's own tools on this server's surface under cfg:
// none in transparent mode.
func (s *Server) builtinsFor(cfg *registry.Config) []mcp.Tool {
	if s.transparent {
		return nil
	}
	return builtinTools(cfg.Surface.Reveal)
}

// serverAbout is what a server says of itself, for search.
type serverAbout struct {
	title, instructions string
	extras              []string // its prompts' and resources' names and titles
}

// selfDescription gathers, redacted, what server srv said of itself in
// initialize and the names of the prompts and resources it offers.
func selfDescription(cat *registry.Catalog, m *mirror, srv string, redact func(string) string) serverAbout {
	var a serverAbout
	if st, ok := cat.Status(srv); ok {
		a.title, a.instructions = redact(st.Title), redact(st.Instructions)
	}
	v := m.offer(srv)
	if v == nil {
		return a
	}
	for _, p := range v.prompts {
		a.extras = append(a.extras, p.Name, p.Title)
	}
	for _, r := range v.resources {
		a.extras = append(a.extras, r.Name, r.Title)
	}
	for _, t := range v.templates {
		a.extras = append(a.extras, t.Name, t.Title)
	}
	return a
}

func builtinEntries(builtins []mcp.Tool) []index.Entry {
	var out []index.Entry
	for _, t := range builtins {
		out = append(out, index.Entry{Name: t.Name, Kind: index.KindCore, Description: t.Description,
			Params: index.ParamsFromSchema(t.RawInputSchema), ReadOnly: true})
	}
	return out
}

func skillEntries(lib *skills.Library) []index.Entry {
	var out []index.Entry
	for _, d := range lib.Docs() {
		kind := index.KindSkill
		if d.Kind == skills.KindReference {
			kind = index.KindReference
		}
		out = append(out, index.Entry{Name: d.Name, Kind: kind, Description: d.Description,
			Keywords: d.Keywords, Headings: d.Headings, Path: d.Path})
	}
	return out
}

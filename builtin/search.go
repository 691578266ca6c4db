package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/index"
)

// A Searcher runs searches over the tools the session may know about.
type Searcher interface {
	Search(ctx context.Context, q index.Query) (index.Result, error)
	Closest(text string, n int, kinds ...index.Kind) []string
}

// A Binder makes tools callable in the session that searched for them.
type Binder interface {
	// Bind binds the named tools and returns those it bound. The tools of a
	// weak answer (nothing matched well) only take free places: a guess
	// never pushes out a tool the model found before.
	Bind(names []string, weak bool) []string
}

// A SchemaSource returns a tool's input schema, for answers that carry the
// schemas of the tools they bind (so a host without the tools in its list
// can call them through call_tool without another round).
type SchemaSource interface {
	InputSchema(name string) (json.RawMessage, bool)
}

// A SlashGates says which tools are slash-gated: found and described by a
// search, never bound, run only through their slash command.
type SlashGates interface {
	// SlashFor returns the slash command a gated tool runs through.
	SlashFor(name string) (string, bool)
}

// SearchTool is search_tools with what it needs for one session. Index and
// Binder are required; a nil Schemas leaves schemas out of the answer, a
// nil Slash gates nothing, a nil Memory turns the loop guard off.
type SearchTool struct {
	Index   Searcher
	Binder  Binder
	Schemas SchemaSource
	Slash   SlashGates
	Memory  SearchMemory
	// Pending are the configured servers that are not up when the search
	// runs: their tools are missing from the answer, so it names them and
	// never says that no server can do it.
	Pending []PendingServer
}

// A PendingServer is a configured server whose tools a search could not
// see: still starting, or down and why.
type PendingServer struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"` // quiver's account
	// Said is what the server last wrote on stderr before it failed: its
	// words (and through files it reads, maybe a model's), never quiver's.
	// Only a search scoped to this server shows it, quoted and labelled;
	// every other answer leaves it out, so that no server's words ride
	// along in every answer (issue 22).
	Said string `json:"stderr,omitempty"`
	// SaidLabel says where Said came from ("its stderr ended", "its
	// error answer said"); "" reads as stderr.
	SaidLabel string `json:"-"`
}

// maxSaid is how much of a server's last words a scoped search quotes.
const maxSaid = 1200

// SearchArgs are search_tools' arguments: a query (within a server when
// Server is set), a server alone (its tools listed), or a tool to describe.
type SearchArgs struct {
	Query    string `json:"query"`
	Kind     string `json:"kind"`
	Server   string `json:"server"` // only this server's tools; "" for all
	Limit    int    `json:"limit"`
	Describe string `json:"describe"` // a tool's exact name: its full description and schema
}

// maxDescription bounds each hit's line so an answer stays small.
const maxDescription = 120

// Search runs search_tools. schemas may be nil (no schemas in the answer).
// It is SearchTool without slash gates or a loop guard.
func Search(ctx context.Context, s Searcher, b Binder, schemas SchemaSource, raw json.RawMessage) *mcp.CallToolResult {
	return SearchTool{Index: s, Binder: b, Schemas: schemas}.Call(ctx, raw)
}

// maxQuery is the longest query search_tools takes, in characters.
const maxQuery = 1000

// Call runs search_tools with raw arguments.
func (st SearchTool) Call(ctx context.Context, raw json.RawMessage) *mcp.CallToolResult {
	var args SearchArgs
	if err := decodeArgs(raw, &args); err != nil {
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf(
			"search_tools takes {\"query\": \"what you need\", \"kind\": \"any|tool|core|mcp|skill|reference\", \"server\": \"a server's name\", \"limit\": 1-10}, or {\"describe\": \"a tool's exact name\"}; %s.", plain(err)))
	}
	args.Query = strings.TrimSpace(args.Query)
	args.Server = strings.TrimSpace(args.Server)
	args.Describe = strings.TrimSpace(args.Describe)
	switch {
	case args.Describe != "" && (args.Query != "" || args.Server != ""):
		return Refusal(gate.CodeArgsInvalid, `describe takes a tool's exact name alone, e.g. {"describe": "github__create_issue"}; send a query in another search.`)
	case args.Query == "" && args.Describe == "" && args.Server == "":
		return Refusal(gate.CodeArgsInvalid, `search_tools needs a query: say in a few words what you need, e.g. {"query": "create a github issue"}; `+
			`or {"server": "github"} alone for a server's tools, or {"describe": "github__create_issue"} for one tool's full schema.`)
	}
	if n := utf8.RuneCountInString(args.Query); n > maxQuery {
		// A query is a few words; a megabyte of them cost seconds of
		// search (red team: 1 MB, 13 s of CPU).
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("the query is %d characters long; say in a few words (at most %d characters) what you need.", n, maxQuery))
	}
	if n := utf8.RuneCountInString(args.Describe); n > maxQuery {
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("describe takes a tool's exact name, not %d characters.", n))
	}
	kinds, ok := KindsFor(args.Kind)
	if !ok {
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("kind %q is not one of any, tool, core, mcp, skill, reference.", args.Kind))
	}
	if args.Limit < 0 || args.Limit > 10 {
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("limit %d is out of range; use 1 to 10 (default 5).", args.Limit))
	}
	scope := args.Kind
	if args.Server != "" {
		scope += "@" + args.Server // the same words in another server are another search
	}
	words := args.Query
	switch {
	case args.Describe != "":
		scope, words = "describe", args.Describe
	case args.Query == "":
		scope, words = "list", args.Server
	}
	key := searchKey(words, scope)
	if res := st.guard(key, words); res != nil {
		return res
	}
	switch {
	case args.Describe != "":
		return st.describe(ctx, key, args.Describe, kinds)
	case args.Query == "":
		return st.list(ctx, key, args.Server, kinds)
	}
	memo := &schemaMemo{}
	res, err := st.Index.Search(ctx, index.Query{Text: args.Query, Kinds: kinds, Server: args.Server, Limit: args.Limit,
		Room: st.room(args.Query, len(st.Pending) > 0, memo)})
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("search failed: %v", err))
	}
	if res.NoServer {
		return st.noServer(args.Query, args.Server)
	}
	return st.answer(ctx, key, args.Query, args.Server, kinds, res, memo)
}

// noServer answers a search scoped to a server the index does not have:
// its status when it is starting or down, else a refusal naming the way.
func (st SearchTool) noServer(query, name string) *mcp.CallToolResult {
	if i := slices.IndexFunc(st.Pending, func(p PendingServer) bool { return p.Name == name }); i >= 0 {
		return serverStatus(query, st.Pending[i])
	}
	return Refusal(gate.CodeArgsInvalid, fmt.Sprintf(
		"no connected server is named %q; search without \"server\", or use a server's name as a search answer gives it (\"github: ...\").", name))
}

// slashFor says whether a tool runs only through a slash command.
func (st SearchTool) slashFor(name string) (string, bool) {
	if st.Slash == nil {
		return "", false
	}
	return st.Slash.SlashFor(name)
}

// bind binds the hits that may be bound and remembers them for the loop
// guard.
func (st SearchTool) bind(key string, hits []index.Hit, weak bool) []string {
	var bindable []string
	for _, h := range hits {
		if _, gated := st.slashFor(h.Entry.Name); h.Entry.Kind == index.KindMCP && !gated {
			bindable = append(bindable, h.Entry.Name)
		}
	}
	bound := []string{}
	if len(bindable) > 0 {
		bound = st.Binder.Bind(bindable, weak)
	}
	if slices.ContainsFunc(st.Pending, func(p PendingServer) bool { return p.State == "starting" }) {
		// The answer says "search again in a moment" while servers start:
		// the loop guard must not refuse that very search.
		st.forget()
	} else {
		st.remember(key, bound)
	}
	return bound
}

// answerBytes is what a search answer's text may take, all told: the
// hits, what was bound and their parameters come first, and the names past
// the hits fill the rest, the likeliest first (index.Query.Room).
const answerBytes = 3800

// room is the index's Query.Room for a search's answer: what is left of
// answerBytes once the answer holds hits, rendered as answer renders them.
func (st SearchTool) room(query string, pending bool, memo *schemaMemo) func([]index.Hit) int {
	return func(hits []index.Hit) int {
		lines, _, _ := st.hitLines(hits)
		var bindable []string
		for _, h := range hits {
			if _, gated := st.slashFor(h.Entry.Name); h.Entry.Kind == index.KindMCP && !gated {
				bindable = append(bindable, h.Entry.Name)
			}
		}
		sch, _ := memo.lines(st, bindable)
		used := len(weakHead(query, pending)) + len(lines) + len(boundLine(bindable)) + len(sch) + len(unboundNote)
		if len(st.Pending) > 0 {
			used += 1 + len(pendingNote(st.Pending))
		}
		return max(0, answerBytes-used)
	}
}

// weakHead is the first line of an answer whose hits are poor matches.
func weakHead(query string, pending bool) string {
	if pending {
		return fmt.Sprintf("Nothing matched %q well; the nearest tools are below.\n", query)
	}
	return fmt.Sprintf("Nothing matched %q well; the nearest tools are below. If none fits, no connected server can do this.\n", query)
}

// hitLines are an answer's hits, one line each, with their structured
// form and the names of the slash-gated ones.
func (st SearchTool) hitLines(hits []index.Hit) (string, []map[string]any, []string) {
	var text strings.Builder
	out := make([]map[string]any, 0, len(hits))
	var gated []string
	for _, h := range hits {
		desc := firstSentence(h.Entry.Description, maxDescription)
		hit := map[string]any{"name": h.Entry.Name, "kind": string(h.Entry.Kind), "description": desc, "score": round(h.Score)}
		fmt.Fprintf(&text, "- %s [%s]", h.Entry.Name, h.Entry.Kind)
		if slash, ok := st.slashFor(h.Entry.Name); ok {
			fmt.Fprintf(&text, " [slash: /%s]", slash)
			hit["slash"] = slash
			gated = append(gated, h.Entry.Name)
		}
		fmt.Fprintf(&text, " — %s", desc)
		if h.Entry.Path != "" {
			fmt.Fprintf(&text, " (read it with read_file {\"path\": %q})", h.Entry.Path)
			hit["path"] = h.Entry.Path
		}
		text.WriteByte('\n')
		out = append(out, hit)
	}
	return text.String(), out, gated
}

func boundLine(bound []string) string {
	if len(bound) == 0 {
		return "Nothing was bound."
	}
	return "Bound for your next step: " + strings.Join(bound, ", ")
}

// schemaLines are the bound tools' parameters, one line each: the first
// (the best hit's) in up to maxTopSignatureBytes, the others in up to
// maxSignatureBytes. Empty without a schema source.
func (st SearchTool) schemaLines(bound []string) (string, map[string]string) {
	if st.Schemas == nil || len(bound) == 0 {
		return "", nil
	}
	var text strings.Builder
	text.WriteString("\nInput schemas (* required; {\"describe\": name} gives one in full):")
	params := map[string]string{}
	for k, name := range bound {
		sch, ok := st.Schemas.InputSchema(name)
		if !ok {
			continue
		}
		limit := maxSignatureBytes
		if k == 0 {
			limit = maxTopSignatureBytes
		}
		sig := signature(sch, limit)
		params[name] = sig
		fmt.Fprintf(&text, "\n%s%s", name, sig)
	}
	return text.String(), params
}

// schemaMemo keeps the parameter lines room rendered, so that the answer
// with the same bound tools does not parse their schemas again.
type schemaMemo struct {
	names  []string
	text   string
	params map[string]string
}

func (m *schemaMemo) lines(st SearchTool, names []string) (string, map[string]string) {
	if m.params == nil || !slices.Equal(m.names, names) {
		m.names = slices.Clone(names)
		m.text, m.params = st.schemaLines(names)
		if m.params == nil {
			m.params = map[string]string{}
		}
	}
	return m.text, m.params
}

// answer is a search's answer. Every byte is to earn its place, so it is
// laid out by what the next step needs (docs/ARCHITECTURE.md, "Search
// answers"): the hits, one line each; the likeliest other names, chosen by
// the index by score to fill what answerBytes leaves, grouped by server;
// what was bound; the bound tools' parameters, one line each. A tool's
// full schema and a server's whole tool list are one request away
// (describe; server without a query).
func (st SearchTool) answer(_ context.Context, key, query, server string, kinds []index.Kind, res index.Result, memo *schemaMemo) *mcp.CallToolResult {
	bound := st.bind(key, res.Hits, res.Weak)
	var text strings.Builder
	var hits []map[string]any
	servers := make([]map[string]any, 0, len(res.Servers))
	if len(res.Hits) == 0 {
		fmt.Fprintf(&text, "No tools match %q", query)
		if server != "" {
			fmt.Fprintf(&text, " in %s", server)
		}
		if len(st.Pending) > 0 {
			text.WriteString(" among the servers that are up.")
		} else {
			text.WriteString(": as far as the search can tell, no connected server can do this.")
		}
		if near := st.Index.Closest(query, 3, kinds...); len(near) > 0 {
			fmt.Fprintf(&text, " Closest names: %s.", strings.Join(near, ", "))
		}
		text.WriteString(" Nothing was bound; try other words.")
	} else {
		if res.Weak {
			text.WriteString(weakHead(query, len(st.Pending) > 0))
		} else {
			fmt.Fprintf(&text, "Matches for %q:\n", query)
		}
		lines, hs, gatedNames := st.hitLines(res.Hits)
		text.WriteString(lines)
		hits = hs
		listed := false
		for _, sv := range res.Servers {
			servers = append(servers, map[string]any{"name": sv.Name, "score": round(sv.Score), "more": orNone(sv.More)})
			if len(sv.More) == 0 {
				continue
			}
			if !listed {
				text.WriteString(unboundNote)
				listed = true
			}
			fmt.Fprintf(&text, "%s: %s\n", sv.Name, strings.Join(moreNames(sv), ", "))
		}
		text.WriteString(boundLine(bound))
		if len(gatedNames) > 0 {
			fmt.Fprintf(&text, "\nNot bound: %s run only through their slash command; ask the user to run it.", strings.Join(gatedNames, ", "))
		}
	}
	if hits == nil {
		hits = []map[string]any{}
	}
	structured := map[string]any{"query": query, "hits": hits, "servers": servers, "bound": bound, "weak": res.Weak}
	if len(st.Pending) > 0 {
		text.WriteString("\n" + pendingNote(st.Pending))
		pending := slices.Clone(st.Pending)
		for i := range pending {
			pending[i].Said = ""
		}
		structured["pending"] = pending
	}
	if sch, params := memo.lines(st, bound); sch != "" {
		text.WriteString(sch)
		structured["params"] = params
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text.String())}, StructuredContent: structured}
}

// unboundNote heads the names an answer offers past its hits: the model
// may take one, but must search it to call it.
const unboundNote = "Also likely, not bound (search a name exactly to bind it):\n"

// describe answers {"describe": name}: the tool's whole description and
// full input schema, and binds it, as a search of its exact name does.
func (st SearchTool) describe(ctx context.Context, key, name string, kinds []index.Kind) *mcp.CallToolResult {
	res, err := st.Index.Search(ctx, index.Query{Text: name, Kinds: kinds, Limit: 1})
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("search failed: %v", err))
	}
	if len(res.Hits) == 0 || !sameName(res.Hits[0].Entry, name) {
		msg := fmt.Sprintf("no tool is named %q.", name)
		if near := st.Index.Closest(name, 3, kinds...); len(near) > 0 {
			msg += fmt.Sprintf(" Closest names: %s.", strings.Join(near, ", "))
		}
		return Refusal(gate.CodeArgsInvalid, msg+" describe takes a name exactly as a search answer gives it; search in words to find one.")
	}
	h := res.Hits[:1]
	e := h[0].Entry
	bound := st.bind(key, h, false)
	var text strings.Builder
	fmt.Fprintf(&text, "%s [%s]", e.Name, e.Kind)
	if slash, gated := st.slashFor(e.Name); gated {
		fmt.Fprintf(&text, " [slash: /%s]", slash)
	}
	fmt.Fprintf(&text, " — %s", strings.Join(strings.Fields(e.Description), " "))
	if e.Path != "" {
		fmt.Fprintf(&text, " (read it with read_file {\"path\": %q})", e.Path)
	}
	structured := map[string]any{"describe": e.Name, "kind": string(e.Kind), "description": e.Description, "bound": bound}
	if st.Schemas != nil {
		if sch, ok := st.Schemas.InputSchema(e.Name); ok {
			sch = compact(sch)
			fmt.Fprintf(&text, "\nInput schema (call with call_tool {\"name\": %q, \"arguments\": {...}}): %s", e.Name, sch)
			structured["schema"] = sch
		}
	}
	if len(bound) > 0 {
		fmt.Fprintf(&text, "\nBound for your next step: %s", strings.Join(bound, ", "))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text.String())}, StructuredContent: structured}
}

// sameName: describe found the tool it was asked for, by its exposed name
// or its tool part, case aside (as the index matches exact names).
func sameName(e index.Entry, name string) bool {
	if strings.EqualFold(e.Name, name) {
		return true
	}
	_, tool, ok := strings.Cut(e.Name, "__")
	return ok && strings.EqualFold(tool, name)
}

// list answers {"server": S} without a query: the names of S's tools,
// compactly, none bound.
func (st SearchTool) list(ctx context.Context, key, server string, kinds []index.Kind) *mcp.CallToolResult {
	res, err := st.Index.Search(ctx, index.Query{Server: server, Kinds: kinds})
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("search failed: %v", err))
	}
	if res.NoServer {
		return st.noServer("", server)
	}
	st.remember(key, nil)
	var names []string
	for _, sv := range res.Servers {
		names = append(names, moreNames(sv)...)
	}
	var text strings.Builder
	if len(names) == 0 {
		fmt.Fprintf(&text, "%s offers no tools here.", server)
	} else {
		fmt.Fprintf(&text, "%s's %d tools (none bound: search an exact name, or {\"describe\": \"%s__<tool>\"}, to bind one): %s",
			server, len(names), server, strings.Join(names, ", "))
	}
	if len(st.Pending) > 0 {
		text.WriteString("\n" + pendingNote(st.Pending))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text.String())},
		StructuredContent: map[string]any{"server": server, "tools": orNone(names)}}
}

// orNone is names, or an empty list where there are none (never null).
func orNone(names []string) []string {
	if names == nil {
		return []string{}
	}
	return names
}

// moreNames are a server's tools as an answer lists them: each exposed
// name without the server's prefix, which the line already names.
func moreNames(sv index.ServerHit) []string {
	out := make([]string, len(sv.More))
	for i, n := range sv.More {
		out[i] = strings.TrimPrefix(n, sv.Name+"__")
	}
	return out
}

// KindsFor maps search_tools' kind argument to index kinds; false for a kind
// it does not know.
func KindsFor(kind string) ([]index.Kind, bool) {
	switch kind {
	case "", "any":
		return nil, true
	case "tool":
		return []index.Kind{index.KindCore, index.KindMCP}, true
	case "core":
		return []index.Kind{index.KindCore}, true
	case "mcp":
		return []index.Kind{index.KindMCP}, true
	case "skill":
		return []index.Kind{index.KindSkill}, true
	case "reference":
		return []index.Kind{index.KindReference}, true
	}
	return nil, false
}

// firstSentence cuts a description to its first sentence, at most max
// bytes, on a rune boundary.
func firstSentence(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' && i >= 10 {
			s = s[:i+1]
			break
		}
	}
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ") + "…"
}

// maxSignatureBytes bounds a bound tool's parameter line in an answer,
// maxTopSignatureBytes the best hit's; the required parameters are always
// on it.
const (
	maxSignatureBytes    = 200
	maxTopSignatureBytes = 400
)

// signature is a schema's top-level parameters in one line, required
// first: "(title*: string, mode: fast|slow, tags: string[])", * marking the
// required ones, a short enum in place of its type. Past max bytes the
// optional ones are counted, not named: describe gives the whole schema.
func signature(schema json.RawMessage, max int) string {
	type prop struct {
		Type  any   `json:"type"`
		Enum  []any `json:"enum"`
		Items *struct {
			Type any `json:"type"`
		} `json:"items"`
	}
	var s struct {
		Properties map[string]prop `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return "()"
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := slices.Contains(s.Required, names[i]), slices.Contains(s.Required, names[j])
		if ri != rj {
			return ri
		}
		return names[i] < names[j]
	})
	var sb strings.Builder
	sb.WriteByte('(')
	for k, n := range names {
		p := s.Properties[n]
		req := slices.Contains(s.Required, n)
		part := n
		if req {
			part += "*"
		}
		if t := typeName(p.Type, p.Enum); t != "" {
			part += ": " + t
			if t == "array" && p.Items != nil {
				if it := typeName(p.Items.Type, nil); it != "" && it != "array" {
					part = strings.TrimSuffix(part, "array") + it + "[]"
				}
			}
		}
		if !req && sb.Len()+len(part)+2 > max {
			fmt.Fprintf(&sb, ", +%d more", len(names)-k)
			break
		}
		if k > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(part)
	}
	sb.WriteByte(')')
	return sb.String()
}

// typeName is a property's type as a signature shows it: a short enum's
// values ("fast|slow"), else its type or types ("string|null").
func typeName(t any, enum []any) string {
	if len(enum) > 0 && len(enum) <= 6 {
		vals := make([]string, len(enum))
		size := 0
		for i, v := range enum {
			vals[i] = fmt.Sprint(v)
			size += len(vals[i]) + 1
		}
		if size <= 60 {
			return strings.Join(vals, "|")
		}
	}
	switch t := t.(type) {
	case string:
		return t
	case []any:
		ts := make([]string, 0, len(t))
		for _, x := range t {
			ts = append(ts, fmt.Sprint(x))
		}
		return strings.Join(ts, "|")
	}
	return ""
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

func round(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// serverStatus answers a search scoped to a server that is not up: why,
// and for a server that is down its last words on stderr, bounded,
// quoted and labelled as the server's.
func serverStatus(query string, p PendingServer) *mcp.CallToolResult {
	var text string
	if p.State == "starting" {
		text = fmt.Sprintf("Server %q is still starting, so its tools cannot be searched yet; search again in a moment.", p.Name)
	} else {
		text = fmt.Sprintf("Server %q is down, so its tools cannot be searched: %s", p.Name, firstSentence(p.Reason, maxSaid))
		if p.Said != "" {
			said, more := p.Said, ""
			if len(said) > maxSaid {
				cut := maxSaid
				for cut > 0 && !utf8.RuneStart(said[cut]) {
					cut--
				}
				said, more = said[:cut], fmt.Sprintf(" (cut; %d bytes in all)", len(p.Said))
			}
			label := "Its stderr ended with"
			if p.SaidLabel != "" && p.SaidLabel != "its stderr ended" {
				label = strings.ToUpper(p.SaidLabel[:1]) + p.SaidLabel[1:]
			}
			text += fmt.Sprintf("\n%s (the server's words, not quiver's): %q%s", label, said, more)
			p.Said = said
		}
		text += "\nTell the user if you need its tools (quiver doctor shows the same)."
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)},
		StructuredContent: map[string]any{"query": query, "hits": []any{}, "bound": []string{}, "pending": []PendingServer{p}}}
}

// pendingNote names the servers a search could not see: "2 servers are
// still starting: github, slack; search again in a moment."
func pendingNote(pending []PendingServer) string {
	var starting, down []string
	for _, p := range pending {
		if p.State == "starting" {
			starting = append(starting, p.Name)
			continue
		}
		d := p.Name
		if p.Reason != "" {
			d += " (" + firstSentence(p.Reason, maxDescription) + ")"
		}
		down = append(down, d)
	}
	var parts []string
	servers := func(n int) string {
		if n == 1 {
			return "1 server is"
		}
		return fmt.Sprintf("%d servers are", n)
	}
	if len(starting) > 0 {
		parts = append(parts, fmt.Sprintf("%s still starting: %s; search again in a moment.", servers(len(starting)), strings.Join(starting, ", ")))
	}
	if len(down) > 0 {
		parts = append(parts, fmt.Sprintf("%s down, so their tools are missing here: %s; tell the user if you need them (quiver doctor shows why, and so does a search with \"server\" set to one of them).", servers(len(down)), strings.Join(down, ", ")))
	}
	return strings.Join(parts, " ")
}

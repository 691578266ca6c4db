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
}

// maxSaid is how much of a server's last words a scoped search quotes.
const maxSaid = 1200

// SearchArgs are search_tools' arguments.
type SearchArgs struct {
	Query  string `json:"query"`
	Kind   string `json:"kind"`
	Server string `json:"server"` // only this server's tools; "" for all
	Limit  int    `json:"limit"`
}

// maxDescription bounds each hit's line so an answer stays small.
const maxDescription = 160

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
			"search_tools takes {\"query\": \"what you need\", \"kind\": \"any|tool|core|mcp|skill|reference\", \"server\": \"a server's name\", \"limit\": 1-10}; %s.", plain(err)))
	}
	args.Query = strings.TrimSpace(args.Query)
	if args.Query == "" {
		return Refusal(gate.CodeArgsInvalid, `search_tools needs a query: say in a few words what you need, e.g. {"query": "create a github issue"}.`)
	}
	if n := utf8.RuneCountInString(args.Query); n > maxQuery {
		// A query is a few words; a megabyte of them cost seconds of
		// search (red team: 1 MB, 13 s of CPU).
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("the query is %d characters long; say in a few words (at most %d characters) what you need.", n, maxQuery))
	}
	kinds, ok := KindsFor(args.Kind)
	if !ok {
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("kind %q is not one of any, tool, core, mcp, skill, reference.", args.Kind))
	}
	if args.Limit < 0 || args.Limit > 10 {
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("limit %d is out of range; use 1 to 10 (default 5).", args.Limit))
	}
	args.Server = strings.TrimSpace(args.Server)
	scope := args.Kind
	if args.Server != "" {
		scope += "@" + args.Server // the same words in another server are another search
	}
	key := searchKey(args.Query, scope)
	if res := st.guard(key, args.Query); res != nil {
		return res
	}
	res, err := st.Index.Search(ctx, index.Query{Text: args.Query, Kinds: kinds, Server: args.Server, Limit: args.Limit})
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("search failed: %v", err))
	}
	if res.NoServer {
		if i := slices.IndexFunc(st.Pending, func(p PendingServer) bool { return p.Name == args.Server }); i >= 0 {
			return serverStatus(args.Query, st.Pending[i])
		}
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf(
			"no connected server is named %q; search without \"server\", or use a name a search answer gives after \"More in\".", args.Server))
	}

	gate := func(name string) (string, bool) {
		if st.Slash == nil {
			return "", false
		}
		return st.Slash.SlashFor(name)
	}
	var bindable []string
	for _, h := range res.Hits {
		if _, gated := gate(h.Entry.Name); h.Entry.Kind == index.KindMCP && !gated {
			bindable = append(bindable, h.Entry.Name)
		}
	}
	bound := []string{}
	if len(bindable) > 0 {
		bound = st.Binder.Bind(bindable, res.Weak)
	}
	if slices.ContainsFunc(st.Pending, func(p PendingServer) bool { return p.State == "starting" }) {
		// The answer says "search again in a moment" while servers start:
		// the loop guard must not refuse that very search.
		st.forget()
	} else {
		st.remember(key, bound)
	}

	var text strings.Builder
	hits := make([]map[string]any, 0, len(res.Hits))
	servers := make([]map[string]any, 0, len(res.Servers))
	if len(res.Hits) == 0 {
		fmt.Fprintf(&text, "No tools match %q", args.Query)
		if args.Server != "" {
			fmt.Fprintf(&text, " in %s", args.Server)
		}
		if len(st.Pending) > 0 {
			text.WriteString(" among the servers that are up.")
		} else {
			text.WriteString(": as far as the search can tell, no connected server can do this.")
		}
		if near := st.Index.Closest(args.Query, 3, kinds...); len(near) > 0 {
			fmt.Fprintf(&text, " Closest names: %s.", strings.Join(near, ", "))
		}
		text.WriteString(" Nothing was bound; try other words.")
	} else {
		if res.Weak && len(st.Pending) > 0 {
			fmt.Fprintf(&text, "Nothing matched %q well; the nearest tools are below.\n", args.Query)
		} else if res.Weak {
			fmt.Fprintf(&text, "Nothing matched %q well; the nearest tools are below. If none fits, no connected server can do this.\n", args.Query)
		} else {
			fmt.Fprintf(&text, "Matches for %q:\n", args.Query)
		}
		var gatedNames []string
		for _, h := range res.Hits {
			desc := firstSentence(h.Entry.Description, maxDescription)
			hit := map[string]any{"name": h.Entry.Name, "kind": string(h.Entry.Kind), "description": desc, "score": round(h.Score)}
			fmt.Fprintf(&text, "- %s [%s]", h.Entry.Name, h.Entry.Kind)
			if slash, gated := gate(h.Entry.Name); gated {
				fmt.Fprintf(&text, " [slash: /%s]", slash)
				hit["slash"] = slash
				gatedNames = append(gatedNames, h.Entry.Name)
			}
			fmt.Fprintf(&text, " — %s", desc)
			if h.Entry.Path != "" {
				fmt.Fprintf(&text, " (read it with read_file {\"path\": %q})", h.Entry.Path)
				hit["path"] = h.Entry.Path
			}
			text.WriteByte('\n')
			hits = append(hits, hit)
		}
		listed := false
		for _, sv := range res.Servers {
			more := moreNames(sv)
			servers = append(servers, map[string]any{"name": sv.Name, "score": round(sv.Score), "more": sv.More})
			if len(more) == 0 {
				continue
			}
			listed = true
			fmt.Fprintf(&text, "More in %s: %s", sv.Name, strings.Join(more, ", "))
			if sv.Rest > 0 {
				text.WriteString(", …")
			}
			text.WriteByte('\n')
		}
		if len(res.Also) > 0 {
			listed = true
			fmt.Fprintf(&text, "Also near: %s\n", strings.Join(res.Also, ", "))
		}
		if listed {
			text.WriteString(unboundNote)
		}
		if len(bound) > 0 {
			fmt.Fprintf(&text, "Bound for your next step: %s", strings.Join(bound, ", "))
		} else {
			text.WriteString("Nothing was bound.")
		}
		if len(gatedNames) > 0 {
			fmt.Fprintf(&text, "\nNot bound: %s run only through their slash command; ask the user to run it.", strings.Join(gatedNames, ", "))
		}
	}
	structured := map[string]any{"query": args.Query, "hits": hits, "servers": servers, "also": orNone(res.Also), "bound": bound, "weak": res.Weak}
	if len(st.Pending) > 0 {
		text.WriteString("\n" + pendingNote(st.Pending))
		pending := slices.Clone(st.Pending)
		for i := range pending {
			pending[i].Said = ""
		}
		structured["pending"] = pending
	}
	if st.Schemas != nil && len(bound) > 0 {
		text.WriteString("\nInput schemas (call them with call_tool {\"name\": ..., \"arguments\": {...}}):")
		all := map[string]json.RawMessage{}
		used := 0
		for _, name := range bound {
			sch, ok := st.Schemas.InputSchema(name)
			if !ok {
				continue
			}
			sch = compact(sch)
			// Real schemas run to kilobytes; past the budget a tool gets
			// its parameters' names and types, which is what a first call
			// needs (a refusal names anything else).
			if used+len(sch) > maxAnswerSchemaBytes && used > 0 {
				fmt.Fprintf(&text, "\n%s: parameters %s (full schema left out for size)", name, signature(sch))
				continue
			}
			used += len(sch)
			all[name] = sch
			fmt.Fprintf(&text, "\n%s: %s", name, sch)
		}
		structured["schemas"] = all
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text.String())}, StructuredContent: structured}
}

// unboundNote follows the compact lists of an answer: the model may take
// a name from them, but must search it to call it.
const unboundNote = "(Tools named after \"More in\" or \"Also near\" are not bound: search one's exact name to bind it.)\n"

// orNone is names, or an empty list where there are none (never null).
func orNone(names []string) []string {
	if names == nil {
		return []string{}
	}
	return names
}

// moreNames are a server's other tools as an answer lists them: each
// exposed name without the server's prefix, which the line already names.
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

// maxAnswerSchemaBytes bounds the input schemas one search answer carries
// in full; the first bound tool's always goes in.
const maxAnswerSchemaBytes = 4 << 10

// signature is a schema's top-level parameters in one line:
// "(title*: string, limit: integer)", * marking the required ones.
func signature(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
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
	parts := make([]string, 0, len(names))
	for _, n := range names {
		p := n
		if slices.Contains(s.Required, n) {
			p += "*"
		}
		switch t := s.Properties[n].Type.(type) {
		case string:
			p += ": " + t
		case []any:
			var ts []string
			for _, x := range t {
				ts = append(ts, fmt.Sprint(x))
			}
			p += ": " + strings.Join(ts, "|")
		}
		parts = append(parts, p)
	}
	return "(" + strings.Join(parts, ", ") + ")"
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
			text += fmt.Sprintf("\nIts stderr ended with (the server's words, not quiver's): %q%s", said, more)
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

package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Downstream prompts are listed as "<prefix>__<name>" (bare for a server
// with prefix ""), beside quiver's own slash commands, and prompts/get is
// forwarded with its arguments. They take their own path: quiver's prompts
// are registered elsewhere, and syncPrompts only ever adds or deletes the
// names it registered itself, so the two sets meet in mcp-go's one prompt
// list and never overwrite each other (a downstream prompt whose name is
// taken is left out, and the log says so).

// promptRef is the server and name a listed prompt forwards to.
type promptRef struct {
	server string
	name   string
	def    string // the listed definition, to notice a change
}

func exposedPrompt(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "__" + name
}

// syncPrompts brings mcp-go's prompt list in line with the views: one
// delete and one add at most, each of which tells every session
// notifications/prompts/list_changed.
func (m *mirror) syncPrompts() {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	want := map[string]promptRef{}
	defs := map[string]mcp.Prompt{}
	for _, e := range m.ordered() {
		for _, p := range e.v.prompts {
			name := exposedPrompt(e.srv.Prefix, p.Name)
			if prev, dup := want[name]; dup {
				m.s.log.Error("prompt left out: another server's prompt has the same name",
					"server", e.srv.Name, "prompt", p.Name, "exposed", name, "other", prev.server)
				continue
			}
			def := p
			def.Name = name
			b, _ := json.Marshal(def)
			want[name] = promptRef{server: e.srv.Name, name: p.Name, def: string(b)}
			defs[name] = def
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	foreign := m.s.mcp.ListPrompts()
	var remove []string
	for name, have := range m.prompts {
		if w, ok := want[name]; !ok || w.def != have.def || w.server != have.server {
			remove = append(remove, name)
			delete(m.prompts, name)
		}
	}
	var add []server.ServerPrompt
	for name, ref := range want {
		if _, ok := m.prompts[name]; ok {
			continue
		}
		if _, taken := foreign[name]; taken && !slices.Contains(remove, name) {
			m.s.log.Error("prompt left out: quiver already has a prompt of that name", "server", ref.server, "prompt", ref.name)
			continue
		}
		m.prompts[name] = ref
		add = append(add, server.ServerPrompt{Prompt: defs[name], Handler: m.promptHandler(ref)})
	}
	if len(remove) > 0 {
		m.s.mcp.DeletePrompts(remove...)
	}
	if len(add) > 0 {
		m.s.mcp.AddPrompts(add...)
	}
}

// promptHandler forwards prompts/get to the prompt's server.
func (m *mirror) promptHandler(ref promptRef) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		res, err := passOn(ctx, m.s, ref.server, opPrompt, stringArgs(req.Params.Arguments), req.Params.Meta, fmt.Sprintf("prompt %q of server %s", ref.name, ref.server),
			func(ctx context.Context, c *client.Client, meta *mcp.Meta) (*mcp.GetPromptResult, error) {
				out := mcp.GetPromptRequest{}
				out.Params.Name = ref.name
				out.Params.Arguments = req.Params.Arguments
				out.Params.Meta = meta
				return c.GetPrompt(ctx, out)
			})
		if err != nil {
			return nil, err
		}
		out, ok := redactJSON(res, m.s.redactor(), func(b json.RawMessage) (*mcp.GetPromptResult, error) {
			return mcp.ParseGetPromptResult(&b)
		})
		if !ok {
			return nil, fmt.Errorf("prompt %q of server %s could not be checked for secrets, so it is not shown", ref.name, ref.server)
		}
		return out, nil
	}
}

// owner returns the server and downstream name behind an exposed prompt.
func (m *mirror) promptOwner(name string) (promptRef, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ref, ok := m.prompts[name]
	return ref, ok
}

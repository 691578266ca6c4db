package proxy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/registry"
)

// mirror keeps quiver's copy of what each downstream server offers besides
// tools: its prompts, resources and resource templates. It re-lists a
// server when it comes up (or restarts) and when it says a list changed,
// always off the downstream client's read loop, one re-list per server at
// a time so an older answer never replaces a newer one.
type mirror struct {
	s *Server

	// syncMu makes each rebuild of the prompt or resource lists read the
	// views and install its result as one step.
	syncMu  sync.Mutex
	mu      sync.Mutex
	views   map[string]*view          // by server
	prompts map[string]promptRef      // exposed prompt name -> owner, as registered with mcp-go
	lists   map[string]*sync.Mutex    // per-server re-list lock
	seen    map[string]serverIdentity // last (state, restarts) seen per server

	res atomic.Pointer[resourceView]
}

// view is one server's offer at its last listing.
type view struct {
	caps      mcp.ServerCapabilities
	prompts   []mcp.Prompt
	resources []mcp.Resource
	templates []mcp.ResourceTemplate
}

type serverIdentity struct {
	state    registry.State
	restarts int
}

func newMirror(s *Server) *mirror {
	m := &mirror{s: s, views: map[string]*view{}, prompts: map[string]promptRef{},
		lists: map[string]*sync.Mutex{}, seen: map[string]serverIdentity{}}
	m.res.Store(&resourceView{})
	return m
}

// catalog reacts to a new catalog: a server that came up, or came back up
// after a restart, is listed again (and gets the current logging level and
// the subscriptions quiver holds for it); a server that went down drops
// out of the lists.
func (m *mirror) catalog(cat *registry.Catalog) {
	for _, st := range cat.Servers {
		id := serverIdentity{st.State, st.Restarts}
		m.mu.Lock()
		prev := m.seen[st.Name]
		m.seen[st.Name] = id
		m.mu.Unlock()
		if id == prev {
			continue
		}
		switch {
		case st.State == registry.StateUp:
			go func() {
				m.relist(st.Name, true, true)
				m.s.relay.forwardLevel(st.Name)
				m.resubscribe(st.Name)
			}()
		case prev.state == registry.StateUp:
			go m.drop(st.Name)
		}
	}
}

func (m *mirror) lock(srv string) *sync.Mutex {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.lists[srv]
	if l == nil {
		l = &sync.Mutex{}
		m.lists[srv] = l
	}
	return l
}

// relist asks srv for its prompts and/or resources and installs them.
func (m *mirror) relist(srv string, prompts, resources bool) {
	l := m.lock(srv)
	l.Lock()
	defer l.Unlock()
	old := m.offer(srv)
	v := &view{}
	if old != nil {
		*v = *old
	}
	err := m.s.reg.Do(context.Background(), srv, func(ctx context.Context, c *client.Client) error {
		v.caps = c.GetServerCapabilities()
		if prompts {
			v.prompts = nil
			if v.caps.Prompts != nil {
				res, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
				if err != nil {
					return err
				}
				v.prompts = res.Prompts
			}
		}
		if resources {
			v.resources, v.templates = nil, nil
			if v.caps.Resources != nil {
				res, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
				if err != nil {
					return err
				}
				v.resources = res.Resources
				tres, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
				if err != nil {
					return err
				}
				v.templates = tres.ResourceTemplates
			}
		}
		return nil
	})
	if err != nil {
		if !errors.Is(err, registry.ErrServerDown) {
			m.s.log.Warn("re-listing prompts/resources failed", "server", srv, "err", err)
		}
		return
	}
	// Names, descriptions and URIs a server lists reach the host too.
	v.prompts, v.resources, v.templates = redactList(m.s, v.prompts), redactList(m.s, v.resources), redactList(m.s, v.templates)
	m.mu.Lock()
	m.views[srv] = v
	m.mu.Unlock()
	if prompts {
		m.syncPrompts()
	}
	if resources {
		m.rebuildResources(true)
	}
}

// offer is srv's offer at its last listing, nil when it has none.
func (m *mirror) offer(srv string) *view {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.views[srv]
}

// drop forgets a server that went down.
func (m *mirror) drop(srv string) {
	l := m.lock(srv)
	l.Lock()
	defer l.Unlock()
	m.mu.Lock()
	_, had := m.views[srv]
	delete(m.views, srv)
	m.mu.Unlock()
	if had {
		m.syncPrompts()
		m.rebuildResources(true)
	}
}

// ordered returns the views in servers.yaml order.
func (m *mirror) ordered() []struct {
	srv registry.Server
	v   *view
} {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []struct {
		srv registry.Server
		v   *view
	}
	for _, srv := range m.s.cfg().Servers {
		if v := m.views[srv.Name]; v != nil {
			out = append(out, struct {
				srv registry.Server
				v   *view
			}{srv, v})
		}
	}
	return out
}

// passThrough wires the relay and the mirror into mcp-go's hooks and
// returns the capabilities pass-through adds to quiver's MCP server
// (prompts are declared with the slash commands): resources (with
// subscriptions) that change, logging, and completion forwarded to the
// owning server.
func (s *Server) passThrough(h *server.Hooks) []server.ServerOption {
	h.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) { s.relay.register(cs) })
	h.AddAfterSetLevel(func(ctx context.Context, _ any, req *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		s.relay.setLevel(ctx, req.Params.Level)
	})
	h.AddAfterListResources(s.pass.listResources)
	h.AddAfterListResourceTemplates(s.pass.listTemplates)
	h.AddOnRequestInitialization(s.pass.subscriptionHook)
	return []server.ServerOption{
		server.WithResourceCapabilities(true, true),
		server.WithLogging(),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(completion{s.pass}),
		server.WithResourceCompletionProvider(completion{s.pass}),
	}
}

// passThroughInstall registers the one resource template every read goes
// through and the handler for the client's roots/list_changed.
func (s *Server) passThroughInstall() {
	s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(catchAll, "quiver"), s.pass.readResource)
	s.mcp.AddNotificationHandler(string(mcp.MethodNotificationRootsListChanged), func(ctx context.Context, _ mcp.JSONRPCNotification) {
		s.relay.rootsChanged(ctx)
	})
}

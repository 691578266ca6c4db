package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/internal/exampleserver"
	"github.com/quiver-mcp/quiver/registry"
)

// localServers is a Downstream of mcp-go servers running in the test's own
// process, reached through mcp-go's in-process client: the proxy talks MCP
// to them as it would to children, with no child. Its catalog is built as
// the registry builds one (exposed names, keywords, toggles), from the
// servers the configuration in force names; a server the configuration
// names but the test did not give is down.
type localServers struct {
	hooks   registry.Options
	servers map[string]*server.MCPServer

	mu      sync.Mutex
	cfg     *registry.Config
	gen     uint64
	cat     *registry.Catalog
	clients map[string]*client.Client
	tools   map[string][]mcp.Tool // as each server listed them
	ready   chan struct{}
}

// localDownstream gives New a downstream of the named servers.
func localDownstream(servers map[string]*server.MCPServer) NewDownstream {
	return func(cfg *registry.Config, hooks registry.Options) Downstream {
		d := &localServers{hooks: hooks, servers: servers, cfg: cfg, clients: map[string]*client.Client{},
			tools: map[string][]mcp.Tool{}, ready: make(chan struct{})}
		d.cat = d.build()
		return d
	}
}

func (d *localServers) Start(ctx context.Context) {
	for name, srv := range d.servers {
		c, err := client.NewInProcessClient(srv)
		if err == nil {
			err = c.Start(ctx)
		}
		if err == nil {
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
			_, err = c.Initialize(ctx, init)
		}
		var list *mcp.ListToolsResult
		if err == nil {
			list, err = c.ListTools(ctx, mcp.ListToolsRequest{})
		}
		if err != nil {
			panic(fmt.Sprintf("in-process server %s: %v", name, err))
		}
		d.mu.Lock()
		d.clients[name], d.tools[name] = c, list.Tools
		d.mu.Unlock()
	}
	d.publish()
	close(d.ready)
}

// build makes the catalog of the configuration in force. d.mu is held, or
// d is not shared yet.
func (d *localServers) build() *registry.Catalog {
	d.gen++
	var tools []registry.Tool
	var status []registry.ServerStatus
	for _, srv := range d.cfg.Servers {
		st := registry.ServerStatus{Name: srv.Name, Transport: srv.Transport, State: registry.StateStarting}
		if _, ok := d.servers[srv.Name]; !ok {
			st.State, st.LastError = registry.StateDown, "not an in-process server of this test"
		}
		if listed, ok := d.tools[srv.Name]; ok {
			st.State, st.Tools = registry.StateUp, len(listed)
			for _, t := range listed {
				exposed := registry.ExposedName(srv.Prefix, t.Name, d.cfg.Surface.MaxNameLen)
				on, why := d.cfg.Toggles.Decide(exposed, !srv.ToolsOff)
				schema, _ := json.Marshal(t.InputSchema)
				if len(t.RawInputSchema) > 0 {
					schema = t.RawInputSchema
				}
				tools = append(tools, registry.Tool{Server: srv.Name, Name: t.Name, Exposed: exposed, Title: t.Title,
					Description: t.Description, InputSchema: schema, Annotations: t.Annotations,
					Keywords: srv.Keywords, Off: !on, Toggle: why})
			}
		}
		status = append(status, st)
	}
	cat := registry.NewCatalog(d.gen, tools...)
	cat.Servers = status
	return cat
}

func (d *localServers) publish() {
	d.mu.Lock()
	d.cat = d.build()
	cat := d.cat
	d.mu.Unlock()
	d.hooks.OnChange(cat)
}

func (d *localServers) Ready() <-chan struct{} { return d.ready }

func (d *localServers) ReadyGen() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cat.Gen
}

func (d *localServers) Catalog() *registry.Catalog {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cat
}

func (d *localServers) Apply(_ context.Context, cfg *registry.Config) (registry.Change, error) {
	d.mu.Lock()
	d.cfg = cfg
	d.mu.Unlock()
	d.publish()
	return registry.Change{}, nil
}

func (d *localServers) Call(ctx context.Context, exposed string, args json.RawMessage, meta *mcp.Meta) (json.RawMessage, error) {
	t, ok := d.Catalog().Lookup(exposed)
	if !ok {
		return nil, fmt.Errorf("%w: %s", registry.ErrUnknownTool, exposed)
	}
	var res *mcp.CallToolResult
	err := d.Do(ctx, t.Server, func(ctx context.Context, c *client.Client) error {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments, req.Params.Meta = t.Name, args, meta
		var err error
		res, err = c.CallTool(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	// As a server sends it: mcp-go encodes it as its servers do.
	return json.Marshal(res)
}

func (d *localServers) Do(ctx context.Context, srv string, f func(ctx context.Context, c *client.Client) error) error {
	d.mu.Lock()
	c := d.clients[srv]
	d.mu.Unlock()
	if c == nil {
		return fmt.Errorf("%w: %s", registry.ErrServerDown, srv)
	}
	return f(ctx, c)
}

func (d *localServers) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.clients {
		_ = c.Close()
	}
	d.clients = map[string]*client.Client{}
	return nil
}

// exampleConfig names the example server as newTestServer does; the
// command is never run.
func exampleConfig(surface string) string {
	return surface + "\nservers:\n  example:\n    command: in-process\n"
}

// newInProcessServer runs a proxy in front of the example server in this
// process (newTestServer's twin without a child process) and returns an
// in-process client connected to it.
func newInProcessServer(tb testing.TB, cfgText string, opts Options, servers map[string]*server.MCPServer) (*Server, *client.Client) {
	tb.Helper()
	if servers == nil {
		servers = map[string]*server.MCPServer{"example": exampleserver.New(exampleserver.Options{TestTools: true})}
	}
	cfg, err := registry.ParseConfig("servers.yaml", []byte(cfgText), func(string) (string, bool) { return "", false })
	if err != nil {
		tb.Fatal(err)
	}
	if opts.StateDir == "" {
		opts.StateDir = tb.TempDir()
	}
	opts.Downstream = localDownstream(servers)
	return startTestServer(tb, cfg, opts)
}

// startTestServer starts a proxy for cfg, waits until its servers have
// tried to start, and connects an in-process client to it.
func startTestServer(tb testing.TB, cfg *registry.Config, opts Options) (*Server, *client.Client) {
	tb.Helper()
	s := startServer(tb, cfg, opts)
	return s, connectInProcess(tb, s)
}

// startServer starts a proxy for cfg and waits until its servers have
// tried to start; the test's end closes it.
func startServer(tb testing.TB, cfg *registry.Config, opts Options) *Server {
	tb.Helper()
	s, err := New(cfg, opts)
	if err != nil {
		tb.Fatal(err)
	}
	s.Start(context.Background())
	tb.Cleanup(func() { s.Close() })
	select {
	case <-s.Ready():
	case <-time.After(20 * time.Second):
		tb.Fatal("the downstream servers did not start")
	}
	return s
}

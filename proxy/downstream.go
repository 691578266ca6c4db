package proxy

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/registry"
)

// Downstream is what the proxy needs of the servers behind it, as
// httputil.ReverseProxy needs a Transport: their catalog as it changes,
// a tools/call, a session with one server for the other methods passed
// through (prompts, resources, completion, logging), and a life (start,
// apply a new configuration, close). *registry.Registry is the real one;
// tests give the proxy servers that run in process.
type Downstream interface {
	// Start starts the servers in the background; the first catalog with
	// them, and every later one, reaches the OnChange hook New gave.
	Start(ctx context.Context)
	// Ready is closed once every server has tried to start; ReadyGen is
	// the generation of the catalog that says so.
	Ready() <-chan struct{}
	ReadyGen() uint64
	// Catalog is the newest catalog.
	Catalog() *registry.Catalog
	// Apply puts a new configuration in force and publishes its catalog.
	Apply(ctx context.Context, cfg *registry.Config) (registry.Change, error)
	// Call calls a tool by its exposed name and returns its result as the
	// server sent it: the proxy decodes only what it must (bytepath.go).
	Call(ctx context.Context, exposed string, args json.RawMessage, meta *mcp.Meta) (json.RawMessage, error)
	// Do runs f with the named server's client, or fails with
	// registry.ErrServerDown.
	Do(ctx context.Context, server string, f func(ctx context.Context, c *client.Client) error) error
	Close() error
}

// NewDownstream builds the downstream for cfg; hooks are the proxy's
// (catalog changes, relayed requests and notifications, pinning).
type NewDownstream func(cfg *registry.Config, hooks registry.Options) Downstream

// registryDownstream is the default: the servers servers.yaml names, run
// and reached by the registry.
func registryDownstream(cfg *registry.Config, hooks registry.Options) Downstream {
	return registry.New(cfg, hooks)
}

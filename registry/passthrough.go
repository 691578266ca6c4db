package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
)

// ErrUnknownServer is returned by Do for a name servers.yaml does not have.
var ErrUnknownServer = errors.New("unknown server")

// Do runs f with the named server's running client, under the server's
// per-call deadline. It is how everything but tools/call reaches a
// downstream server (prompts, resources, completion, logging level,
// subscriptions): the registry owns the connection, the caller owns the
// request. A server that is not running gives ErrServerDown; a transport
// that closes during f marks the server dead so it restarts, as a failed
// call would.
func (r *Registry) Do(ctx context.Context, server string, f func(ctx context.Context, c *client.Client) error) error {
	c := r.connFor(server) // the set of servers changes under Apply
	if c == nil {
		return fmt.Errorf("%w: %q", ErrUnknownServer, server)
	}
	return c.do(ctx, "request", f)
}

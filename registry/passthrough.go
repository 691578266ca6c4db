package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
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
	c.mu.Lock()
	cl, dead, state := c.client, c.dead, c.status.State
	c.mu.Unlock()
	if cl == nil {
		return fmt.Errorf("%w: %s is %s", ErrServerDown, server, state)
	}
	timeout := c.timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := f(ctx, cl)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, transport.ErrTransportClosed):
		c.markDead(dead)
		return fmt.Errorf("%w: %s stopped during the request", ErrServerDown, server)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return fmt.Errorf("%s did not answer within %s: %w", server, timeout, err)
	}
	return err
}

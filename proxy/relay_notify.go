package proxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/registry"
)

// notification handles a downstream notification. It runs on that
// server's read loop, so it never waits on the network: anything that needs
// a request (a re-list) goes to a goroutine.
func (r *relay) notification(srv string, n mcp.JSONRPCNotification) {
	switch n.Method {
	case string(mcp.MethodNotificationProgress):
		r.relayProgress(srv, n)
	case string(mcp.MethodNotificationMessage):
		r.relayLog(srv, n)
	case string(mcp.MethodNotificationResourceUpdated):
		r.relayUpdated(srv, n)
	case string(mcp.MethodNotificationPromptsListChanged):
		go r.s.pass.relist(srv, true, false)
	case string(mcp.MethodNotificationResourcesListChanged):
		go r.s.pass.relist(srv, false, true)
	}
}

// relayProgress maps a downstream progress token back to the upstream
// session and token it stands for. A token quiver never issued (or whose
// call has ended) reaches nobody.
func (r *relay) relayProgress(srv string, n mcp.JSONRPCNotification) {
	tok := fmt.Sprint(n.Params.AdditionalFields["progressToken"])
	r.mu.Lock()
	route, ok := r.progress[tok]
	r.mu.Unlock()
	if ok && route.server != srv {
		ok = false // another server's token: it speaks for no call of its own
	}
	if !ok {
		r.s.log.Warn("progress for a token quiver never issued (or whose call ended); dropped", "server", srv, "token", tok)
		return
	}
	redacted, _ := redactValue(map[string]any(maps.Clone(n.Params.AdditionalFields)), r.s.redactor())
	params := redacted.(map[string]any)
	params["progressToken"] = route.token
	send := func() error {
		return r.s.mcp.SendNotificationToSpecificClient(route.session, string(mcp.MethodNotificationProgress), params)
	}
	if route.ctx != nil {
		send = func() error {
			return r.s.mcp.SendNotificationToClient(route.ctx, string(mcp.MethodNotificationProgress), params)
		}
	}
	if err := send(); err != nil {
		r.s.log.Debug("progress not delivered", "session", route.session, "err", err)
	}
}

// relayLog sends a downstream log message to every session that set a
// logging level (mcp-go drops it for a session whose level is higher),
// with the logger prefixed by the server's name. MCP logging belongs to a
// connection, not to a call, so a message cannot be attributed to one
// session; only sessions that asked for logging get any.
func (r *relay) relayLog(srv string, n mcp.JSONRPCNotification) {
	level := mcp.LoggingLevel(fmt.Sprint(n.Params.AdditionalFields["level"]))
	logger, _ := n.Params.AdditionalFields["logger"].(string)
	if p := prefixOf(r.s.cfg(), srv); p != "" {
		if logger == "" {
			logger = srv
		} else {
			logger = srv + "/" + logger
		}
	}
	redact := r.s.redactor()
	data, _ := redactValue(n.Params.AdditionalFields["data"], redact)
	msg := mcp.NewLoggingMessageNotification(level, redact(logger), data)
	r.mu.Lock()
	targets := slices.Collect(maps.Keys(r.levels))
	r.mu.Unlock()
	for _, sid := range targets {
		if err := r.s.mcp.SendLogMessageToSpecificClient(sid, msg); err != nil {
			r.s.log.Debug("log message not delivered", "session", sid, "err", err)
		}
	}
}

// setLevel records a session's level and forwards the most verbose level
// any session wants to every server.
func (r *relay) setLevel(ctx context.Context, level mcp.LoggingLevel) {
	r.mu.Lock()
	r.levels[sessionID(ctx)] = level
	r.mu.Unlock()
	for _, srv := range r.s.cfg().Servers {
		go r.forwardLevel(srv.Name)
	}
}

// wantLevel is the most verbose level any session asked for, "" if none.
func (r *relay) wantLevel() mcp.LoggingLevel {
	order := []mcp.LoggingLevel{mcp.LoggingLevelDebug, mcp.LoggingLevelInfo, mcp.LoggingLevelNotice,
		mcp.LoggingLevelWarning, mcp.LoggingLevelError, mcp.LoggingLevelCritical, mcp.LoggingLevelAlert, mcp.LoggingLevelEmergency}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range order {
		for _, have := range r.levels {
			if have == l {
				return l
			}
		}
	}
	return ""
}

func (r *relay) forwardLevel(srv string) {
	level := r.wantLevel()
	if level == "" {
		return
	}
	err := r.s.reg.Do(context.Background(), srv, func(ctx context.Context, c *client.Client) error {
		if c.GetServerCapabilities().Logging == nil {
			return nil
		}
		req := mcp.SetLevelRequest{}
		req.Params.Level = level
		//lint:ignore SA1019 a host on a version with logging may set a downstream's level through quiver
		return c.SetLevel(ctx, req)
	})
	if err != nil && !errors.Is(err, registry.ErrServerDown) {
		r.s.log.Warn("logging/setLevel not forwarded", "server", srv, "err", err)
	}
}

// relayUpdated sends notifications/resources/updated to the sessions that
// subscribed to the resource, under the URI they know it by.
func (r *relay) relayUpdated(srv string, n mcp.JSONRPCNotification) {
	uri, _ := n.Params.AdditionalFields["uri"].(string)
	exposed := r.s.pass.exposeURI(srv, uri)
	if owner, _, err := r.s.pass.resolve(exposed); err != nil || owner != srv {
		// A server speaks for its own resources only: an update for a URI
		// another server owns is not passed on (red team: one server
		// faked another's updates).
		r.s.log.Warn("resource update for a URI this server does not own; dropped", "server", srv, "uri", r.s.redactor()(uri))
		return
	}
	r.mu.Lock()
	targets := slices.Collect(maps.Keys(r.subs[exposed]))
	r.mu.Unlock()
	if len(targets) == 0 {
		r.s.log.Debug("resource update nobody subscribed to", "server", srv, "uri", uri)
		return
	}
	params := maps.Clone(n.Params.AdditionalFields)
	params["uri"] = exposed
	redacted, _ := redactValue(map[string]any(params), r.s.redactor())
	params = redacted.(map[string]any)
	for _, sid := range targets {
		if err := r.s.mcp.SendNotificationToSpecificClient(sid, string(mcp.MethodNotificationResourceUpdated), params); err != nil {
			r.s.log.Debug("resource update not delivered", "session", sid, "err", err)
		}
	}
}

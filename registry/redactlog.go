package registry

import (
	"context"
	"log/slog"
)

// redactingHandler hides secrets from what a library logs through
// quiver's logger: mcp-go's transports log errors that quote a server's
// url, keys and all. It redacts the message and every attribute's text.
type redactingHandler struct {
	inner   slog.Handler
	secrets func() []Secret
}

func (h redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h redactingHandler) Handle(ctx context.Context, r slog.Record) error {
	secrets := h.secrets()
	out := slog.NewRecord(r.Time, r.Level, Redact(r.Message, secrets), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a, secrets))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h redactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	secrets := h.secrets()
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = redactAttr(a, secrets)
	}
	return redactingHandler{inner: h.inner.WithAttrs(red), secrets: h.secrets}
}

func (h redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{inner: h.inner.WithGroup(name), secrets: h.secrets}
}

// redactAttr is a with its text redacted: strings, errors and anything
// else that prints itself; numbers, times and the like stay as they are.
func redactAttr(a slog.Attr, secrets []Secret) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Redact(v.String(), secrets))
	case slog.KindAny:
		return slog.String(a.Key, Redact(v.String(), secrets))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = redactAttr(ga, secrets)
		}
		return slog.Group(a.Key, red...)
	}
	return slog.Attr{Key: a.Key, Value: v}
}

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
	// redactText, when set, is used instead of secrets (RedactingHandler).
	redactText func(string) string
}

// RedactingHandler wraps inner so that every record's message and every
// attribute's text (strings, errors, anything that prints itself, in
// groups too, and attributes added by With) go through redact, which
// hides the secrets in force when the record is handled: a logger that
// logs through it hides the current configuration's secrets whatever a
// line passes it (a progress token a server chose, a URL, an error's
// text).
func RedactingHandler(inner slog.Handler, redact func(string) string) slog.Handler {
	return redactingHandler{inner: inner, redactText: redact}
}

func (h redactingHandler) redact() func(string) string {
	if h.redactText != nil {
		return h.redactText
	}
	secrets := h.secrets()
	return func(s string) string { return Redact(s, secrets) }
}

func (h redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h redactingHandler) Handle(ctx context.Context, r slog.Record) error {
	redact := h.redact()
	out := slog.NewRecord(r.Time, r.Level, redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a, redact))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h redactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	redact := h.redact()
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = redactAttr(a, redact)
	}
	h.inner = h.inner.WithAttrs(red)
	return h
}

func (h redactingHandler) WithGroup(name string) slog.Handler {
	h.inner = h.inner.WithGroup(name)
	return h
}

// redactAttr is a with its text redacted: strings, errors and anything
// else that prints itself, and a number that spells a digits-only secret
// (a server's progress token, say); times and the like stay as they are.
func redactAttr(a slog.Attr, redact func(string) string) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindInt64, slog.KindUint64, slog.KindFloat64:
		if s := v.String(); redact(s) != s {
			return slog.String(a.Key, redact(s))
		}
	case slog.KindString:
		return slog.String(a.Key, redact(v.String()))
	case slog.KindAny:
		return slog.String(a.Key, redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = redactAttr(ga, redact)
		}
		return slog.Group(a.Key, red...)
	}
	return slog.Attr{Key: a.Key, Value: v}
}

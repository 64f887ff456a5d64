package secret

import (
	"context"
	"fmt"
	"log/slog"
)

// NewHandler wraps h so that every record's message, attribute keys and
// string values are redacted with s before h sees them: nested groups,
// values resolved from slog.LogValuer, errors, fmt.Stringers, byte slices
// and other values (by their %+v text, replaced by the redacted text only
// when it contains a secret). Attributes bound with WithAttrs are redacted
// when they are bound, with the secrets s holds at that moment.
func NewHandler(h slog.Handler, s *Set) slog.Handler {
	if s == nil {
		return h
	}
	return &handler{h: h, s: s}
}

type handler struct {
	h slog.Handler
	s *Set
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	nr := slog.NewRecord(r.Time, r.Level, h.s.Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		nr.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, nr)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &handler{h: h.h.WithAttrs(red), s: h.s}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{h: h.h.WithGroup(h.s.Redact(name)), s: h.s}
}

func (h *handler) attr(a slog.Attr) slog.Attr {
	a.Key = h.s.Redact(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(h.s.Redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]slog.Attr, len(g))
		for i, ga := range g {
			red[i] = h.attr(ga)
		}
		a.Value = slog.GroupValue(red...)
	case slog.KindAny:
		var text string
		switch x := v.Any().(type) {
		case nil:
			return a
		case error:
			text = x.Error()
		case fmt.Stringer:
			text = x.String()
		case []byte:
			text = string(x)
		default:
			text = fmt.Sprintf("%+v", x)
		}
		if red := h.s.Redact(text); red != text {
			a.Value = slog.StringValue(red)
		} else {
			a.Value = v
		}
	default:
		a.Value = v
	}
	return a
}

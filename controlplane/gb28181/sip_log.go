package gb28181

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
)

// zapHandler puts sipgo's slog records into the service's zap logger at
// debug level: the library reports transport details (a TCP peer gone,
// a retransmission) that are not the operator's business unless asked.
type zapHandler struct {
	log   *zap.Logger
	attrs []zap.Field
}

func (h zapHandler) Enabled(context.Context, slog.Level) bool {
	return h.log.Core().Enabled(zap.DebugLevel)
}

func (h zapHandler) Handle(_ context.Context, r slog.Record) error {
	fields := append([]zap.Field{}, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, zap.Any(a.Key, a.Value.Any()))
		return true
	})
	h.log.Debug(r.Message, fields...)
	return nil
}

func (h zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := zapHandler{log: h.log, attrs: append([]zap.Field{}, h.attrs...)}
	for _, a := range attrs {
		out.attrs = append(out.attrs, zap.Any(a.Key, a.Value.Any()))
	}
	return out
}

func (h zapHandler) WithGroup(name string) slog.Handler {
	return zapHandler{log: h.log.Named(name), attrs: h.attrs}
}

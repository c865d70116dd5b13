package telemetry

import (
	"context"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// Logger returns the process's logger while tracing is on (Start makes it the default):
// lines written with a context that holds a span (slog.InfoContext and the like) carry
// its trace_id and span_id, so a line leads to its trace. Off, the process keeps the
// standard logger.
func (t *Tracing) Logger(w io.Writer) *slog.Logger {
	return slog.New(traceHandler{slog.NewTextHandler(w, nil)})
}

// traceHandler adds the trace of a record's context to it.
type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(attrs)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}

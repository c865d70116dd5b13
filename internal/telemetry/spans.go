package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// scope names this service's own spans.
const scope = "seckill"

// Attributes of the spans written here, as the semantic conventions name them (db.system
// beside the newer db.system.name, which some back ends do not read yet).
var (
	Redis = []attribute.KeyValue{attribute.String("db.system", "redis"), attribute.String("db.system.name", "redis")}
	MySQL = []attribute.KeyValue{attribute.String("db.system", "mysql"), attribute.String("db.system.name", "mysql")}
)

// Child starts a span under the span of ctx when that span is recording, and otherwise
// returns ctx and the span it holds (a no-op one) at the cost of a look-up: with tracing
// off, or a trace not sampled, nothing is made.
func Child(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(scope).Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// End ends span with err's status (nil: unset, as for a success).
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Traceparent is the W3C traceparent of the span of ctx when its trace is sampled, ""
// otherwise (nothing to carry).
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsSampled() {
		return ""
	}
	c := propagation.MapCarrier{}
	Propagator.Inject(ctx, c)
	return c["traceparent"]
}

// FromTraceparent returns ctx carrying the remote span of a traceparent; ctx as it is
// for "" or a malformed one.
func FromTraceparent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return Propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// Remote starts a span of kind under the remote parent of a traceparent, on tp; ctx and
// a no-op span for "" or a malformed traceparent, or one not sampled: a task or an event
// that came without a sampled trace starts none.
func Remote(ctx context.Context, tp trace.TracerProvider, traceparent, name string, kind trace.SpanKind,
	attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	pctx := FromTraceparent(ctx, traceparent)
	if !trace.SpanContextFromContext(pctx).IsSampled() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return tp.Tracer(scope).Start(pctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// Orders are the spans of the orders of a worker's task that came with a sampled trace:
// each order's span (under the API's span of its purchase) and the steps done for it.
// The worker writes many orders in one Redis script and one MySQL transaction; each
// order's trace gets a span of each, with the batch's size. A nil *Orders (no order
// traced) does nothing.
type Orders struct {
	spans map[string]trace.Span
	ctxs  map[string]context.Context
}

// StartOrders starts the span name of each order whose traceparent parents names (by
// order id); nil when none is sampled.
func StartOrders(ctx context.Context, tp trace.TracerProvider, parents map[string]string, name string,
	attrs ...attribute.KeyValue) *Orders {
	var o *Orders
	for id, tp2 := range parents {
		octx, span := Remote(ctx, tp, tp2, name, trace.SpanKindConsumer, append(attrs, attribute.String("order.id", id))...)
		if !span.IsRecording() {
			continue
		}
		if o == nil {
			o = &Orders{spans: map[string]trace.Span{}, ctxs: map[string]context.Context{}}
		}
		o.spans[id], o.ctxs[id] = span, octx
	}
	return o
}

// Traced reports whether any order has a span.
func (o *Orders) Traced() bool { return o != nil }

// Traceparent is the traceparent of the order's span ("" for an order not traced), for
// what the order makes next (its events).
func (o *Orders) Traceparent(id string) string {
	if o == nil {
		return ""
	}
	ctx, ok := o.ctxs[id]
	if !ok {
		return ""
	}
	return Traceparent(ctx)
}

// Context is ctx with the span of order id, when it has one, for the lines logged
// about it (they then carry its trace_id).
func (o *Orders) Context(ctx context.Context, id string) context.Context {
	if o == nil {
		return ctx
	}
	if span, ok := o.spans[id]; ok {
		return trace.ContextWithSpan(ctx, span)
	}
	return ctx
}

// Step is one call done for several orders at once, started by Orders.Step.
type Step struct {
	o     *Orders
	ids   []string
	name  string
	start time.Time
	attrs []attribute.KeyValue
}

// Step starts a step named name done for the orders ids (those traced get a span of it
// when it ends).
func (o *Orders) Step(ids []string, name string, attrs ...attribute.KeyValue) *Step {
	if o == nil {
		return nil
	}
	return &Step{o: o, ids: ids, name: name, start: time.Now(), attrs: append(attrs, attribute.Int("batch.orders", len(ids)))}
}

// End records the step in the trace of each traced order it served, with err's status.
func (s *Step) End(err error) {
	if s == nil {
		return
	}
	end := time.Now()
	for _, id := range s.ids {
		ctx, ok := s.o.ctxs[id]
		if !ok {
			continue
		}
		_, span := trace.SpanFromContext(ctx).TracerProvider().Tracer(scope).Start(ctx, s.name,
			trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(s.start), trace.WithAttributes(s.attrs...))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End(trace.WithTimestamp(end))
	}
}

// End ends every order's span, with err's status (nil: a success).
func (o *Orders) End(err error) {
	if o == nil {
		return
	}
	for _, span := range o.spans {
		End(span, err)
	}
}

type ordersKey struct{}

// WithOrders returns ctx carrying o, for the steps of the task's orders below.
func WithOrders(ctx context.Context, o *Orders) context.Context {
	if o == nil {
		return ctx
	}
	return context.WithValue(ctx, ordersKey{}, o)
}

// OrdersFrom returns the Orders of ctx; nil for none.
func OrdersFrom(ctx context.Context) *Orders {
	o, _ := ctx.Value(ordersKey{}).(*Orders)
	return o
}

// Package telemetry exports OpenTelemetry traces of the API and the worker over OTLP,
// configured by the standard OTEL_ variables, and is off, costing a check, when no
// endpoint is set. It also carries a purchase's trace to the worker (a W3C traceparent
// per order, in the task's headers, and in the order's events) and gives the worker's
// orders their spans (Orders).
//
// The instrumentation is the maintained one where it fits: otelgin for the API's
// server spans, redisotel for Redis commands sent on a caller's context, GORM's plugin
// for MySQL statements. The purchase path's Redis script and the worker's batches, whose
// calls serve many traces at once (the coalescer, the auto-pipeliner, one transaction of
// many orders), get spans written here: a span in each trace that the call served.
package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Default service names (OTEL_SERVICE_NAME overrides them).
const (
	API    = "seckill-api"
	Worker = "seckill-worker"
)

// Tracing is a process's trace pipeline: a tracer provider exporting over OTLP. A nil
// *Tracing is tracing off: every method works and does nothing.
type Tracing struct {
	tp      *sdktrace.TracerProvider
	service string
}

// Getenv reads a variable; os.Getenv in the binaries, a map in tests.
type Getenv func(string) string

// Enabled reports whether the environment asks for traces: an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and neither
// OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none turns them off.
func Enabled(getenv Getenv) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Start builds the process's tracing from the environment (os.Getenv), named service
// unless OTEL_SERVICE_NAME names it, and makes the process's logger write each line's
// trace (Logger); nil, nil when tracing is off. A variable with a
// value it cannot use stops the start, naming it. The exporter's own variables
// (endpoint, headers, timeout, TLS, compression) are read by the OTLP exporter; the
// batch's (OTEL_BSP_*) by the SDK.
func Start(ctx context.Context, service string) (*Tracing, error) {
	return start(ctx, service, os.Getenv)
}

func start(ctx context.Context, service string, getenv Getenv) (*Tracing, error) {
	if !Enabled(getenv) {
		return nil, nil
	}
	sampler, err := Sampler(getenv)
	if err != nil {
		return nil, err
	}
	exporter, err := newExporter(ctx, getenv)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && res == nil { // a partial resource (a bad OTEL_RESOURCE_ATTRIBUTES entry) still serves
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler))
	// The SDK reports a batch it could not export here: one log line a minute, with the
	// count of errors since the last one.
	otel.SetErrorHandler(newErrorLog(time.Minute, time.Now, slog.Default))
	name := service
	if v, ok := res.Set().Value("service.name"); ok {
		name = v.AsString()
	}
	slog.SetDefault((&Tracing{}).Logger(os.Stderr)) // the lines of a traced request or order carry its trace_id
	slog.Info("tracing on: exporting OpenTelemetry traces over OTLP", "service", name,
		"protocol", protocol(getenv), "sampler", sampler.Description())
	return &Tracing{tp: tp, service: name}, nil
}

// newExporter is the OTLP exporter of OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL:
// http/protobuf (the default) or grpc.
func newExporter(ctx context.Context, getenv Getenv) (sdktrace.SpanExporter, error) {
	switch p := protocol(getenv); p {
	case "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: %q is not one this service speaks (http/protobuf, grpc)", p)
	}
}

func protocol(getenv Getenv) string {
	if p := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p != "" {
		return p
	}
	if p := getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" {
		return p
	}
	return "http/protobuf"
}

// On reports whether traces are exported.
func (t *Tracing) On() bool { return t != nil }

// Provider is the tracer provider for the instrumentation; a no-op one when off.
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil {
		return noop.NewTracerProvider()
	}
	return t.tp
}

// Service is the service name the traces carry ("" when off).
func (t *Tracing) Service() string {
	if t == nil {
		return ""
	}
	return t.service
}

// Close exports the spans still buffered, for up to 5 s, and says in the log what it
// had to drop.
func (t *Tracing) Close() {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.tp.Shutdown(ctx); err != nil {
		slog.Warn("tracing: spans still buffered at exit were dropped", "err", err)
	}
}

// Propagator is how a trace crosses a process boundary: the W3C traceparent (and
// tracestate) headers. A malformed traceparent is ignored: the request starts a trace.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Sampler is OTEL_TRACES_SAMPLER's sampler (default parentbased_always_on, with
// OTEL_TRACES_SAMPLER_ARG the ratio of the traceidratio ones, default 1), under one
// rule of this service: a span of a client (a Redis command, a MySQL statement) with no
// span around it starts no trace, so the periodic jobs' and the auto-pipeliner's own
// calls make no traces of one span each.
func Sampler(getenv Getenv) (sdktrace.Sampler, error) {
	ratio := 1.0
	if arg := getenv("OTEL_TRACES_SAMPLER_ARG"); arg != "" {
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG: %q is not a ratio from 0 to 1", arg)
		}
		ratio = r
	}
	var s sdktrace.Sampler
	switch name := getenv("OTEL_TRACES_SAMPLER"); name {
	case "", "parentbased_always_on":
		s = sdktrace.ParentBased(sdktrace.AlwaysSample())
	case "parentbased_always_off":
		s = sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		s = sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
	case "always_on":
		s = sdktrace.AlwaysSample()
	case "always_off":
		s = sdktrace.NeverSample()
	case "traceidratio":
		s = sdktrace.TraceIDRatioBased(ratio)
	default:
		return nil, fmt.Errorf("OTEL_TRACES_SAMPLER: %q is not a sampler this service knows (always_on, always_off, "+
			"traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio)", name)
	}
	return noOrphanClients{s}, nil
}

// noOrphanClients drops a client span that has no parent, and asks next about the rest.
type noOrphanClients struct{ next sdktrace.Sampler }

func (s noOrphanClients) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if p.Kind == trace.SpanKindClient && !trace.SpanContextFromContext(p.ParentContext).IsValid() {
		return sdktrace.SamplingResult{Decision: sdktrace.Drop}
	}
	return s.next.ShouldSample(p)
}

func (s noOrphanClients) Description() string {
	return s.next.Description() + " (no trace of a client span alone)"
}

// errorLog logs the SDK's errors (an export that failed: a collector unreachable) at
// most once per interval, with how many came since the last line.
type errorLog struct {
	interval time.Duration
	now      func() time.Time
	log      func() *slog.Logger // the logger in force when an error comes

	mu       sync.Mutex
	last     time.Time
	withheld int
}

func newErrorLog(interval time.Duration, now func() time.Time, log func() *slog.Logger) *errorLog {
	return &errorLog{interval: interval, now: now, log: log}
}

// Handle is otel.ErrorHandler's.
func (l *errorLog) Handle(err error) {
	l.mu.Lock()
	now := l.now()
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		l.withheld++
		l.mu.Unlock()
		return
	}
	withheld := l.withheld
	l.last, l.withheld = now, 0
	l.mu.Unlock()
	l.log().Warn("tracing: spans dropped, the OTLP collector did not take them (said at most once a minute)",
		"err", err, "errors_since_last_line", withheld)
}

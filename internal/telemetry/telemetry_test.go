package telemetry

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

func env(vars map[string]string) Getenv { return func(k string) string { return vars[k] } }

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		vars map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_SERVICE_NAME": "shop"}, false},
	} {
		if got := Enabled(env(tc.vars)); got != tc.want {
			t.Errorf("Enabled(%v) = %v, want %v", tc.vars, got, tc.want)
		}
	}
}

func TestSampler(t *testing.T) {
	for _, tc := range []struct {
		sampler, arg string
		want         string // the description's start; "" for an error
	}{
		{"", "", "ParentBased{root:AlwaysOnSampler"},
		{"parentbased_always_on", "", "ParentBased{root:AlwaysOnSampler"},
		{"parentbased_traceidratio", "0.01", "ParentBased{root:TraceIDRatioBased{0.01}"},
		{"parentbased_always_off", "", "ParentBased{root:AlwaysOffSampler"},
		{"traceidratio", "0.5", "TraceIDRatioBased{0.5}"},
		{"always_on", "", "AlwaysOnSampler"},
		{"always_off", "", "AlwaysOffSampler"},
		{"sometimes", "", ""},
		{"traceidratio", "2", ""},
		{"traceidratio", "half", ""},
	} {
		s, err := Sampler(env(map[string]string{"OTEL_TRACES_SAMPLER": tc.sampler, "OTEL_TRACES_SAMPLER_ARG": tc.arg}))
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("Sampler(%q, %q) = %s, want an error", tc.sampler, tc.arg, s.Description())
		case tc.want == "" && !strings.Contains(err.Error(), "OTEL_TRACES_SAMPLER"):
			t.Errorf("Sampler(%q, %q): error %q does not name the variable", tc.sampler, tc.arg, err)
		case tc.want != "" && err != nil:
			t.Errorf("Sampler(%q, %q): %v", tc.sampler, tc.arg, err)
		case tc.want != "" && !strings.HasPrefix(s.Description(), tc.want):
			t.Errorf("Sampler(%q, %q) = %s, want %s...", tc.sampler, tc.arg, s.Description(), tc.want)
		}
	}
}

// recorder is a tracer provider whose ended spans are kept for the test.
func recorder(t *testing.T, sampler sdktrace.Sampler) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sampler))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

func TestNoTraceOfAClientSpanAlone(t *testing.T) {
	sampler, err := Sampler(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	tp, rec := recorder(t, sampler)
	tr := tp.Tracer("test")
	_, orphan := tr.Start(context.Background(), "GET", trace.WithSpanKind(trace.SpanKindClient))
	orphan.End()
	ctx, server := tr.Start(context.Background(), "POST /orders", trace.WithSpanKind(trace.SpanKindServer))
	_, child := tr.Start(ctx, "EVALSHA", trace.WithSpanKind(trace.SpanKindClient))
	child.End()
	server.End()
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	if got, want := strings.Join(names, ","), "EVALSHA,POST /orders"; got != want {
		t.Errorf("spans recorded %q, want %q (a client span with no parent makes no trace)", got, want)
	}
}

func TestChildOnlyUnderARecordingSpan(t *testing.T) {
	tp, rec := recorder(t, sdktrace.AlwaysSample())
	ctx, span := Child(context.Background(), "redis reserve", trace.SpanKindClient, Redis...)
	if span.IsRecording() || ctx != context.Background() {
		t.Fatal("Child made a span with no span around it")
	}
	span.End()
	parentCtx, parent := tp.Tracer("test").Start(context.Background(), "purchase")
	_, span = Child(parentCtx, "redis reserve", trace.SpanKindClient, Redis...)
	span.End()
	parent.End()
	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans ended, want 2", len(ended))
	}
	got := ended[0]
	if got.Parent().SpanID() != parent.SpanContext().SpanID() || got.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("the child is not under its parent")
	}
	attrs := map[string]string{}
	for _, a := range got.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	if attrs["db.system"] != "redis" {
		t.Errorf("db.system = %q, want redis", attrs["db.system"])
	}
}

func TestTraceparent(t *testing.T) {
	tp, _ := recorder(t, sdktrace.AlwaysSample())
	if got := Traceparent(context.Background()); got != "" {
		t.Errorf("Traceparent of no span = %q, want empty", got)
	}
	ctx, span := tp.Tracer("test").Start(context.Background(), "x")
	defer span.End()
	tp1 := Traceparent(ctx)
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if tp1 != want {
		t.Errorf("Traceparent = %q, want %q", tp1, want)
	}
	back := trace.SpanContextFromContext(FromTraceparent(context.Background(), tp1))
	if back.TraceID() != span.SpanContext().TraceID() || !back.IsRemote() {
		t.Errorf("FromTraceparent(%q) = %v", tp1, back)
	}
	_, unsampled := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())).Tracer("t").Start(context.Background(), "y")
	if got := Traceparent(trace.ContextWithSpan(context.Background(), unsampled)); got != "" {
		t.Errorf("Traceparent of a span not sampled = %q, want empty (nothing to carry)", got)
	}
	for _, bad := range []string{"", "garbage", "00-zz-yy-01", "00-00000000000000000000000000000000-0000000000000000-01",
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"} {
		if sc := trace.SpanContextFromContext(FromTraceparent(context.Background(), bad)); sc.IsValid() {
			t.Errorf("FromTraceparent(%q) = %v, want no span (ignored)", bad, sc)
		}
	}
}

func TestOrdersSpanEachTrace(t *testing.T) {
	tp, rec := recorder(t, sdktrace.ParentBased(sdktrace.AlwaysSample()))
	if o := StartOrders(context.Background(), tp, nil, "persist order"); o.Traced() {
		t.Fatal("orders without traceparents are traced")
	}
	tr := tp.Tracer("test")
	ctxA, a := tr.Start(context.Background(), "purchase a")
	ctxB, b := tr.Start(context.Background(), "purchase b")
	a.End()
	b.End()
	notSampled := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	parents := map[string]string{"A": Traceparent(ctxA), "B": Traceparent(ctxB), "C": notSampled, "D": "malformed"}
	o := StartOrders(context.Background(), tp, parents, "persist order")
	if !o.Traced() {
		t.Fatal("no order traced")
	}
	if o.Traceparent("C") != "" || o.Traceparent("D") != "" || o.Traceparent("E") != "" {
		t.Error("an order without a sampled trace has a traceparent")
	}
	step := o.Step([]string{"A", "B", "C", "D", "E"}, "mysql transaction", MySQL...)
	step.End(nil)
	o.End(nil)
	byTrace := map[trace.TraceID][]string{}
	for _, s := range rec.Ended() {
		byTrace[s.SpanContext().TraceID()] = append(byTrace[s.SpanContext().TraceID()], s.Name())
	}
	for _, p := range []trace.Span{a, b} {
		got := strings.Join(byTrace[p.SpanContext().TraceID()], ",")
		if want := "purchase a"; p == b {
			want = "purchase b"
			if got != "purchase b,mysql transaction,persist order" {
				t.Errorf("trace of b holds %q", got)
			}
		} else if got != want+",mysql transaction,persist order" {
			t.Errorf("trace of a holds %q", got)
		}
	}
	if len(byTrace) != 2 {
		t.Errorf("%d traces, want 2 (the orders not sampled start none)", len(byTrace))
	}
	var nilOrders *Orders // every method of no orders traced does nothing
	nilOrders.Step([]string{"A"}, "x").End(nil)
	nilOrders.End(nil)
}

func TestErrorLogOncePerInterval(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	now := time.Unix(0, 0)
	l := newErrorLog(time.Minute, func() time.Time { return now }, func() *slog.Logger { return logger })
	for i := 0; i < 5; i++ {
		l.Handle(io.ErrUnexpectedEOF)
		now = now.Add(10 * time.Second)
	}
	if n := strings.Count(buf.String(), "spans dropped"); n != 1 {
		t.Fatalf("%d lines in 50 s, want 1:\n%s", n, buf.String())
	}
	now = now.Add(20 * time.Second)
	l.Handle(io.ErrUnexpectedEOF)
	if n := strings.Count(buf.String(), "spans dropped"); n != 2 || !strings.Contains(buf.String(), "errors_since_last_line=4") {
		t.Fatalf("after a minute: %d lines, want 2 with the 4 errors withheld:\n%s", n, buf.String())
	}
}

// collector is an OTLP/HTTP receiver that keeps the spans it gets, by service name.
type collector struct {
	mu    sync.Mutex
	spans map[string][]string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req collectortrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, a := range rs.Resource.Attributes {
			if a.Key == "service.name" {
				service = a.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans[service] = append(c.spans[service], s.Name)
			}
		}
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

func TestStartExportsOverOTLP(t *testing.T) {
	c := &collector{spans: map[string][]string{}}
	srv := httptest.NewServer(c)
	defer srv.Close()
	for _, tc := range []struct {
		name    string
		vars    map[string]string
		service string
	}{
		{"default name", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}, API},
		{"named", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_SERVICE_NAME": "shop-api"}, "shop-api"},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.URL + "/v1/traces",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, API},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SERVICE_NAME",
				"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_TRACES_SAMPLER"} {
				t.Setenv(k, tc.vars[k])
			}
			tr, err := Start(context.Background(), API)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Service() != tc.service {
				t.Errorf("service %q, want %q", tr.Service(), tc.service)
			}
			_, span := tr.Provider().Tracer("test").Start(context.Background(), tc.name, trace.WithSpanKind(trace.SpanKindServer))
			span.End()
			tr.Close() // exports what is buffered
			c.mu.Lock()
			defer c.mu.Unlock()
			if got := strings.Join(c.spans[tc.service], ","); !strings.Contains(got, tc.name) {
				t.Errorf("the collector got %q of %s, want %q", got, tc.service, tc.name)
			}
		})
	}
}

// grpcCollector is an OTLP/gRPC receiver that keeps the names of the spans it gets.
type grpcCollector struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []string
}

func (c *grpcCollector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans = append(c.spans, s.Name)
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func TestStartExportsOverGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	c := &grpcCollector{}
	collectortrace.RegisterTraceServiceServer(srv, c)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	tr, err := Start(context.Background(), Worker)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Provider().Tracer("test").Start(context.Background(), "over grpc", trace.WithSpanKind(trace.SpanKindConsumer))
	span.End()
	tr.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.spans, "over grpc") {
		t.Errorf("the gRPC collector got %v, want the span", c.spans)
	}
}

func TestStartRefusesWhatItCannotUse(t *testing.T) {
	for _, tc := range []struct{ k, v, names string }{
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"OTEL_TRACES_SAMPLER", "maybe", "OTEL_TRACES_SAMPLER"},
	} {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
		t.Setenv(tc.k, tc.v)
		if _, err := Start(context.Background(), API); err == nil || !strings.Contains(err.Error(), tc.names) {
			t.Errorf("%s=%s: error %v, want one naming %s", tc.k, tc.v, err, tc.names)
		}
		t.Setenv(tc.k, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	tr, err := Start(context.Background(), API)
	if err != nil || tr.On() || tr.Gin() != nil {
		t.Errorf("no endpoint: %v, %v: want tracing off, no middleware", tr, err)
	}
	tr.Close() // off: nothing to do
}

func TestLogLinesCarryTheTrace(t *testing.T) {
	var buf bytes.Buffer
	tp, _ := recorder(t, sdktrace.AlwaysSample())
	logger := (&Tracing{tp: tp}).Logger(&buf)
	ctx, span := tp.Tracer("test").Start(context.Background(), "x")
	defer span.End()
	logger.InfoContext(ctx, "traced")
	logger.Info("plain")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "trace_id="+span.SpanContext().TraceID().String()) ||
		strings.Contains(lines[1], "trace_id") {
		t.Errorf("log lines:\n%s\nwant trace_id on the first only", buf.String())
	}
}

var _ propagation.TextMapPropagator = Propagator

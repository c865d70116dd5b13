package handler_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"seckill/internal/funnel"
	"seckill/internal/handler"
	"seckill/internal/testutil"
)

// BenchmarkSoldOutAnswer is the API's own work for a purchase of a sold-out sale (the
// answer of most of a flash crowd), through the routes and middleware of the real
// handler with no network: the same 20,000 buyers retry, with the limits off and on
// (each buyer with an address of its own, forwarded by a trusted proxy), and from a
// shop's page on an origin SECKILL_CORS_ORIGINS lists. cpu-ns/op is
// the CPU the process spent per answer, which other work on the machine does not
// inflate as it does ns/op.
//
//	go test -run '^$' -bench SoldOutAnswer -benchmem ./internal/handler/
func BenchmarkSoldOutAnswer(b *testing.B) {
	for _, bc := range []struct {
		name   string
		o      handler.Options
		origin string // the Origin header, "" for none
	}{
		{"limits off", handler.Options{}, ""},
		{"limits on", handler.Options{RateUser: 20, RateIP: 200, TrustedProxies: []string{"192.0.2.1/32"},
			APIs: func() int { return 1 }}, ""},
		{"limits off, from a listed origin", handler.Options{CORSOrigins: []string{"https://shop.example"}}, "https://shop.example"},
		// the funnel's count of refusals, and traces on with 1 % sampled (no exporter:
		// the API's own share of tracing's cost)
		{"limits off, refusals counted", handler.Options{Refusals: funnel.NewRefusals()}, ""},
		{"limits off, refusals counted, 1% traced", handler.Options{Refusals: funnel.NewRefusals(),
			Trace: otelgin.Middleware("bench", otelgin.WithTracerProvider(sdktrace.NewTracerProvider(
				sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))))))}, ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := newStack(b, bc.o)
			now := time.Now()
			act := s.sale(1, 1, now.Add(-time.Minute), now.Add(time.Hour))
			path := fmt.Sprintf("/api/v1/activities/%d/orders", act)
			if a := s.do(call{method: "POST", path: path, token: testutil.Token(b, 1, false), body: `{"quantity":1}`}); a.status != http.StatusAccepted {
				b.Fatalf("the only unit: %d %s", a.status, a.body)
			}
			routes := s.routes
			const buyers = 20_000
			tokens := make([]string, buyers)
			for i := range tokens {
				tokens[i] = "Bearer " + testutil.Token(b, int64(100+i), false)
			}
			ask := func(i int) *httptest.ResponseRecorder {
				req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"quantity":1}`))
				req.RemoteAddr = "192.0.2.1:4000"
				req.Header.Set("Authorization", tokens[i%buyers])
				req.Header.Set("X-Forwarded-For", "10.0."+strconv.Itoa(i%buyers/250)+"."+strconv.Itoa(i%250))
				if bc.origin != "" {
					req.Header.Set("Origin", bc.origin)
				}
				w := httptest.NewRecorder()
				routes.ServeHTTP(w, req)
				return w
			}
			for i := range buyers { // every token verified once: the cache holds them, as in a crowd
				ask(i)
			}
			if w := ask(0); w.Header().Get("Access-Control-Allow-Origin") != bc.origin {
				b.Fatalf("Access-Control-Allow-Origin %q for Origin %q", w.Header().Get("Access-Control-Allow-Origin"), bc.origin)
			}
			b.ResetTimer()
			cpu := testutil.OwnCPU()
			defer func() { b.ReportMetric(float64((testutil.OwnCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op") }()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if w := ask(i); w.Code != http.StatusConflict {
						b.Errorf("answer %d %s", w.Code, w.Body)
						return
					}
					i++
				}
			})
		})
	}
}

// BenchmarkPurchaseAnswer is the API's own work for an accepted purchase (the 202 of a
// crowd's new buyers, each verified once), through the routes and middleware of the real
// handler with no network, 64 at a time so that the reserve calls and the commits gather
// purchases as under a crowd. The stack's worker runs in the same process, so cpu-ns/op
// counts the order's persisting too: compare builds by it, run against run, and read the
// API's share alone in `make profile`. The network's reads and writes, which the HTTP
// server adds per request, are not in it.
//
//	go test -run '^$' -bench PurchaseAnswer -benchtime 20000x -benchmem ./internal/handler/
func BenchmarkPurchaseAnswer(b *testing.B) {
	s := newStack(b, handler.Options{})
	now := time.Now()
	act := s.sale(1_000_000_000, 1, now.Add(-time.Minute), now.Add(time.Hour))
	path := fmt.Sprintf("/api/v1/activities/%d/orders", act)
	tokens := make([]string, b.N+1)
	for i := range tokens {
		tokens[i] = "Bearer " + testutil.Token(b, int64(1000+i), false)
	}
	buy := func(i int) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"quantity":1}`))
		req.Header.Set("Authorization", tokens[i])
		w := httptest.NewRecorder()
		s.routes.ServeHTTP(w, req)
		return w
	}
	if w := buy(b.N); w.Code != http.StatusAccepted { // every script loaded
		b.Fatalf("first purchase: %d %s", w.Code, w.Body)
	}
	var next atomic.Int64
	b.SetParallelism(32) // 64 goroutines on two cores
	b.ResetTimer()
	cpu := testutil.OwnCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if w := buy(int(next.Add(1) - 1)); w.Code != http.StatusAccepted {
				b.Errorf("answer %d %s", w.Code, w.Body)
				return
			}
		}
	})
	b.ReportMetric(float64((testutil.OwnCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

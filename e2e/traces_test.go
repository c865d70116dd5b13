package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// TestPurchaseTraceInJaeger sends a purchase with a traceparent to real processes that
// export to a real Jaeger, and finds the whole trace through Jaeger's query API: the
// API's span of the request under the caller's span, the reserve script (db.system
// redis), the worker's span of the order's task, its MySQL transaction (db.system
// mysql) and the delivery of order.created to the shop's webhook. A malformed
// traceparent starts a trace of its own.
func TestPurchaseTraceInJaeger(t *testing.T) {
	jaeger := testutil.StartJaeger(t)
	s := testutil.StartStack(t, append(jaeger.Env(), "SECKILL_WEBHOOK_ALLOW_PRIVATE=true")...)
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	hook := testutil.StartReceiver(t)
	c.subscribe(admin, hook, "order.created")
	a := c.createSale(admin, 10, 1)

	traceID, parent := randomHex(t, 16), randomHex(t, 8)
	res := c.must("POST", "/api/v1/activities/"+strconv.FormatInt(a.ID, 10)+"/orders", testutil.Token(t, 7, false), map[string]int{"quantity": 1},
		"traceparent", "00-"+traceID+"-"+parent+"-01")
	if res.Status != http.StatusAccepted {
		t.Fatalf("purchase: %d %s", res.Status, res.Body)
	}
	orderID := orderOf(t, res)

	// Each span the contract names, by what marks it.
	type want struct {
		what    string
		service string
		match   func(testutil.Span) bool
	}
	wants := []want{
		{"the API's span of the request, under the caller's", "seckill-api", func(s testutil.Span) bool {
			return s.Tag("span.kind") == "server" && s.Parent() == parent
		}},
		{"the reserve script", "seckill-api", func(s testutil.Span) bool {
			return s.Tag("db.system") == "redis" && s.Tag("order.id") == orderID
		}},
		{"the worker's span of the order's task", "seckill-worker", func(s testutil.Span) bool {
			return s.OperationName == "persist order" && s.Tag("order.id") == orderID
		}},
		{"the worker's MySQL transaction", "seckill-worker", func(s testutil.Span) bool { return s.Tag("db.system") == "mysql" }},
		{"the delivery of order.created", "seckill-worker", func(s testutil.Span) bool {
			return s.OperationName == "webhook delivery" && s.Tag("http.response.status_code") == "200"
		}},
	}
	var spans []testutil.Span
	missing := func() []string {
		var out []string
		for _, w := range wants {
			found := false
			for _, sp := range spans {
				found = found || sp.Service == w.service && sp.TraceID == traceID && w.match(sp)
			}
			if !found {
				out = append(out, w.what)
			}
		}
		return out
	}
	deadline := time.Now().Add(30 * time.Second)
	for spans = jaeger.Trace(t, traceID); len(missing()) > 0; spans = jaeger.Trace(t, traceID) {
		if time.Now().After(deadline) {
			var got []string
			for _, sp := range spans {
				got = append(got, sp.Service+": "+sp.OperationName)
			}
			t.Fatalf("trace %s lacks %s after 30 s; it holds:\n%s", traceID, strings.Join(missing(), ", "), strings.Join(got, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, sp := range spans {
		t.Logf("%s %s: %s (parent %s, db.system %q)", sp.TraceID, sp.Service, sp.OperationName, sp.Parent(), sp.Tag("db.system"))
	}
	if got := len(hook.Deliveries()); got != 1 {
		t.Errorf("the webhook got %d deliveries, want 1", got)
	}

	// A malformed traceparent is no error: the purchase is taken, in a trace of its own.
	res = c.must("POST", "/api/v1/activities/"+strconv.FormatInt(a.ID, 10)+"/orders", testutil.Token(t, 8, false), map[string]int{"quantity": 1},
		"traceparent", "00-not-a-trace-01")
	if res.Status != http.StatusAccepted {
		t.Fatalf("purchase with a malformed traceparent: %d %s", res.Status, res.Body)
	}
	other := orderOf(t, res)
	waitUntil(t, "the malformed traceparent's purchase in a trace of its own", 30*time.Second, func() bool {
		found := jaeger.Find(t, "seckill-api", "order.id", other)
		for _, sp := range found {
			if sp.Tag("span.kind") == "server" && sp.Parent() == "" && sp.TraceID != traceID {
				return true
			}
		}
		return false
	})
}

func orderOf(t *testing.T, res response) string {
	t.Helper()
	var o struct {
		ID string `json:"id"`
	}
	res.decode(t, &o)
	return o.ID
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestUnreachableCollector: a collector that does not answer costs purchases nothing;
// the API drops the batches it cannot send and says so in one log line a minute.
func TestUnreachableCollector(t *testing.T) {
	closed := testutil.ClosedPort(t)
	s := testutil.StartStack(t, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+closed, "OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_EXPORTER_OTLP_TIMEOUT=300")
	c := newClient(t, s.URL)
	a := c.createSale(testutil.Token(t, 1, true), 100_000, 1)
	deadline := time.Now().Add(3 * time.Second)
	var n int64
	for u := int64(100); time.Now().Before(deadline); u++ {
		res := c.must("POST", "/api/v1/activities/"+strconv.FormatInt(a.ID, 10)+"/orders", testutil.Token(t, u, false),
			map[string]int{"quantity": 1})
		if res.Status != http.StatusAccepted {
			t.Fatalf("purchase %d with the collector down: %d %s", u, res.Status, res.Body)
		}
		n++
	}
	waitUntil(t, "the API says the spans were dropped", 10*time.Second, func() bool {
		return strings.Contains(s.API.Output(), "tracing: spans dropped")
	})
	time.Sleep(time.Second) // more batches fail meanwhile: still one line
	t.Logf("%d purchases with the collector down; the line: %s", n, lineWith(s.API.Output(), "tracing: spans dropped"))
	if got := strings.Count(s.API.Output(), "tracing: spans dropped"); got != 1 {
		t.Errorf("%d log lines about dropped spans in %d purchases' time, want 1 a minute", got, n)
	}
}

// lineWith is the first line of out that holds s.
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

package handler_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/internal/handler"
	"seckill/internal/testutil"
)

const (
	shop  = "https://shop.example"
	other = "https://elsewhere.example"
)

// corsHeaders are the CORS headers of an answer, for the messages.
func corsHeaders(h http.Header) string {
	var b strings.Builder
	for _, k := range []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers",
		"Access-Control-Max-Age", "Access-Control-Expose-Headers", "Vary"} {
		if v := h.Values(k); len(v) > 0 {
			fmt.Fprintf(&b, " %s=%q", k, strings.Join(v, ", "))
		}
	}
	return b.String()
}

// wantCORS checks that an answer is readable by origin's page (the origin echoed,
// Retry-After exposed), or, with origin "", that it carries no Access-Control header.
// Answers of /api/v1 vary by Origin whoever asks.
func wantCORS(t *testing.T, what string, a answer, origin string, api bool) {
	t.Helper()
	got := corsHeaders(a.header)
	if vary := slices.Contains(a.header.Values("Vary"), "Origin"); vary != api {
		t.Errorf("%s: Vary: Origin %v, want %v (%s)", what, vary, api, got)
	}
	if origin == "" {
		if strings.Contains(got, "Access-Control") {
			t.Errorf("%s: CORS headers for an origin not listed:%s", what, got)
		}
		return
	}
	if a.header.Get("Access-Control-Allow-Origin") != origin || a.header.Get("Access-Control-Expose-Headers") != "Retry-After" {
		t.Errorf("%s:%s; want Access-Control-Allow-Origin %s and Retry-After exposed", what, got, origin)
	}
}

// TestCORS: with two origins listed, a preflight from either is answered 204 with the
// methods the router has for its path, the headers the API reads and a max age; every
// answer to them carries their origin, refusals included; an origin not listed, the
// service's own pages and its probes get no CORS header; a preflight for a path the
// API does not have is the usual 404.
func TestCORS(t *testing.T) {
	s := newStack(t, handler.Options{CORSOrigins: []string{shop, "http://127.0.0.1:8081"}})
	now := time.Now()
	act := s.sale(10, 2, now.Add(-time.Minute), now.Add(time.Hour))
	buyer := testutil.Token(t, 42, false)
	orders := fmt.Sprintf("/api/v1/activities/%d/orders", act)

	preflight := func(origin, path, method string) answer {
		return s.do(call{method: "OPTIONS", path: path, header: map[string]string{"Origin": origin,
			"Access-Control-Request-Method": method, "Access-Control-Request-Headers": "authorization,content-type,idempotency-key,x-sale-pass"}})
	}
	for _, tc := range []struct {
		path, method string
		methods      []string // the router's, for the path, sorted (every GET has its HEAD)
	}{
		{orders, "POST", []string{"POST"}},
		{fmt.Sprintf("/api/v1/activities/%d/line", act), "POST", []string{"GET", "HEAD", "POST"}},
		{fmt.Sprintf("/api/v1/activities/%d", act), "GET", []string{"GET", "HEAD"}},
		{"/api/v1/orders/o-1/pay", "POST", []string{"POST"}},
		{"/api/v1/orders", "GET", []string{"GET", "HEAD"}},
		{"/api/v1/admin/activities/1", "PATCH", []string{"PATCH"}},
		{"/api/v1/admin/activities", "POST", []string{"GET", "HEAD", "POST"}},
		{"/api/v1/admin/webhooks/w-1", "DELETE", []string{"DELETE"}},
	} {
		for _, origin := range []string{shop, "http://127.0.0.1:8081"} {
			a := preflight(origin, tc.path, tc.method)
			methods := strings.Split(a.header.Get("Access-Control-Allow-Methods"), ", ")
			slices.Sort(methods)
			if a.status != http.StatusNoContent || a.body != "" || !slices.Equal(methods, tc.methods) ||
				a.header.Get("Access-Control-Allow-Headers") != "Authorization, Content-Type, Idempotency-Key, X-Sale-Pass, X-Access-Code" ||
				a.header.Get("Access-Control-Max-Age") != "7200" {
				t.Errorf("preflight %s %s from %s: %d %q%s; want 204 with methods %v, the four headers and a max age",
					tc.method, tc.path, origin, a.status, a.body, corsHeaders(a.header), tc.methods)
			}
			wantCORS(t, "preflight "+tc.path, a, origin, true)
		}
		a := preflight(other, tc.path, tc.method)
		wantError(t, a, http.StatusMethodNotAllowed, "method_not_allowed")
		wantCORS(t, "preflight from an origin not listed "+tc.path, a, "", true)
	}

	// A path the API does not have: 404 with the error body, preflight or not.
	for _, path := range []string{"/api/v1/nothing", "/api/v1/activities/1/orders/x", "/nothing"} {
		a := preflight(shop, path, "POST")
		wantError(t, a, http.StatusNotFound, "not_found")
		if a.header.Get("Access-Control-Allow-Methods") != "" {
			t.Errorf("preflight for %s: %s", path, corsHeaders(a.header))
		}
	}
	// An OPTIONS that is no preflight is the usual 405, readable by a listed origin.
	a := s.do(call{method: "OPTIONS", path: orders, header: map[string]string{"Origin": shop}})
	wantError(t, a, http.StatusMethodNotAllowed, "method_not_allowed")
	wantCORS(t, "OPTIONS without Access-Control-Request-Method", a, shop, true)
	if a.header.Get("Access-Control-Allow-Methods") != "" {
		t.Errorf("OPTIONS without Access-Control-Request-Method answered as a preflight:%s", corsHeaders(a.header))
	}
	// A preflight outside /api/v1: the service's own routes are not offered.
	a = preflight(shop, "/readyz", "GET")
	wantError(t, a, http.StatusMethodNotAllowed, "method_not_allowed")
	wantCORS(t, "preflight of /readyz", a, "", false)

	// The calls themselves, from each kind of origin.
	buy := func(origin, key string) answer {
		h := map[string]string{"Idempotency-Key": key, "Content-Type": "application/json"}
		if origin != "" {
			h["Origin"] = origin
		}
		return s.do(call{method: "POST", path: orders, token: buyer, body: `{"quantity":1}`, header: h})
	}
	a = buy(shop, "k-1")
	if a.status != http.StatusAccepted {
		t.Fatalf("purchase from %s: %d %s", shop, a.status, a.body)
	}
	wantCORS(t, "purchase", a, shop, true)
	wantCORS(t, "purchase from an origin not listed", buy(other, "k-2"), "", true)
	wantCORS(t, "purchase with no Origin", buy("", "k-3"), "", true)
	a = buy(shop, "k-4") // past the per-user limit of 2
	wantError(t, a, http.StatusConflict, "limit_exceeded")
	wantCORS(t, "refusal", a, shop, true)
	a = s.do(call{method: "POST", path: orders, body: `{"quantity":1}`, header: map[string]string{"Origin": shop}})
	wantError(t, a, http.StatusUnauthorized, "unauthorized")
	wantCORS(t, "401", a, shop, true)
	a = s.do(call{method: "GET", path: "/api/v1/nothing", header: map[string]string{"Origin": shop}})
	wantError(t, a, http.StatusNotFound, "not_found")
	wantCORS(t, "404", a, shop, true)
	a = s.do(call{method: "POST", path: orders, token: buyer, body: strings.Repeat("x", 65<<10), header: map[string]string{"Origin": shop}})
	wantError(t, a, http.StatusRequestEntityTooLarge, "payload_too_large")
	wantCORS(t, "413", a, shop, true)
	for _, path := range []string{"/", "/admin", "/healthz", "/readyz"} {
		a := s.do(call{method: "GET", path: path, header: map[string]string{"Origin": shop}})
		if a.status != http.StatusOK {
			t.Errorf("GET %s: %d", path, a.status)
		}
		wantCORS(t, "GET "+path, a, "", false)
	}
}

// TestCORSUnset: with no list (the default), no answer carries a CORS header or
// Vary, and a preflight is the router's 405.
func TestCORSUnset(t *testing.T) {
	s := newStack(t, handler.Options{})
	a := s.do(call{method: "OPTIONS", path: "/api/v1/orders", header: map[string]string{"Origin": shop, "Access-Control-Request-Method": "GET"}})
	wantError(t, a, http.StatusMethodNotAllowed, "method_not_allowed")
	wantCORS(t, "preflight", a, "", false)
	a = s.do(call{method: "GET", path: "/api/v1/activities", header: map[string]string{"Origin": shop}})
	if a.status != http.StatusOK {
		t.Errorf("GET /api/v1/activities: %d %s", a.status, a.body)
	}
	wantCORS(t, "GET /api/v1/activities", a, "", false)
}

// TestPreflightsCountAgainstNoLimit: with one request per 20 s allowed per address and
// per user, a storm of preflights from one address, on the routes a buyer uses, is
// answered 204 throughout and leaves the address's and the buyer's allowances whole: the
// buyer then buys (202) and reads the orders (200) from that address, and only the next
// request of each is refused 429, readable by the page. With Redis frozen, a
// preflight is still answered: it needs no Redis.
func TestPreflightsCountAgainstNoLimit(t *testing.T) {
	s := newStack(t, handler.Options{CORSOrigins: []string{shop}, RateIP: 0.05, RateUser: 0.05,
		TrustedProxies: []string{"127.0.0.1"}, InFlight: 1, SaleInFlight: 1})
	now := time.Now()
	act := s.sale(10, 5, now.Add(-time.Minute), now.Add(time.Hour))
	orders := fmt.Sprintf("/api/v1/activities/%d/orders", act)
	paths := []string{orders, fmt.Sprintf("/api/v1/activities/%d/line", act), "/api/v1/orders", "/api/v1/orders/o-1", "/api/v1/activities"}
	from := func(addr string) map[string]string {
		return map[string]string{"Origin": shop, "X-Forwarded-For": addr, "Content-Type": "application/json"}
	}
	preflight := func(s *stack, path string) answer {
		return s.do(call{method: "OPTIONS", path: path, header: map[string]string{"Origin": shop, "X-Forwarded-For": "10.0.0.1",
			"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}})
	}

	const goroutines, each = 20, 25
	var wg sync.WaitGroup
	codes := make(chan int, goroutines*each)
	on := testutil.NewGoroutines(t)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				codes <- preflight(s.on(on), paths[(g+i)%len(paths)]).status
			}
		})
	}
	wg.Wait()
	on.Report()
	close(codes)
	counts := map[int]int{}
	for c := range codes {
		counts[c]++
	}
	if counts[http.StatusNoContent] != goroutines*each {
		t.Fatalf("a storm of %d preflights: %v, want every one 204", goroutines*each, counts)
	}

	buyer := testutil.Token(t, 42, false)
	a := s.do(call{method: "POST", path: orders, token: buyer, body: `{"quantity":1}`, header: from("10.0.0.1")})
	if a.status != http.StatusAccepted {
		t.Errorf("the purchase after the storm, from its address: %d %s, want 202 (the allowances whole)", a.status, a.body)
	}
	a = s.do(call{method: "GET", path: "/api/v1/orders", token: buyer, header: from("10.0.0.2")})
	if a.status != http.StatusOK {
		t.Errorf("the buyer's orders after the storm: %d %s, want 200 (the allowance whole)", a.status, a.body)
	}
	// The limits are on: the next request of the address, and of the buyer, is refused.
	a = s.do(call{method: "GET", path: "/api/v1/activities", header: from("10.0.0.1")})
	wantError(t, a, http.StatusTooManyRequests, "rate_limited")
	wantCORS(t, "the address's 429", a, shop, true)
	a = s.do(call{method: "GET", path: "/api/v1/orders", token: buyer, header: from("10.0.0.3")})
	wantError(t, a, http.StatusTooManyRequests, "rate_limited")
	wantCORS(t, "the buyer's 429", a, shop, true)
	if a.header.Get("Retry-After") == "" {
		t.Errorf("the buyer's 429 has no Retry-After")
	}

	s.redis.Pause()
	defer s.redis.Resume()
	for _, path := range paths {
		if a := preflight(s, path); a.status != http.StatusNoContent {
			t.Errorf("preflight %s with Redis frozen: %d %s, want 204", path, a.status, a.body)
		}
	}
}

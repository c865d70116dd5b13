package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"seckill/internal/testutil"
)

// TestCORSFromOutside: the API binary with SECKILL_CORS_ORIGINS, called as a browser
// on a shop's origin would, directly and through the project's nginx front with the
// same list: a preflight of a purchase is 204 with the origin, the route's method, the
// headers the API reads and a max age; the purchase is 202 with the origin, Vary:
// Origin and Retry-After exposed; an origin not listed gets no CORS header. Through the
// front, a storm of preflights counts against no per-address limit, and the front's
// own 429 is readable by the listed origin.
func TestCORSFromOutside(t *testing.T) {
	const shop, other = "https://shop.example", "https://elsewhere.example"
	origins := shop + ",http://127.0.0.1:8081"
	s := testutil.StartStack(t, "SECKILL_CORS_ORIGINS="+origins, "SECKILL_TRUSTED_PROXIES=127.0.0.1/32")
	front := testutil.StartNginx(t, hostPorts(s.URLs), testutil.Front{RateIP: 1_000_000, InFlight: 65535, CORSOrigins: origins})
	admin := testutil.Token(t, 1, true)
	a := newClient(t, s.URL).createSale(admin, 100, 10)
	orders := fmt.Sprintf("/api/v1/activities/%d/orders", a.ID)

	for _, base := range []string{s.URL, front} {
		c := newClient(t, base)
		r := c.must("OPTIONS", orders, "", nil, "Origin", shop, "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization,content-type,idempotency-key,x-sale-pass,x-access-code")
		if r.Status != http.StatusNoContent || r.Header.Get("Access-Control-Allow-Origin") != shop ||
			r.Header.Get("Access-Control-Allow-Methods") != "POST" || r.Header.Get("Access-Control-Max-Age") == "" ||
			r.Header.Get("Access-Control-Allow-Headers") != "Authorization, Content-Type, Idempotency-Key, X-Sale-Pass, X-Access-Code" {
			t.Errorf("%s: preflight of a purchase: %d %v", base, r.Status, r.Header)
		}
		for i, origin := range []string{shop, other} {
			buyer := testutil.Token(t, int64(100+i), false)
			r := c.must("POST", orders, buyer, map[string]any{"quantity": 1}, "Origin", origin,
				"Idempotency-Key", fmt.Sprintf("cors-%d", i), "Content-Type", "application/json")
			if r.Status != http.StatusAccepted && r.Status != http.StatusOK { // 200: the same key through the front
				t.Fatalf("%s: purchase from %s: %d %s", base, origin, r.Status, r.Body)
			}
			acao, expose, vary := r.Header.Get("Access-Control-Allow-Origin"), r.Header.Get("Access-Control-Expose-Headers"), r.Header.Get("Vary")
			if origin == shop && (acao != shop || expose != "Retry-After" || vary != "Origin") ||
				origin == other && (acao != "" || expose != "" || vary != "Origin") {
				t.Errorf("%s: purchase from %s: Access-Control-Allow-Origin %q, Access-Control-Expose-Headers %q, Vary %q",
					base, origin, acao, expose, vary)
			}
		}
		r = c.must("OPTIONS", orders, "", nil, "Origin", other, "Access-Control-Request-Method", "POST")
		if r.Status != http.StatusMethodNotAllowed || r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: preflight from an origin not listed: %d %v, want 405 and no CORS header", base, r.Status, r.Header)
		}
		r = c.must("OPTIONS", "/api/v1/nothing", "", nil, "Origin", shop, "Access-Control-Request-Method", "POST")
		if r.Status != http.StatusNotFound || r.errorCode() != "not_found" {
			t.Errorf("%s: preflight of a path the API does not have: %d %s, want 404 not_found", base, r.Status, r.Body)
		}
	}

	// Through a front of 5 requests a second per address (bursts of 10): 60 preflights
	// from one address all pass, the address still has its burst, and the front's
	// refusal then is readable.
	c := newClient(t, testutil.StartNginx(t, hostPorts(s.URLs), testutil.Front{RateIP: 5, InFlight: 65535, CORSOrigins: origins}))
	for i := range 60 {
		if r := c.must("OPTIONS", orders, "", nil, "Origin", shop, "Access-Control-Request-Method", "POST"); r.Status != http.StatusNoContent {
			t.Fatalf("preflight %d through the front: %d %s", i+1, r.Status, r.Body)
		}
	}
	passed := 0
	var refused response
	for range 20 {
		r := c.must("GET", "/api/v1/activities", "", nil, "Origin", shop)
		switch r.Status {
		case http.StatusOK:
			passed++
		case http.StatusTooManyRequests:
			refused = r
		}
	}
	if passed < 11 || refused.Status != http.StatusTooManyRequests || refused.Header.Get("Access-Control-Allow-Origin") != shop ||
		refused.Header.Get("Access-Control-Expose-Headers") != "Retry-After" || refused.Header.Get("Retry-After") == "" {
		t.Errorf("after the preflights, 20 requests: %d passed (want 11 at least: 1 + a burst of 10), the refusal %d %v",
			passed, refused.Status, refused.Header)
	}
}

// TestCORSOriginsRefused: a malformed origin in SECKILL_CORS_ORIGINS stops the API at
// start, with a message that names the variable and the entry.
func TestCORSOriginsRefused(t *testing.T) {
	api, _ := testutil.Binaries(t)
	for _, bad := range []string{"https://shop.example/", "*", "https://shop.example/store", "shop.example", "https://Shop.example"} {
		cmd := exec.Command(api)
		cmd.Env = []string{"SECKILL_ENV=dev", "SECKILL_HTTP_ADDR=127.0.0.1:0", "SECKILL_CORS_ORIGINS=https://ok.example," + bad}
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), `SECKILL_CORS_ORIGINS: "`+bad+`" is not an origin`) {
			t.Errorf("SECKILL_CORS_ORIGINS with %q: %v\n%s\nwant the start refused naming the variable and the entry", bad, err, out)
		}
	}
}

// TestStorefrontProxy runs the shop's nginx configuration that docs/integration.md
// shows (the API under the shop's own origin) in front of an API trusting it: a
// purchase through it is taken, and the per-IP limit counts each buyer by the address
// the proxy passes on, not every buyer as the proxy's one address.
func TestStorefrontProxy(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "integration.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "### The API under the shop's own origin")
	_, block, _ := strings.Cut(section, "```nginx\n")
	block, _, _ = strings.Cut(block, "```")
	upstreams := regexp.MustCompile(`(?m)^\s*server \d+\.\d+\.\d+\.\d+:\d+;.*\n`)
	if len(upstreams.FindAllString(block, -1)) == 0 || !strings.Contains(block, "listen 443 ssl;") {
		t.Fatalf("docs/integration.md: the proxy's nginx block has no upstream servers or no `listen 443 ssl;` to replace:\n%s", block)
	}

	s := testutil.StartStack(t, "SECKILL_TRUSTED_PROXIES=127.0.0.1/32", "SECKILL_RATE_IP=1") // 1/s, bursts of 2
	proxy := testutil.StartNginxSite(t, func(listen string) string {
		site := upstreams.ReplaceAllString(block, "")
		site = strings.Replace(site, "keepalive", "server "+strings.TrimPrefix(s.URL, "http://")+";\n    keepalive", 1)
		return strings.Replace(site, "listen 443 ssl;", "listen "+listen+";", 1)
	})
	sale := newClient(t, s.URL).createSale(testutil.Token(t, 1, true), 10, 1)
	c := newClient(t, proxy)
	r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", sale.ID), testutil.Token(t, 42, false), map[string]any{"quantity": 1},
		"Idempotency-Key", "proxied-1", "X-Forwarded-For", "203.0.113.7")
	if r.Status != http.StatusAccepted {
		t.Fatalf("a purchase through the shop's proxy: %d %s", r.Status, r.Body)
	}
	var refused response
	for range 10 {
		if r := c.must("GET", "/api/v1/activities", "", nil, "X-Forwarded-For", "203.0.113.7"); r.Status == http.StatusTooManyRequests {
			refused = r
			break
		}
	}
	if refused.errorCode() != "rate_limited" || refused.Header.Get("Retry-After") == "" {
		t.Fatalf("one buyer's address past its limit through the proxy: %d %s %v, want 429 rate_limited with Retry-After", refused.Status, refused.Body, refused.Header)
	}
	if r := c.must("GET", "/api/v1/activities", "", nil, "X-Forwarded-For", "203.0.113.8"); r.Status != http.StatusOK {
		t.Errorf("another buyer's address through the proxy, while the first is limited: %d %s, want 200 (the limit is per buyer, not per proxy)", r.Status, r.Body)
	}
}

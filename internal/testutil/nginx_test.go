package testutil

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// backend serves h on a loopback port until the end of the test and returns its host:port.
func backend(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// holdingBackend is a backend that holds each request of the query "hold" until
// release is called (at the latest at the test's end), and says on held that it has one;
// it takes up to n held at once.
func holdingBackend(t *testing.T, n int) (addr string, held <-chan struct{}, release func()) {
	t.Helper()
	h, done := make(chan struct{}, n), make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(done) }) }
	t.Cleanup(release) // a test that fails while they are held does not leave them hanging
	addr = backend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery == "hold" {
			h <- struct{}{}
			<-done
		}
	})
	return addr, h, release
}

func TestNginxSpreadsOverBackends(t *testing.T) {
	var backends []string
	for i := range 2 {
		backends = append(backends, backend(t, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%d %s", i, r.Header.Get("X-Forwarded-For"))
		}))
	}
	url := StartNginx(t, backends, NoLimits)
	seen := map[string]int{}
	for range 10 {
		resp, err := http.Get(url + "/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		backend, xff, _ := strings.Cut(string(body), " ")
		if xff != "127.0.0.1" {
			t.Errorf("X-Forwarded-For = %q, want the client's 127.0.0.1", xff)
		}
		seen[backend]++
	}
	if seen["0"] != 5 || seen["1"] != 5 {
		t.Errorf("requests per backend %v, want 5 and 5 (round robin)", seen)
	}
}

// TestNginxRetriesOnlyWhatIsSafeToRepeat: a backend that drops every request it reads
// (as an API that dies under it). A request that is harmless to make twice is sent to
// the other backend: a GET, a purchase or seat with an Idempotency-Key, a pay, a
// cancel, a refund. Any other (a purchase without a key, an admin's POST or PATCH) is not: the
// client gets 502, and the front never makes it twice.
func TestNginxRetriesOnlyWhatIsSafeToRepeat(t *testing.T) {
	for _, tc := range []struct {
		method, path, key string
		retried           bool
	}{
		{http.MethodGet, "/api/v1/activities/7", "", true},
		{http.MethodPost, "/api/v1/activities/7/orders", "k-1", true},
		{http.MethodPost, "/api/v1/activities/7/groups", "k-1", true},
		{http.MethodPost, "/api/v1/groups/g-1/join", "k-1", true},
		{http.MethodPost, "/api/v1/orders/o-1/pay", "", true},
		{http.MethodPost, "/api/v1/orders/o-1/cancel", "", true},
		{http.MethodPost, "/api/v1/orders/o-1/refund", "", true},
		{http.MethodPost, "/api/v1/activities/7/orders", "", false},
		{http.MethodPost, "/api/v1/groups/g-1/join", "", false},
		{http.MethodPost, "/api/v1/admin/activities", "k-1", false},
		{http.MethodPatch, "/api/v1/admin/activities/7", "", false},
	} {
		t.Run(tc.method+tc.path+"/key="+tc.key, func(t *testing.T) {
			var dropped, served atomic.Int64
			bad := backend(t, func(w http.ResponseWriter, r *http.Request) {
				dropped.Add(1)
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
			})
			good := backend(t, func(w http.ResponseWriter, r *http.Request) {
				served.Add(1)
				io.WriteString(w, "ok")
			})
			url := StartNginx(t, []string{bad, good}, NoLimits)
			codes := map[int]int{}
			const n = 4
			for range n {
				resp, _ := send(t, tc.method, url+tc.path, "Idempotency-Key", tc.key)
				codes[resp.StatusCode]++
			}
			t.Logf("codes %v, dropped by the bad backend %d, served by the good one %d", codes, dropped.Load(), served.Load())
			if dropped.Load() == 0 {
				t.Fatal("no request reached the bad backend")
			}
			if tc.retried && codes[200] != n {
				t.Errorf("codes %v, want %d × 200 (a dropped request tried on the other backend)", codes, n)
			}
			if !tc.retried && (codes[http.StatusBadGateway] != int(dropped.Load()) || dropped.Load()+served.Load() != n) {
				t.Errorf("codes %v, %d dropped and %d served; want every request sent once, a dropped one answered 502",
					codes, dropped.Load(), served.Load())
			}
		})
	}
}

// restartable is a backend that can be stopped (its port then refuses connections, as
// an API between two processes) and started again on the same address.
type restartable struct {
	t    *testing.T
	addr string
	h    http.HandlerFunc
	srv  *http.Server
}

func newRestartable(t *testing.T, h http.HandlerFunc) *restartable {
	b := &restartable{t: t, addr: "127.0.0.1:" + fmt.Sprint(freePort(t)), h: h}
	b.start()
	t.Cleanup(func() { b.stop() })
	return b
}

func (b *restartable) start() {
	ln, err := net.Listen("tcp", b.addr)
	if err != nil {
		b.t.Fatal(err)
	}
	b.srv = &http.Server{Handler: b.h}
	go b.srv.Serve(ln)
}

func (b *restartable) stop() { b.srv.Close() }

// TestNginxThroughRestarts: backends restarted one after the other, each refusing
// connections for a moment, as in a rolling deploy. Every request is answered by the
// backend that is up (a refused connection is tried on the other), including just
// after the first backend is back and the second goes: a backend that refused is left
// out for 1 to 2 s only, not nginx's default 10 s that left "no live upstreams" (502).
func TestNginxThroughRestarts(t *testing.T) {
	var served [2]atomic.Int64
	var bs [2]*restartable
	for i := range bs {
		bs[i] = newRestartable(t, func(w http.ResponseWriter, r *http.Request) {
			served[i].Add(1)
			io.WriteString(w, "ok")
		})
	}
	ngx := StartNginxLogged(t, []string{bs[0].addr, bs[1].addr}, NoLimits)
	url := ngx.URL
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(ngx.ErrorLog)
			t.Logf("nginx's error log:\n%s", b)
		}
	}()
	ask := func(when string) {
		t.Helper()
		for range 10 {
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				if resp, body := send(t, method, url+"/api/v1/activities/7/orders"); resp.StatusCode != 200 {
					t.Errorf("%s %s: %d %s", method, when, resp.StatusCode, body)
				}
			}
		}
	}
	ask("with both up")
	for i, b := range bs {
		b.stop()
		ask(fmt.Sprintf("with backend %d stopped", i))
		// A restart takes a moment; nginx counts fail_timeout in whole seconds, so a
		// backend that refused is left out for 1 to 2 s.
		// The backend stays down 2.5 s, past nginx's fail_timeout, as a slow restart does: the
		// behaviour under test.
		time.Sleep(2500 * time.Millisecond)
		b.start()
	}
	ask("with both back")
	t.Logf("served: %d and %d", served[0].Load(), served[1].Load())
}

// wantFrontRefusal checks a 429 of the front: the contract's error body with code
// rate_limited, JSON, Retry-After 1.
func wantFrontRefusal(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	if resp.StatusCode != http.StatusTooManyRequests ||
		!strings.HasPrefix(string(body), `{"error":{"code":"rate_limited","message":"`) ||
		resp.Header.Get("Retry-After") != "1" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("refusal from the front: %d %s %q %q, want 429, the contract's error body, JSON, Retry-After 1",
			resp.StatusCode, body, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"))
	}
}

// send makes one request with a small body and headers (name, value, ...; an empty
// value is not sent) and returns the answer and its body.
func send(t *testing.T, method, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(`{"quantity":1}`))
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] != "" {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body
}

// The front's per-IP limit: an address past its burst gets 429 with the contract's error
// body and Retry-After, from nginx, and the backend never sees those requests; on the
// routes that buy too, whose location has error pages of its own.
func TestNginxLimitsPerIP(t *testing.T) {
	for _, tc := range []struct{ method, path, key string }{
		{http.MethodGet, "/healthz", ""},
		{http.MethodPost, "/api/v1/activities/7/orders", ""},
		{http.MethodPost, "/api/v1/activities/7/orders", "k-1"}, // @purchase_keyed
	} {
		t.Run(tc.method+tc.path+"/key="+tc.key, func(t *testing.T) {
			var served atomic.Int64
			b := backend(t, func(w http.ResponseWriter, r *http.Request) { served.Add(1) })
			url := StartNginx(t, []string{b}, Front{RateIP: 5, InFlight: 65535}) // 5/s, bursts of 10 more
			limited := 0
			for range 30 {
				resp, body := send(t, tc.method, url+tc.path, "Idempotency-Key", tc.key)
				switch resp.StatusCode {
				case http.StatusOK:
				case http.StatusTooManyRequests:
					limited++
					wantFrontRefusal(t, resp, body)
				default:
					t.Errorf("status %d", resp.StatusCode)
				}
			}
			// 30 requests within well under a second: the burst (10) and the first (1), and a
			// few more if the loop took long; the rest refused.
			if limited < 10 || served.Load()+int64(limited) != 30 || served.Load() < 11 {
				t.Errorf("served %d, limited %d of 30; want at least 11 served (1 + a burst of 10) and the rest limited", served.Load(), limited)
			}
		})
	}
}

// The front's bound on purchases in flight, per client address: with InFlight purchases
// of one address held by the backend, every further request of that address on a route
// that buys is refused at once with 429 rate_limited and never reaches the backend,
// while the other routes, GETs of those paths and purchases from another address pass;
// once the held ones are answered, purchases pass again.
func TestNginxBoundsPurchasesInFlight(t *testing.T) {
	const inFlight = 2
	held, release := make(chan struct{}, inFlight), make(chan struct{})
	var releaseOnce sync.Once
	releaseHeld := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseHeld) // a test that fails while they are held does not leave them hanging
	var reached atomic.Int64
	b := backend(t, func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.URL.Path == "/api/v1/activities/7/orders" && r.Method == http.MethodPost && r.URL.RawQuery == "hold" {
			held <- struct{}{}
			<-release
		}
	})
	url := StartNginx(t, []string{b}, Front{RateIP: 1_000_000, InFlight: inFlight})

	answered := make(chan int, inFlight)
	for range inFlight {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/activities/7/orders?hold", strings.NewReader("{}"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answered <- 0
				return
			}
			resp.Body.Close()
			answered <- resp.StatusCode
		}()
	}
	for range inFlight {
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			t.Fatal("the held purchases did not reach the backend")
		}
	}
	before := reached.Load()
	for _, tc := range []struct {
		method, path, key string
		refused           bool
	}{
		{http.MethodPost, "/api/v1/activities/7/orders", "", true},
		{http.MethodPost, "/api/v1/activities/7/orders", "k-1", true}, // @purchase_keyed
		{http.MethodPost, "/api/v1/activities/8/orders", "", true},    // one count for the address, whatever the sale
		{http.MethodPost, "/api/v1/activities/7/groups", "", true},
		{http.MethodPost, "/api/v1/groups/g-1/join", "k-1", true},
		{http.MethodGet, "/api/v1/activities/7/orders", "", false},
		{http.MethodPost, "/api/v1/orders/o-1/pay", "", false},
		{http.MethodPost, "/api/v1/activities/7/line", "", false},
		{http.MethodPost, "/api/v1/activities/7/orders/x", "", false},
		{http.MethodGet, "/healthz", "", false},
	} {
		resp, body := send(t, tc.method, url+tc.path, "Idempotency-Key", tc.key)
		if tc.refused {
			wantFrontRefusal(t, resp, body)
		} else if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s: %d %s, want it passed to the backend (200)", tc.method, tc.path, resp.StatusCode, body)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/activities/7/orders", strings.NewReader(`{"quantity":1}`))
	if resp, err := ClientFrom("127.0.0.2", 10*time.Second).Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusOK {
		t.Errorf("a purchase from another address: %d, want it passed to the backend (200)", resp.StatusCode)
	}
	if got, want := reached.Load()-before, int64(6); got != want { // the ones not refused
		t.Errorf("the backend saw %d of the requests sent while %d purchases were held, want %d (the ones not refused)", got, inFlight, want)
	}

	releaseHeld()
	for range inFlight {
		if code := <-answered; code != http.StatusOK {
			t.Errorf("a held purchase was answered %d, want 200", code)
		}
	}
	if resp, body := send(t, http.MethodPost, url+"/api/v1/activities/7/orders"); resp.StatusCode != http.StatusOK {
		t.Errorf("a purchase after the held ones were answered: %d %s, want 200", resp.StatusCode, body)
	}
}

// Every variable of the front's template is given a value by each of its renderers:
// the compose file's front service (the nginx image substitutes only what its
// environment sets, and leaves the rest as text nginx refuses) and deploy/nginx/render.sh
// (scripts/cluster.sh, loadtest/run.sh, StartNginx), whose output StartNginx checks too.
func TestFrontTemplateVariablesAreSet(t *testing.T) {
	root := filepath.Join("..", "..")
	template, err := os.ReadFile(filepath.Join(root, "deploy", "nginx", "seckill.conf.template"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$\{(SECKILL_[A-Z_]+)\}`).FindAllStringSubmatch(string(template), -1) {
		vars[m[1]] = true
	}
	if len(vars) < 5 {
		t.Fatalf("found %d variables in the template, want at least 5: %v", len(vars), vars)
	}
	for _, f := range []struct{ file, want string }{
		{"docker-compose.yml", "      %s: "},
		{filepath.Join("deploy", "nginx", "render.sh"), "s|\\${%s}|"},
	} {
		b, err := os.ReadFile(filepath.Join(root, f.file))
		if err != nil {
			t.Fatal(err)
		}
		for v := range vars {
			if !strings.Contains(string(b), fmt.Sprintf(f.want, v)) {
				t.Errorf("%s does not set %s", f.file, v)
			}
		}
	}
}

// TestNginxCORS: calls from a shop's pages on other origins through the front. Preflights
// go through to the backend (the API answers them), on the routes that buy too, and
// count against no per-IP limit; the front's own refusals, per address and past the
// purchases in flight, carry the CORS headers for a listed origin (so its page reads
// them, Retry-After included) and none for another.
func TestNginxCORS(t *testing.T) {
	const shop, local, other = "https://shop.example", "http://127.0.0.1:8081", "https://elsewhere.example"
	origins := shop + ", " + local
	// refusals checks the front's 429 to each kind of caller.
	refusals := func(t *testing.T, method, url, message string) {
		t.Helper()
		for _, origin := range []string{shop, local, other, ""} {
			resp, body := send(t, method, url, "Origin", origin)
			wantFrontRefusal(t, resp, body)
			if !strings.Contains(string(body), message) {
				t.Errorf("%s %s: %s, want the refusal %q", method, url, body, message)
			}
			acao, expose := resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Access-Control-Expose-Headers")
			listed := origin == shop || origin == local
			if listed && (acao != origin || expose != "Retry-After") || !listed && (acao != "" || expose != "") {
				t.Errorf("the front's 429 to origin %q: Access-Control-Allow-Origin %q, Access-Control-Expose-Headers %q; want the origin and Retry-After for a listed one, none otherwise",
					origin, acao, expose)
			}
			if resp.Header.Get("Vary") != "Origin" {
				t.Errorf("the front's 429 to origin %q: Vary %q, want Origin", origin, resp.Header.Get("Vary"))
			}
		}
	}

	t.Run("per address", func(t *testing.T) {
		var preflights, others atomic.Int64
		b := backend(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodOptions && r.Header.Get("Origin") == shop && r.Header.Get("Access-Control-Request-Method") == "POST" {
				preflights.Add(1)
				w.WriteHeader(http.StatusNoContent)
				return
			}
			others.Add(1)
		})
		url := StartNginx(t, []string{b}, Front{RateIP: 5, InFlight: 65535, CORSOrigins: origins}) // 5/s, bursts of 10 more
		const n = 60
		for i := range n {
			path := []string{"/api/v1/activities/7/orders", "/api/v1/orders", "/api/v1/activities/7/line"}[i%3]
			if resp, body := send(t, http.MethodOptions, url+path, "Origin", shop, "Access-Control-Request-Method", "POST"); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("preflight %d of %d (%s): %d %s, want the backend's 204", i+1, n, path, resp.StatusCode, body)
			}
		}
		if preflights.Load() != n {
			t.Errorf("the backend saw %d of %d preflights", preflights.Load(), n)
		}
		// The address's allowance is whole: its burst passes, then the front refuses.
		served := 0
		for range 11 {
			if resp, _ := send(t, http.MethodGet, url+"/api/v1/activities", "Origin", shop); resp.StatusCode == http.StatusOK {
				served++
			}
		}
		if served != 11 {
			t.Errorf("after %d preflights, %d of 11 requests passed, want all (1 + a burst of 10)", n, served)
		}
		refusals(t, http.MethodGet, url+"/api/v1/activities", "from this address")
		refusals(t, http.MethodPost, url+"/api/v1/activities/7/orders", "from this address")
	})

	t.Run("purchases in flight", func(t *testing.T) {
		b, held, releaseHeld := holdingBackend(t, 1)
		url := StartNginx(t, []string{b}, Front{RateIP: 1_000_000, InFlight: 1, CORSOrigins: origins})
		done := make(chan struct{})
		go func() {
			defer close(done)
			req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/activities/7/orders?hold", strings.NewReader("{}"))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			t.Fatal("the held purchase did not reach the backend")
		}
		refusals(t, http.MethodPost, url+"/api/v1/activities/7/orders", "purchases at once")
		// A preflight of the route is no purchase: it passes while the bound is full.
		if resp, body := send(t, http.MethodOptions, url+"/api/v1/activities/7/orders", "Origin", shop, "Access-Control-Request-Method", "POST"); resp.StatusCode != http.StatusOK {
			t.Errorf("a preflight while the purchases in flight are at the bound: %d %s, want it passed to the backend", resp.StatusCode, body)
		}
		releaseHeld()
		<-done
	})
}

// The front's bound on purchases in flight per token: with 4 purchases of one token
// held by the backend, each from an address of its own, a fifth with that token is
// refused at once from yet another address, while another token passes.
func TestNginxBoundsPurchasesPerToken(t *testing.T) {
	const perToken = 4
	b, held, releaseHeld := holdingBackend(t, perToken)
	url := StartNginx(t, []string{b}, Front{RateIP: 1_000_000, InFlight: 65535})
	// Tokens longer than nginx's 255-byte keys, alike but for their last characters.
	token := "Bearer " + strings.Repeat("x", 400) + "-one"
	buy := func(from, token, query string) (int, error) {
		req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/activities/7/orders"+query, strings.NewReader(`{"quantity":1}`))
		req.Header.Set("Authorization", token)
		resp, err := ClientFrom(from, 10*time.Second).Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	answered := make(chan int, perToken)
	for i := range perToken {
		go func() {
			code, err := buy(fmt.Sprintf("127.0.3.%d", i+1), token, "?hold")
			if err != nil {
				t.Errorf("a held purchase: %v", err)
			}
			answered <- code
		}()
	}
	for range perToken {
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			t.Fatal("the held purchases did not reach the backend")
		}
	}
	for _, tc := range []struct {
		token string
		want  int
	}{
		{token, http.StatusTooManyRequests},
		{strings.TrimSuffix(token, "-one") + "-two", http.StatusOK},
	} {
		if code, err := buy("127.0.3.99", tc.token, ""); err != nil || code != tc.want {
			t.Errorf("a purchase with token ...%s from another address: %d %v, want %d", tc.token[len(tc.token)-4:], code, err, tc.want)
		}
	}
	releaseHeld()
	for range perToken {
		if code := <-answered; code != http.StatusOK {
			t.Errorf("a held purchase was answered %d, want 200", code)
		}
	}
}

// Behind a balancer (SECKILL_NGINX_REAL_IP_FROM), nginx counts each client by the
// address the balancer's X-Forwarded-For names: two clients behind it get an allowance
// each, and the API is told the client; without it, X-Forwarded-For is not believed.
func TestNginxRealIPBehindABalancer(t *testing.T) {
	b := backend(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Header.Get("X-Forwarded-For"))
	})
	for _, tc := range []struct {
		realIPFrom string
		believed   bool
	}{{"127.0.0.1/32", true}, {"", false}} {
		t.Run(fmt.Sprintf("real_ip from %q", tc.realIPFrom), func(t *testing.T) {
			url := StartNginx(t, []string{b}, Front{RateIP: 1, InFlight: 65535, RealIPFrom: tc.realIPFrom}) // bursts of 2 more
			served := map[string]int{}
			for _, client := range []string{"198.51.100.7", "198.51.100.8"} {
				for range 6 {
					resp, body := send(t, http.MethodGet, url+"/x", "X-Forwarded-For", client)
					if resp.StatusCode == http.StatusOK {
						served[client]++
						if last := string(body[strings.LastIndexByte(string(body), ' ')+1:]); tc.believed && last != client {
							t.Errorf("the API was told %q, want the client %s last", body, client)
						}
					}
				}
			}
			// An allowance is the first request and a burst of 2: each client's own when
			// believed, one for both (the balancer's) when not.
			want := map[string]int{"198.51.100.7": 3, "198.51.100.8": 3}
			if !tc.believed {
				want = map[string]int{"198.51.100.7": 3}
			}
			if fmt.Sprint(served) != fmt.Sprint(want) {
				t.Errorf("served %v, want %v", served, want)
			}
		})
	}
}

// The front keeps the public reads (the sale list, a sale, a line's status) as the APIs
// mark them: a crowd of each costs the backend about one request per path per second,
// their 404 and 409 too, and a page of the list is kept apart from another, while a
// query the list does not read (a client's own, new each time) shares the list's copy.
// Nothing
// else is kept: an answer marked private, a request with a token, a write, any other
// route. A listed origin's answer is kept apart from the others', and Origins the list
// does not hold share one copy.
func TestNginxKeepsPublicReads(t *testing.T) {
	const shop = "https://shop.example"
	var mu sync.Mutex
	seen := map[string]int{} // backend requests by "METHOD path?query origin"
	b := backend(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Origin")]++
		mu.Unlock()
		h := w.Header()
		if r.Header.Get("Authorization") != "" || strings.Contains(r.URL.Path, "private") {
			h.Set("Cache-Control", "private, no-store")
		} else { // as the APIs mark a public read (internal/handler/shared.go)
			h.Set("Cache-Control", "public, max-age=1, stale-while-revalidate=1")
			h.Set("X-Accel-Expires", fmt.Sprintf("@%d", time.Now().Add(500*time.Millisecond).Unix()))
		}
		h.Set("Vary", "Origin")
		if r.Header.Get("Origin") == shop {
			h.Set("Access-Control-Allow-Origin", shop)
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/404"):
			w.WriteHeader(http.StatusNotFound)
		case strings.HasSuffix(r.URL.Path, "/409/line/status"):
			w.WriteHeader(http.StatusConflict)
		}
		fmt.Fprintf(w, `{"at":%d}`, time.Now().UnixNano())
	})
	ngx := StartNginxLogged(t, []string{b}, Front{RateIP: 1_000_000, InFlight: 65535, CORSOrigins: shop})
	url := ngx.URL
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(ngx.ErrorLog)
			t.Logf("nginx's error log:\n%s", log)
		}
	})
	type ask struct {
		method, path string
		header       []string
	}
	kept := []ask{
		{"GET", "/api/v1/activities", nil},
		{"GET", "/api/v1/activities?limit=5", nil},
		{"GET", "/api/v1/activities?x=", nil}, // and the round's number: a query of its own each time
		{"GET", "/api/v1/activities/7", nil},
		{"GET", "/api/v1/activities/7/line/status", nil},
		{"GET", "/api/v1/activities/404", nil},
		{"GET", "/api/v1/activities/409/line/status", nil},
		{"GET", "/api/v1/activities/8", []string{"Origin", shop}},
		{"GET", "/api/v1/activities/9", []string{"Origin", "https://a.example"}},
		{"GET", "/api/v1/activities/9", []string{"Origin", "https://b.example"}},
		{"GET", "/api/v1/activities/9", nil},
	}
	passed := []ask{
		{"GET", "/api/v1/activities/77", []string{"Authorization", "Bearer x"}},
		{"GET", "/api/v1/activities/private", nil},
		{"GET", "/api/v1/activities/7/line", nil},
		{"GET", "/api/v1/orders", nil},
		{"POST", "/api/v1/activities/7/line", nil},
	}
	const rounds = 300
	start := time.Now()
	var wg sync.WaitGroup
	for _, a := range append(append([]ask{}, kept...), passed...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				path := a.path
				if strings.HasSuffix(path, "=") {
					path += strconv.Itoa(i)
				}
				resp, body := send(t, a.method, url+path, a.header...)
				if resp.StatusCode >= 500 || !strings.HasPrefix(string(body), `{"at":`) {
					t.Errorf("%s %s: %d %s", a.method, a.path, resp.StatusCode, body)
					return
				}
				if a.path == "/api/v1/activities/8" && resp.Header.Get("Access-Control-Allow-Origin") != shop {
					t.Errorf("the listed origin got an answer without its CORS header")
					return
				}
				if a.path == "/api/v1/activities/9" && resp.Header.Get("Access-Control-Allow-Origin") != "" {
					t.Errorf("an origin not listed got the CORS header %q", resp.Header.Get("Access-Control-Allow-Origin"))
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	seconds := time.Since(start).Seconds()
	mu.Lock()
	defer mu.Unlock()
	atBackend := func(a ask) int {
		n := 0
		for k, v := range seen {
			if strings.HasPrefix(k, a.method+" "+a.path+" ") || strings.HasSuffix(a.path, "=") && strings.HasPrefix(k, a.method+" "+a.path) {
				n += v
			}
		}
		return n
	}
	t.Logf("requests at the backend in %.1fs: %v", seconds, seen)
	// About one a second, at each second's start; a second more for the clock's edges.
	most := int(seconds) + 2
	for _, a := range kept {
		if a.path == "/api/v1/activities/9" {
			most = 3 * (int(seconds) + 2) // the three ask the same path: one copy
		}
		if n := atBackend(a); n < 1 || n > most {
			t.Errorf("%s %s %v: %d of %d requests in %.1fs reached the backend, want 1 to %d", a.method, a.path, a.header, n,
				rounds, seconds, most)
		}
	}
	if n := atBackend(ask{"GET", "/api/v1/activities", nil}) + atBackend(ask{"GET", "/api/v1/activities?x=", nil}); n > int(seconds)+2 {
		t.Errorf("a query the list does not read was kept apart: %d requests of the list reached the backend", n)
	}
	if n := atBackend(ask{"GET", "/api/v1/activities/9", nil}); n > int(seconds)+2 {
		t.Errorf("the answer without a listed origin was kept apart per Origin: %d requests reached the backend", n)
	}
	for _, a := range passed {
		if n := atBackend(a); n != rounds {
			t.Errorf("%s %s %v: %d of %d requests reached the backend, want all", a.method, a.path, a.header, n, rounds)
		}
	}
}

// The front answers a public read's copy past its lifetime for one second at most (the
// APIs' stale-while-revalidate), while one request gets the next: a crowd that comes
// back after a quiet spell gets a fresh answer, never the copy of a second long gone.
func TestNginxAnswersNoCopyPastItsSecond(t *testing.T) {
	b := backend(t, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "public, max-age=1, stale-while-revalidate=1")
		h.Set("X-Accel-Expires", fmt.Sprintf("@%d", time.Now().Add(500*time.Millisecond).Unix()))
		fmt.Fprintf(w, `{"at":%d}`, time.Now().UnixNano())
	})
	ngx := StartNginxLogged(t, []string{b}, Front{RateIP: 1_000_000, InFlight: 65535})
	at := func() (time.Time, string) {
		t.Helper()
		resp, body := send(t, "GET", ngx.URL+"/api/v1/activities/7")
		var v struct{ At int64 }
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &v) != nil {
			t.Fatalf("GET: %d %s", resp.StatusCode, body)
		}
		return time.Unix(0, v.At), resp.Header.Get("X-Cache-Status")
	}
	first, _ := at()
	if again, status := at(); !again.Equal(first) {
		t.Errorf("asked again at once: %s, an answer of %v after the first; want the copy", status, again.Sub(first))
	}
	for _, quiet := range []time.Duration{3 * time.Second, 5 * time.Second} {
		time.Sleep(quiet)
		asked := time.Now()
		got, status := at()
		if got.Before(asked) {
			t.Errorf("after %v without a request: %s, a copy %v old; want a fresh answer", quiet, status, asked.Sub(got))
		}
	}
}

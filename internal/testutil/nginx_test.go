package testutil

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
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

func TestNginxSpreadsOverBackends(t *testing.T) {
	var backends []string
	for i := range 2 {
		backends = append(backends, backend(t, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%d %s", i, r.Header.Get("X-Forwarded-For"))
		}))
	}
	url := StartNginx(t, backends, NoIPLimit)
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

// TestNginxRetriesOnlyIdempotentRequests: a backend that drops every request it reads.
// A GET it dropped is sent to the other backend; a POST it dropped is not (the client
// gets 502), so a purchase is never sent twice by the front.
func TestNginxRetriesOnlyIdempotentRequests(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		t.Run(method, func(t *testing.T) {
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
			url := StartNginx(t, []string{bad, good}, NoIPLimit)
			codes := map[int]int{}
			const n = 4
			for range n {
				req, _ := http.NewRequest(method, url+"/api/v1/x", strings.NewReader("{}"))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				codes[resp.StatusCode]++
			}
			t.Logf("%s: codes %v, dropped by the bad backend %d, served by the good one %d", method, codes, dropped.Load(), served.Load())
			if dropped.Load() == 0 {
				t.Fatal("no request reached the bad backend")
			}
			switch method {
			case http.MethodGet:
				if codes[200] != n {
					t.Errorf("GET: codes %v, want %d × 200 (a dropped GET is retried on the other backend)", codes, n)
				}
			case http.MethodPost:
				if codes[http.StatusBadGateway] != int(dropped.Load()) || dropped.Load()+served.Load() != n {
					t.Errorf("POST: codes %v, %d dropped and %d served; want every POST sent once, a dropped one answered 502",
						codes, dropped.Load(), served.Load())
				}
			}
		})
	}
}

// The front's per-IP limit: an address past its burst gets 429 with the contract's error
// body and Retry-After, from nginx, and the backend never sees those requests.
func TestNginxLimitsPerIP(t *testing.T) {
	var served atomic.Int64
	b := backend(t, func(w http.ResponseWriter, r *http.Request) { served.Add(1) })
	url := StartNginx(t, []string{b}, 5) // 5/s, bursts of 10 more
	limited := 0
	for range 30 {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			limited++
			if !strings.HasPrefix(string(body), `{"error":{"code":"rate_limited","message":"`) ||
				resp.Header.Get("Retry-After") != "1" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("429 from the front: %s %q %q, want the contract's error body, JSON, Retry-After 1",
					body, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"))
			}
		default:
			t.Errorf("status %d", resp.StatusCode)
		}
	}
	// 30 requests within well under a second: the burst (10) and the first (1), and a
	// few more if the loop took long; the rest refused.
	if limited < 10 || served.Load()+int64(limited) != 30 || served.Load() < 11 {
		t.Errorf("served %d, limited %d of 30; want at least 11 served (1 + a burst of 10) and the rest limited", served.Load(), limited)
	}
}

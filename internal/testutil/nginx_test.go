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
	url := StartNginx(t, backends)
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
			url := StartNginx(t, []string{bad, good})
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

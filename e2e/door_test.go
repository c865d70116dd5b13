package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// staller plays attackers who hold connections open with purchases that never finish
// arriving: each sends a purchase's headers (half of them with one buyer's valid
// token, half with none), then its body a byte every 500 ms, and once answered or cut
// off, starts again. They all come from one address, 127.0.0.2.
type staller struct {
	addr, path, token string
	stop              chan struct{}
	wg                sync.WaitGroup
	// headers counts the uploads whose headers were sent, bytes the body bytes sent.
	headers, bytes atomic.Int64
}

// stallEvery is the gap between two bytes of a stalled upload.
const stallEvery = 500 * time.Millisecond

func startStallers(t *testing.T, base, path, token string, n int) *staller {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	s := &staller{addr: u.Host, path: path, token: token, stop: make(chan struct{})}
	for i := range n {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			withToken := i%2 == 0
			for !s.stopped() {
				s.upload(withToken)
				s.pause() // the attacker renews, at the pace of its bytes
			}
		}()
	}
	t.Cleanup(s.halt)
	return s
}

func (s *staller) stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// pause waits stallEvery, or less once the attack is stopped.
func (s *staller) pause() {
	select {
	case <-s.stop:
	case <-time.After(stallEvery):
	}
}

// upload sends one stalled purchase until it is answered, its connection is cut or
// the attack stops.
func (s *staller) upload(withToken bool) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 2 * time.Second}
	conn, err := d.Dial("tcp", s.addr)
	if err != nil {
		return
	}
	defer conn.Close()
	body := `{"quantity":1}`
	head := "POST " + s.path + " HTTP/1.1\r\nHost: " + s.addr + "\r\nContent-Type: application/json\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n", len(body))
	if withToken {
		head += "Authorization: Bearer " + s.token + "\r\n"
	}
	if _, err := conn.Write([]byte(head + "\r\n")); err != nil {
		return
	}
	s.headers.Add(1)
	answered := make(chan struct{})
	go func() { // an answer (408, 429, 401) or a closed connection ends the upload
		defer close(answered)
		_, _ = bufio.NewReader(conn).ReadByte()
	}()
	for i := range len(body) {
		select {
		case <-s.stop:
			return
		case <-answered:
			return
		case <-time.After(stallEvery):
		}
		if _, err := conn.Write([]byte{body[i]}); err != nil {
			return
		}
		s.bytes.Add(1)
	}
	select {
	case <-s.stop:
	case <-answered:
	}
}

func (s *staller) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.wg.Wait()
}

// TestStalledUploadsDoNotStarveBuyers: 400 stalled uploads of purchases from one
// address, half with one buyer's valid token and half with none, renewed as soon as
// each is answered or cut off, while 200 honest buyers send whole purchases, each
// from an address of its own. At least 99 % of the honest buyers get 202 within 3 s,
// on an API alone and behind the project's nginx front (its bound of purchases in
// flight per address well under the stalls). A stalled upload holds no place in
// flight: the API takes it only once the body has arrived (SECKILL_BODY_TIMEOUT, 408
// past it), and the front keys its bounds by client.
func TestStalledUploadsDoNotStarveBuyers(t *testing.T) {
	const stalls, buyers, atOnce = 400, 200, 50
	s := testutil.StartStack(t)
	admin := testutil.Token(t, 1, true)
	sale := newClient(t, s.URL).createSale(admin, 100_000, 1)
	front := testutil.StartNginx(t, hostPorts(s.URLs), testutil.Front{RateIP: 1_000_000, InFlight: 64})
	path := fmt.Sprintf("/api/v1/activities/%d/orders", sale.ID)

	for i, tc := range []struct{ name, base string }{{"API alone", s.URL}, {"behind nginx", front}} {
		t.Run(tc.name, func(t *testing.T) {
			attack := startStallers(t, tc.base, path, testutil.Token(t, 9, false), stalls)
			// Every staller has sent its headers and begun its body before a buyer comes.
			deadline := time.Now().Add(30 * time.Second)
			for attack.headers.Load() < stalls || attack.bytes.Load() < stalls {
				if time.Now().After(deadline) {
					t.Fatalf("the stalls did not start: %d headers, %d bytes sent", attack.headers.Load(), attack.bytes.Load())
				}
				time.Sleep(20 * time.Millisecond)
			}

			statuses := make([]string, buyers)
			sem := make(chan struct{}, atOnce)
			var wg sync.WaitGroup
			for b := range buyers {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer func() { <-sem; wg.Done() }()
					user := int64(1000*(i+1) + b)
					client := testutil.ClientFrom(fmt.Sprintf("127.0.%d.%d", 10+b/250, 1+b%250), 3*time.Second)
					req, _ := http.NewRequest(http.MethodPost, tc.base+path, strings.NewReader(`{"quantity":1}`))
					req.Header.Set("Authorization", "Bearer "+testutil.Token(t, user, false))
					resp, err := client.Do(req)
					if err != nil {
						statuses[b] = err.Error()
						return
					}
					resp.Body.Close()
					statuses[b] = resp.Status
				}()
			}
			wg.Wait()
			attack.halt()

			served, others := 0, map[string]int{}
			for _, st := range statuses {
				if st == "202 Accepted" {
					served++
				} else {
					others[st]++
				}
			}
			if served*100 < buyers*99 {
				t.Errorf("%d of %d honest buyers got 202 within 3 s under %d stalled uploads, want at least 99 %%; the others: %v",
					served, buyers, stalls, others)
			}
			t.Logf("%d of %d honest buyers got 202 within 3 s; the others: %v (%d stalled uploads begun)", served, buyers, others, attack.headers.Load())
		})
	}
}

// TestMetricsOffThePublicPort: /metrics is not served on the buyers' port, only on
// SECKILL_METRICS_ADDR; /debug/pprof/ is served nowhere but there and the worker's
// metrics address, and only with SECKILL_PPROF=true.
func TestMetricsOffThePublicPort(t *testing.T) {
	get := func(url string) int {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	db := testutil.MySQL(t)
	for _, pprof := range []bool{false, true} {
		t.Run(fmt.Sprintf("SECKILL_PPROF=%v", pprof), func(t *testing.T) {
			s := testutil.StartStackOnTopology(t, db, testutil.StartRedis(t, "--appendonly", "yes").Topology(), 1, 1,
				fmt.Sprintf("SECKILL_PPROF=%v", pprof))
			waitUntil(t, "the worker's metrics address to answer", 30*time.Second, func() bool {
				resp, err := http.Get(s.WorkerMetricsURL)
				if err == nil {
					resp.Body.Close()
				}
				return err == nil
			})
			ops := strings.TrimSuffix(s.MetricsURL, "/metrics")
			profiles := http.StatusNotFound
			if pprof {
				profiles = http.StatusOK
			}
			for _, tc := range []struct {
				url  string
				want int
			}{
				{s.URL + "/metrics", http.StatusNotFound},
				{s.URL + "/debug/pprof/", http.StatusNotFound},
				{s.MetricsURL, http.StatusOK},
				{ops + "/debug/pprof/", profiles},
				{ops + "/debug/pprof/heap", profiles},
				{s.WorkerMetricsURL, http.StatusOK},
				{s.WorkerURLs[0] + "/debug/pprof/", profiles},
				{s.WorkerURLs[0] + "/debug/pprof/goroutine", profiles},
			} {
				if got := get(tc.url); got != tc.want {
					t.Errorf("GET %s: %d, want %d", tc.url, got, tc.want)
				}
			}
		})
	}
}

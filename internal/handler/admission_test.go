package handler_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/internal/auth"
	"seckill/internal/buyer"
	"seckill/internal/handler"
	"seckill/internal/ratelimit"
	"seckill/internal/testutil"
)

// metric reads one unlabelled value from the operations port's /metrics.
func (s *stack) metric(name string) float64 {
	s.t.Helper()
	resp, err := http.Get(s.metricsURL)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				s.t.Fatalf("%s: %v", name, err)
			}
			return f
		}
	}
	s.t.Fatalf("%s is not on /metrics", name)
	return 0
}

// Past the process's bound, or the sale's, a purchase is refused at once with 429
// rate_limited and Retry-After (too many at once; 503 is for storage down), and takes
// nothing; the purchases in flight finish as they would have, and their places come
// back.
func TestPurchasesInFlightBounded(t *testing.T) {
	s := newStack(t, handler.Options{InFlight: 3, SaleInFlight: 2})
	now := time.Now()
	hot := s.sale(100, 5, now.Add(-time.Minute), now.Add(time.Hour))
	other := s.sale(100, 5, now.Add(-time.Minute), now.Add(time.Hour))
	third := s.sale(100, 5, now.Add(-time.Minute), now.Add(time.Hour))
	post := func(act int64, user int64) answer {
		return s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", act),
			token: testutil.Token(t, user, false), body: `{"quantity":1}`})
	}

	// Redis stopped: the purchases it admits wait in flight.
	s.redis.Pause()
	resumed := false
	defer func() {
		if !resumed {
			s.redis.Resume()
		}
	}()
	var wg sync.WaitGroup
	statuses := make(chan int, 3)
	start := func(act, user int64) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/v1/activities/%d/orders", s.url, act),
				strings.NewReader(`{"quantity":1}`))
			req.Header.Set("Authorization", "Bearer "+testutil.Token(t, user, false))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("an admitted purchase: %v", err)
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	waitInFlight := func(n float64) {
		t.Helper()
		for range 200 {
			if s.metric("seckill_purchases_in_flight") == n {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("seckill_purchases_in_flight never reached %g", n)
	}
	start(hot, 1)
	start(hot, 2)
	waitInFlight(2)
	a := post(hot, 3) // the sale's bound
	wantError(t, a, http.StatusTooManyRequests, "rate_limited")
	if a.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q, want 1", a.header.Get("Retry-After"))
	}
	start(other, 4) // another sale still gets in
	waitInFlight(3)
	wantError(t, post(third, 5), http.StatusTooManyRequests, "rate_limited") // the process's bound
	if got := s.metric("seckill_purchases_shed_total"); got != 2 {
		t.Errorf("seckill_purchases_shed_total %g, want 2", got)
	}
	s.redis.Resume()
	resumed = true
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != http.StatusAccepted {
			t.Errorf("an admitted purchase answered %d, want 202", st)
		}
	}
	waitInFlight(0)

	// The refused took nothing; the places came back.
	for _, tc := range []struct {
		act  int64
		want int64
	}{{hot, 98}, {other, 99}, {third, 100}} {
		a, err := s.svc.Catalog.GetActivity(context.Background(), tc.act)
		if err != nil {
			t.Fatal(err)
		}
		if left := a.StockAvailable; left != tc.want {
			t.Errorf("sale %d: %d units left, want %d", tc.act, left, tc.want)
		}
	}
	for user := int64(3); user <= 5; user++ {
		act := map[int64]int64{3: hot, 4: other, 5: third}[user]
		if a := post(act, user+10); a.status != http.StatusAccepted {
			t.Errorf("after the crowd, sale %d: %d %s, want 202", act, a.status, a.body)
		}
	}
}

// A purchase whose body is still on its way holds no place in flight, with a valid
// token or without: while such uploads stall, a whole purchase is admitted under a bound
// of one. Past the body timeout a stalled upload is answered 408 request_timeout, in the
// contract's error body, and its connection is closed.
func TestStalledUploadHoldsNoPlace(t *testing.T) {
	s := newStack(t, handler.Options{InFlight: 1, SaleInFlight: 1, BodyTimeout: 500 * time.Millisecond})
	now := time.Now()
	act := s.sale(100, 5, now.Add(-time.Minute), now.Add(time.Hour))
	path := fmt.Sprintf("/api/v1/activities/%d/orders", act)
	addr := strings.TrimPrefix(s.url, "http://")
	type stall struct {
		conn net.Conn
		r    *bufio.Reader
	}
	var stalls []stall
	for _, token := range []string{testutil.Token(t, 1, false), ""} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		head := "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 14\r\n"
		if token != "" {
			head += "Authorization: Bearer " + token + "\r\n"
		}
		if _, err := conn.Write([]byte(head + "\r\n{")); err != nil {
			t.Fatal(err)
		}
		stalls = append(stalls, stall{conn, bufio.NewReader(conn)})
	}
	if a := s.do(call{method: "POST", path: path, token: testutil.Token(t, 2, false), body: `{"quantity":1}`}); a.status != http.StatusAccepted {
		t.Errorf("a whole purchase while two uploads stall, under a bound of one: %d %s, want 202", a.status, a.body)
	}
	for i, st := range stalls {
		_ = st.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(st.r, nil)
		if err != nil {
			t.Fatalf("stalled upload %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := http.StatusRequestTimeout
		if i == 1 {
			want = http.StatusUnauthorized // no token: refused before its body is waited for
		}
		wantError(t, answer{status: resp.StatusCode, body: string(b)}, want, map[int]string{408: "request_timeout", 401: "unauthorized"}[want])
		if i == 0 && !resp.Close {
			t.Errorf("the 408 leaves the connection open (Connection: %q), want it closed", resp.Header.Get("Connection"))
		}
	}
	if got := s.metric("seckill_purchases_in_flight"); got != 0 {
		t.Errorf("seckill_purchases_in_flight %g after the answers, want 0", got)
	}
}

// A request that authenticates is read only once its token is verified: a body of
// unknown length (chunked) that stalls, without a token or with one that is not valid,
// is answered 401 at once, on a purchase, a buyer's route and an admin's route alike,
// not waited for until the body timeout.
func TestChunkedBodyReadOnlyAfterTheToken(t *testing.T) {
	s := newStack(t, handler.Options{BodyTimeout: 30 * time.Second})
	now := time.Now()
	act := s.sale(100, 5, now.Add(-time.Minute), now.Add(time.Hour))
	addr := strings.TrimPrefix(s.url, "http://")
	forged := forgedToken(t)
	for _, tc := range []struct{ name, method, path, token string }{
		{"a purchase, no token", "POST", fmt.Sprintf("/api/v1/activities/%d/orders", act), ""},
		{"a purchase, a forged token", "POST", fmt.Sprintf("/api/v1/activities/%d/orders", act), forged},
		{"a buyer's route, no token", "POST", fmt.Sprintf("/api/v1/activities/%d/waitlist", act), ""},
		{"a buyer's route, a forged token", "GET", "/api/v1/orders", forged},
		{"an admin's route, a forged token", "POST", "/api/v1/admin/activities", forged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			head := tc.method + " " + tc.path + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
			if tc.token != "" {
				head += "Authorization: Bearer " + tc.token + "\r\n"
			}
			if _, err := conn.Write([]byte(head + "\r\n1\r\n{\r\n")); err != nil { // one chunk, then nothing
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a third of the body timeout
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer while the body stalls: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			wantError(t, answer{status: resp.StatusCode, body: string(b)}, http.StatusUnauthorized, "unauthorized")
		})
	}
}

// A request counts toward its address's limit only once its token is verified and its
// body has arrived (the contract's door): purchases and a buyer's requests with a forged
// token from one address are all 401, never 429, and uploads with a valid token that
// stall on a buyer's route count toward nothing; a whole request from that address then
// gets its answer. Requests that arrived do count: past the burst, 429.
func TestOnlyArrivedRequestsCountTowardTheAddress(t *testing.T) {
	s := newStack(t, handler.Options{RateIP: 1, TrustedProxies: []string{"127.0.0.1/32"}, BodyTimeout: 30 * time.Second})
	now := time.Now()
	act := s.sale(100, 5, now.Add(-time.Minute), now.Add(time.Hour))
	room := s.roomSale(now.Add(-time.Minute), 10)
	path := fmt.Sprintf("/api/v1/activities/%d/orders", act)
	forged := forgedToken(t)
	from := func(ip string) map[string]string { return map[string]string{"X-Forwarded-For": ip} }
	statuses := map[int]int{}
	for range 10 {
		statuses[s.do(call{method: "POST", path: path, token: forged, body: `{"quantity":1}`, header: from("198.51.100.7")}).status]++
		statuses[s.do(call{method: "GET", path: "/api/v1/orders", token: forged, header: from("198.51.100.7")}).status]++
	}
	if statuses[http.StatusUnauthorized] != 20 {
		t.Errorf("20 requests with a forged token from one address: %v, want 401 each", statuses)
	}
	if a := s.do(call{method: "POST", path: path, token: testutil.Token(t, 2, false), body: `{"quantity":1}`,
		header: from("198.51.100.7")}); a.status != http.StatusAccepted {
		t.Errorf("a purchase from the address after the forged tokens: %d %s, want 202", a.status, a.body)
	}

	// Six joins of the line with a valid token whose bodies stall, from another address.
	addr := strings.TrimPrefix(s.url, "http://")
	for range 6 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		head := fmt.Sprintf("POST /api/v1/activities/%d/line HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"+
			"X-Forwarded-For: 198.51.100.9\r\nAuthorization: Bearer %s\r\n\r\n{", room, testutil.Token(t, 3, false))
		if _, err := conn.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // the stalled requests are in, their bodies waited for
	if a := s.do(call{method: "GET", path: "/api/v1/orders", token: testutil.Token(t, 4, false), header: from("198.51.100.9")}); a.status != http.StatusOK {
		t.Errorf("a whole request from the address of six stalled uploads: %d %s, want 200", a.status, a.body)
	}
	statuses = map[int]int{}
	for range 6 {
		statuses[s.do(call{method: "GET", path: "/api/v1/orders", token: testutil.Token(t, 4, false), header: from("198.51.100.9")}).status]++
	}
	if statuses[http.StatusTooManyRequests] == 0 {
		t.Errorf("six more whole requests from the address: %v, want 429s past its burst of %d", statuses, ratelimit.Burst(1))
	}
}

// forgedToken is a well-formed token signed with another secret than the stack's.
func forgedToken(t *testing.T) string {
	t.Helper()
	tok, err := auth.Sign(strings.Repeat("k", 40), buyer.Of(1), false, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

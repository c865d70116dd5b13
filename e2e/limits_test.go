package e2e

import (
	"net/http"
	"testing"
	"time"

	"seckill/internal/presence"
	"seckill/internal/testutil"
)

// TestRateLimitAcrossAPIProcesses: one user's requests alternate between two API
// processes on one Redis; together they get one allowance (2/s, bursts of 4), not one
// each. Each process allows its share, having counted the other by its heartbeat.
//
// What is allowed is counted over the interval the requests took, as measured, and the
// requests go on until there are enough of them that a process with an allowance of its
// own would have let through more than one allowance over that interval: so the count
// tells one allowance from two however slowly the machine answers.
func TestRateLimitAcrossAPIProcesses(t *testing.T) {
	s := testutil.StartStackOnTopology(t, testutil.MySQL(t), testutil.StartRedis(t, "--appendonly", "yes").Topology(), 2, 1,
		"SECKILL_RATE_USER=2")
	clients := []*client{newClient(t, s.URLs[0]), newClient(t, s.URLs[1])}
	for _, m := range s.MetricsURLs {
		waitMetric(t, m, "seckill_api_instances", 2, 3*presence.Interval)
	}
	const rate, burst = 2, 4 // SECKILL_RATE_USER, and its bursts of twice that
	// allowances is what n allowances let through over d at most: n bursts and n times
	// the rate, and a token earned while the last request was on its way.
	allowances := func(n int, d time.Duration) int { return n*burst + int(float64(n*rate)*d.Seconds()) + 1 }
	buyer := testutil.Token(t, 77, false)
	start := time.Now()
	attempts, allowed, limited := 0, 0, 0
	for {
		r := clients[attempts%2].must("GET", "/api/v1/orders", buyer, nil)
		attempts++
		switch {
		case r.Status == http.StatusOK:
			allowed++
		case r.Status == http.StatusTooManyRequests && r.errorCode() == "rate_limited" && r.Header.Get("Retry-After") != "":
			limited++
		default:
			t.Fatalf("request %d: %d %s", attempts, r.Status, r.Body)
		}
		took := time.Since(start)
		if attempts > allowances(2, took)+2 { // two allowances would have refused some: the count can tell
			break
		}
		if took > time.Minute {
			t.Fatalf("%d requests in %v: too few for two allowances to refuse any, so the count cannot tell one from two", attempts, took)
		}
	}
	took := time.Since(start)
	if allowed > allowances(1, took) || allowed < burst || limited == 0 {
		t.Errorf("%d requests over two processes in %v: %d allowed, %d limited; want %d..%d allowed, one allowance (two would allow up to %d)",
			attempts, took.Round(time.Millisecond), allowed, limited, burst, allowances(1, took), allowances(2, took))
	}
}

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
func TestRateLimitAcrossAPIProcesses(t *testing.T) {
	s := testutil.StartStackOnTopology(t, testutil.MySQL(t), testutil.StartRedis(t, "--appendonly", "yes").Topology(), 2, 1,
		"SECKILL_RATE_USER=2")
	clients := []*client{newClient(t, s.URLs[0]), newClient(t, s.URLs[1])}
	for _, m := range s.MetricsURLs {
		waitMetric(t, m, "seckill_api_instances", 2, 3*presence.Interval)
	}
	buyer := testutil.Token(t, 77, false)
	start := time.Now()
	allowed, limited := 0, 0
	for i := range 16 {
		r := clients[i%2].must("GET", "/api/v1/orders", buyer, nil)
		switch {
		case r.Status == http.StatusOK:
			allowed++
		case r.Status == http.StatusTooManyRequests && r.errorCode() == "rate_limited" && r.Header.Get("Retry-After") != "":
			limited++
		default:
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
	}
	// One allowance over the time taken: the burst of 4, plus 2 per second.
	most := 4 + int(2*time.Since(start).Seconds()) + 1
	if allowed > most || allowed < 4 || limited == 0 {
		t.Errorf("16 requests over two processes in %v: %d allowed, %d limited; want 4..%d allowed (per-process limits would allow 8)",
			time.Since(start).Round(time.Millisecond), allowed, limited, most)
	}
}

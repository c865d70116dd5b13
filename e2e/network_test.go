package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"seckill/internal/testutil"
)

// A sick network mid-crowd, through toxiproxy links: between the API and Redis, and
// between the worker and MySQL; 300 ms of latency each way, a black hole (bytes held,
// connections open) and connection resets. Each fault lasts 2 s of a crowd on a sale of
// its own; then the audit (every 202 in MySQL once, none oversold, no user past
// the limit), no request answered later than the API's own timeouts allow, and after
// an API-Redis fault heals the API sells again within 3 s.
func TestSickNetworkMidCrowd(t *testing.T) {
	redis := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	db := testutil.MySQL(t)
	apiRedis := testutil.StartLink(t, "api-redis", redis.Addr)
	cfg, err := mysql.ParseDSN(db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	workerMySQL := testutil.StartLink(t, "worker-mysql", cfg.Addr)
	cfg.Addr = workerMySQL.Addr
	// The API reaches Redis through its link; the worker reaches Redis directly and
	// MySQL through its link.
	s := testutil.StartStackOnTopology(t, db, testutil.Topology{"SECKILL_REDIS_ADDR=" + apiRedis.Addr}, 1, 0)
	s.StartWorker(t, "SECKILL_REDIS_ADDR="+redis.Addr, "SECKILL_MYSQL_DSN="+cfg.FormatDSN())

	admin := testutil.Token(t, 1, true)
	c := newClient(t, s.URL)
	probeSale := c.createSale(admin, 1_000_000, 1_000_000)
	probeUser := int64(900_000)
	// sells reports how long after now the API answers a purchase 202 again.
	sellsAgain := func() (time.Duration, response) {
		start := time.Now()
		for {
			probeUser++
			r, err := c.do("POST", fmt.Sprintf("/api/v1/activities/%d/orders", probeSale.ID),
				testutil.Token(t, probeUser, false), map[string]int{"quantity": 1})
			if err == nil && r.Status == http.StatusAccepted || time.Since(start) > 30*time.Second {
				return time.Since(start), r
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// felt says whether the crowd's answers show the fault (nil: the worker's faults,
	// which the buyers do not see; the audit checks what they did).
	slower := func(cr *crowd) bool { return time.Duration(cr.slowest.Load()) >= 600*time.Millisecond }
	refused := func(cr *crowd) bool { return cr.codes["503 unavailable"] > 0 }
	faults := []struct {
		name       string
		link       *testutil.Link
		kind, attr string
		felt       func(*crowd) bool
	}{
		{"api-redis latency 300ms", apiRedis, "latency", `"latency": 300`, slower},
		{"api-redis black hole", apiRedis, "timeout", `"timeout": 0`, refused},
		{"api-redis resets", apiRedis, "reset_peer", `"timeout": 0`, refused},
		{"worker-mysql latency 300ms", workerMySQL, "latency", `"latency": 300`, nil},
		{"worker-mysql black hole", workerMySQL, "timeout", `"timeout": 0`, nil},
		{"worker-mysql resets", workerMySQL, "reset_peer", `"timeout": 0`, nil},
	}
	for i, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			var back time.Duration
			var probe response
			a, cr := faultCrowdWith(t, s, crowdPlan{endpoints: []string{s.URL}, firstUser: int64(10_000 * (i + 1)),
				during: func() {
					after(500*time.Millisecond, func() {
						if err := f.link.Sicken(f.kind, f.attr); err != nil {
							t.Errorf("sicken the link: %v", err)
						}
					})
					after(2*time.Second, f.link.Heal)
					back, probe = sellsAgain()
				}})
			t.Logf("%s: slowest answer %v, %d requests without an answer; the API sold again %v after the link healed",
				f.name, time.Duration(cr.slowest.Load()).Round(time.Millisecond), cr.failed.Load(), back.Round(time.Millisecond))
			if cr.failed.Load() != 0 {
				t.Errorf("%d requests got no HTTP answer; want every one answered (503 at worst)", cr.failed.Load())
			}
			if f.felt != nil && !f.felt(cr) {
				t.Errorf("the crowd's answers do not show the fault (answers %v, slowest %v): was the link sick?",
					cr.codes, time.Duration(cr.slowest.Load()))
			}
			// The API's own bounds: a Redis command times out after 1 s (retried), a
			// purchase waits 2 s at most for a connection and 0.5 s for the user's lock.
			if slowest := time.Duration(cr.slowest.Load()); slowest > 8*time.Second {
				t.Errorf("a request took %v: held past the API's timeouts", slowest)
			}
			if probe.Status != http.StatusAccepted || back > 3*time.Second {
				t.Errorf("after the link healed the API answered %d %s, %v later; want 202 within 3 s", probe.Status, probe.Body, back)
			}
			cr.checkReplays(t)
			// A reservation whose enqueue the fault cut off stays queued in Redis until the
			// repair pass enqueues it, 10 s after it was taken; the audit waits until no
			// order of the sale is queued.
			audit(t, s, a, cr, auditFaults)
		})
	}
}

// Package e2e runs the real cmd/api and cmd/worker binaries against a private Redis
// and a fresh MariaDB database, fires flash crowds at them, and audits MySQL.
package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"seckill/internal/testutil"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// A flash crowd on a small stock: every unit sold exactly once, nobody past the limit,
// every 202 in MySQL and every order with its 202, replays answered with the same order.
func TestFlashCrowd(t *testing.T) {
	s := testutil.StartStack(t)
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	a := c.createSale(admin, 300, 3)

	cr := runCrowd(t, a.ID, crowdPlan{users: 420, concurrency: 200, endpoints: []string{s.URL}})
	drainStart := time.Now()
	st := c.waitDrained(admin, a.ID, 2*time.Minute)
	drain := time.Since(drainStart)
	replayed := cr.checkReplays(t)
	t.Logf("%d attempts in %v (%.0f/s); answers %v; %d replays answered with the same order; drained %v after the crowd",
		cr.attempts.Load(), cr.elapsed.Round(time.Millisecond), float64(cr.attempts.Load())/cr.elapsed.Seconds(),
		cr.codes, replayed, drain.Round(time.Millisecond))

	if cr.attempts.Load() < 2000 {
		t.Errorf("only %d attempts", cr.attempts.Load())
	}
	if cr.failed.Load() != 0 || cr.codes["503 unavailable"] != 0 {
		t.Errorf("%d requests without an answer, %d 503s", cr.failed.Load(), cr.codes["503 unavailable"])
	}
	if replayed == 0 {
		t.Error("no replay was answered: the double clicks did not exercise idempotency")
	}
	if st.StockAvailable != 0 || st.Sold != a.StockTotal || st.Orders.Failed != 0 {
		t.Errorf("stats = %+v, want sold out with %d sold and nothing failed", st, a.StockTotal)
	}
	audit(t, s, a, cr, true)
	var units int64
	s.MySQL.Gorm.Raw("SELECT COALESCE(SUM(quantity), 0) FROM orders WHERE activity_id = ? AND status = 'created'", a.ID).Scan(&units)
	if units != a.StockTotal {
		t.Errorf("units sold in MySQL = %d, want exactly the stock %d", units, a.StockTotal)
	}
}

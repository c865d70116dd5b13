// Package e2e runs the real cmd/api and cmd/worker binaries against a private Redis
// and a fresh MariaDB database, fires flash crowds at them, and audits MySQL.
package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
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
	// Every request is answered. A 503 is allowed (on a loaded machine a Redis call can
	// pass its timeout) but must leave nothing taken: the strict audit below finds any
	// order without its 202.
	if cr.failed.Load() != 0 {
		t.Errorf("%d requests without an answer", cr.failed.Load())
	}
	if replayed == 0 {
		t.Error("no replay was answered: the double clicks did not exercise idempotency")
	}
	if st.StockAvailable != 0 || st.Sold != a.StockTotal || st.Orders.Failed != 0 {
		t.Errorf("stats = %+v, want sold out with %d sold and nothing failed", st, a.StockTotal)
	}
	audit(t, s, a, cr, auditStrict)
	// The worker's metrics saw every order created, in batches.
	m := newClient(t, "").must("GET", s.WorkerMetricsURL, "", nil)
	want := fmt.Sprintf(`seckill_persisted_orders_total{outcome="created"} %d`, len(cr.accepted))
	if !strings.Contains(string(m.Body), want) || !strings.Contains(string(m.Body), "seckill_persist_batch_size_count") ||
		!strings.Contains(string(m.Body), "seckill_queue_depth 0") {
		t.Errorf("worker metrics lack %q, batch sizes or an empty queue depth:\n%s", want, m.Body)
	}
	c.must("GET", "/api/v1/activities", "", nil) // the stock gauges show the sales of the last public list
	api := newClient(t, "").must("GET", s.MetricsURL, "", nil)
	for _, want := range []string{`code="sold_out",route="/api/v1/activities/:id/orders",status="409"`,
		`seckill_stock_available{activity_id="1"} 0`, "seckill_http_request_duration_seconds_bucket"} {
		if !strings.Contains(string(api.Body), want) {
			t.Errorf("API metrics lack %s", want)
		}
	}
	var units int64
	s.MySQL.Gorm.Raw("SELECT COALESCE(SUM(quantity), 0) FROM orders WHERE activity_id = ? AND status = 'created'", a.ID).Scan(&units)
	if units != a.StockTotal {
		t.Errorf("units sold in MySQL = %d, want exactly the stock %d", units, a.StockTotal)
	}
}

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// TestRedisFlushedMidSale: Redis loses everything (FLUSHALL) between two crowds on a
// sale, with two APIs and a worker running. With no admin action, purchases get 202
// again within 10 s: the sale is rebuilt from MySQL, once, by whichever process noticed
// first; the buyers of the first crowd keep their allowance used; at the end the units
// in MySQL are within the stock, no user is past the limit, and the ledger balances.
func TestRedisFlushedMidSale(t *testing.T) {
	s := testutil.StartStack(t)
	second, url2 := s.StartAPI(t)
	urls := []string{s.URL, url2}
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	a := c.createSale(admin, 300, 3)
	first := runCrowd(t, a.ID, crowdPlan{users: 50, concurrency: 16, endpoints: urls})
	c.waitDrained(admin, a.ID, time.Minute) // the first crowd's orders are in MySQL

	if err := s.Redis.Client(t).FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	flushed := time.Now()
	codes := map[int]int{}
	for i := 0; ; i++ {
		r := newClient(t, urls[i%2]).must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID),
			testutil.Token(t, 5000, false), map[string]int{"quantity": 1}, "Idempotency-Key", "after-flush")
		codes[r.Status]++
		if r.Status == http.StatusServiceUnavailable && r.Header.Get("Retry-After") == "" {
			t.Errorf("503 without Retry-After while the sale is rebuilt")
		}
		if r.Status == http.StatusAccepted || r.Status == http.StatusOK {
			break
		}
		if r.Status != http.StatusServiceUnavailable || time.Since(flushed) > 10*time.Second {
			t.Fatalf("after the flush: %d %s (%v since)", r.Status, r.Body, time.Since(flushed))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("purchases answered 202 again %v after the flush (answers meanwhile %v)", time.Since(flushed).Round(10*time.Millisecond), codes)
	c.waitDrained(admin, a.ID, time.Minute)

	// A buyer of the first crowd who holds the limit still cannot pass it.
	held := map[int64]int{}
	for _, o := range first.accepted {
		held[o.UserID] += o.Quantity
	}
	for u, n := range held {
		if n == a.PerUserLimit {
			r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, u, false), map[string]int{"quantity": 1})
			if r.Status != http.StatusConflict || r.errorCode() != "limit_exceeded" {
				t.Errorf("user %d held %d of %d before the flush; after it a purchase got %d %s", u, n, a.PerUserLimit, r.Status, r.Body)
			}
			break
		}
	}

	first.merge(runCrowd(t, a.ID, crowdPlan{users: 80, firstUser: 3000, concurrency: 16, endpoints: urls}))
	var after order
	// The single purchase after the flush is an order too.
	r := c.must("GET", "/api/v1/orders", testutil.Token(t, 5000, false), nil)
	var list struct{ Orders []order }
	r.decode(t, &list)
	if len(list.Orders) != 1 {
		t.Fatalf("user 5000 has %d orders, want the one after the flush", len(list.Orders))
	}
	after = list.Orders[0]
	first.accepted[after.ID] = after
	audit(t, s, a, first, true)

	rebuilt := 0
	for _, p := range []*testutil.Process{s.API, second, s.Worker} {
		rebuilt += strings.Count(p.Output(), "rebuilt from MySQL a sale Redis had lost")
	}
	if rebuilt != 1 {
		t.Errorf("the sale was rebuilt %d times by the two APIs and the worker, want once", rebuilt)
	}
}

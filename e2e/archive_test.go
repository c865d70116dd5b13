package e2e

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/testutil"
)

// drop is a short sale run to its end through the API: bought by a few buyers with
// Idempotency-Keys, then each order paid, cancelled, or left to expire.
type drop struct {
	c      *client
	admin  string
	id     int64
	buyers []buyer.ID
	orders []order // by buyer
}

// newDrop creates a sale open from now for open, with a pay window of 10 s (the
// shortest), in buckets stock buckets.
func newDrop(c *client, admin string, open time.Duration, buckets int) *drop {
	c.t.Helper()
	now := time.Now().UTC()
	r := c.must("POST", "/api/v1/admin/activities", admin, map[string]any{
		"name": "weekly drop", "product_name": "sneaker", "price_cents": 12000, "stock": 10, "per_user_limit": 2,
		"starts_at": now.Add(-time.Minute).Format(time.RFC3339Nano), "ends_at": now.Add(open).Format(time.RFC3339Nano),
		"pay_window_seconds": 10, "stock_buckets": buckets})
	if r.Status != http.StatusCreated {
		c.t.Fatalf("create a drop: %d %s", r.Status, r.Body)
	}
	var a activity
	r.decode(c.t, &a)
	return &drop{c: c, admin: admin, id: a.ID}
}

// buy has each buyer buy one unit with an Idempotency-Key, then try to pass the limit
// (409 limit_exceeded).
func (d *drop) buy(t *testing.T, buyers ...buyer.ID) {
	t.Helper()
	for _, b := range buyers {
		tok := testutil.TokenOf(t, b, false)
		r := d.c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", d.id), tok, map[string]int{"quantity": 1},
			"Idempotency-Key", d.key(b))
		if r.Status != http.StatusAccepted {
			t.Fatalf("buyer %q in sale %d: %d %s", b, d.id, r.Status, r.Body)
		}
		var o order
		r.decode(t, &o)
		if r := d.c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", d.id), tok, map[string]int{"quantity": 2}); r.errorCode() != "limit_exceeded" {
			t.Fatalf("buyer %q past the limit: %d %s", b, r.Status, r.Body)
		}
		d.buyers, d.orders = append(d.buyers, b), append(d.orders, o)
	}
}

func (d *drop) key(b buyer.ID) string {
	h := fnv.New32a()
	h.Write([]byte(b))
	return fmt.Sprintf("drop-%d-%08x", d.id, h.Sum32()) // a key holds A-Z, a-z, 0-9, _ and - only
}

// settle waits until MySQL has every order, then pays the first buyer's, cancels the
// second's, and leaves the others to expire.
func (d *drop) settle(t *testing.T) {
	t.Helper()
	for i, o := range d.orders {
		tok := testutil.TokenOf(t, d.buyers[i], false)
		for deadline := time.Now().Add(30 * time.Second); ; {
			var got order
			d.c.must("GET", "/api/v1/orders/"+o.ID, tok, nil).decode(t, &got)
			if got.Status == "created" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("order %s is %s after 30 s", o.ID, got.Status)
			}
			time.Sleep(50 * time.Millisecond)
		}
		switch i {
		case 0:
			if r := d.c.must("POST", "/api/v1/orders/"+o.ID+"/pay", d.admin, nil); r.Status != http.StatusOK { // the shop confirms
				t.Fatalf("pay %s: %d %s", o.ID, r.Status, r.Body)
			}
		case 1:
			if r := d.c.must("POST", "/api/v1/orders/"+o.ID+"/cancel", tok, nil); r.Status != http.StatusOK {
				t.Fatalf("cancel %s: %d %s", o.ID, r.Status, r.Body)
			}
		}
	}
}

// archivedActivity is the activity with its archived_at.
type archivedActivity struct {
	activity
	ArchivedAt *time.Time `json:"archived_at"`
}

// waitArchived waits until the worker has archived the sale, and returns its activity.
func (d *drop) waitArchived(t *testing.T, within time.Duration) archivedActivity {
	t.Helper()
	for deadline := time.Now().Add(within); ; {
		var a archivedActivity
		d.c.must("GET", fmt.Sprintf("/api/v1/activities/%d", d.id), "", nil).decode(t, &a)
		if a.ArchivedAt != nil {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("sale %d not archived after %v", d.id, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A sale run to its end with real API and worker processes is archived by the worker
// once SECKILL_SALE_RETENTION has passed: no key of it is left in Redis, and the API
// answers from MySQL: the activity and its stats as before, a balanced ledger, the
// orders and a buyer's order list, a replay of a purchase's Idempotency-Key with 200 and
// its order, a purchase with 409 sale_ended (and no rebuild brings the sale back), a
// PATCH and a rebuild with 409 sale_archived; its stock metric is gone.
func TestArchivedSaleEndToEnd(t *testing.T) {
	s := testutil.StartStack(t, "SECKILL_SALE_RETENTION=1s")
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	d := newDrop(c, admin, 4*time.Second, 1)
	d.buy(t, "101", "auth0|e2e buyer", "8f14e45f-ceea-467f-a0e7-5ad1c4b1c0c2")
	d.settle(t)
	path := fmt.Sprintf("/api/v1/admin/activities/%d", d.id)
	var before stats
	a := d.waitArchived(t, 60*time.Second)
	c.must("GET", path+"/stats", admin, nil).decode(t, &before)
	rdb := s.Redis.Client(t)
	if keys := testutil.SaleKeys(t, rdb, d.id); len(keys) > 0 {
		t.Errorf("keys of the archived sale in Redis: %v", keys)
	}
	if a.Status != "ended" || a.StockAvailable != 9 || a.StockTotal != 10 {
		t.Errorf("the archived activity: %+v, want ended, 9 of 10 left (one paid)", a)
	}
	if before.Sold != 1 || before.Orders.Paid != 1 || before.Orders.Cancelled != 2 || before.StockAvailable != 9 {
		t.Errorf("stats %+v, want 1 sold, 1 paid, 2 cancelled, 9 left", before)
	}
	var ledger struct {
		Balanced, Archived bool
		Available          int64
	}
	c.must("GET", path+"/ledger", admin, nil).decode(t, &ledger)
	if !ledger.Balanced || !ledger.Archived || ledger.Available != 9 {
		t.Errorf("ledger %+v, want balanced, archived, 9 available", ledger)
	}
	for i, b := range d.buyers {
		tok := testutil.TokenOf(t, b, false)
		r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", d.id), tok, map[string]int{"quantity": 1},
			"Idempotency-Key", d.key(b))
		var o order
		if r.Status == http.StatusOK {
			r.decode(t, &o)
		}
		if r.Status != http.StatusOK || o.ID != d.orders[i].ID {
			t.Errorf("a replay of buyer %q: %d %s, want 200 and order %s", b, r.Status, r.Body, d.orders[i].ID)
		}
		var list struct{ Orders []order }
		c.must("GET", "/api/v1/orders", tok, nil).decode(t, &list)
		if len(list.Orders) != 1 || list.Orders[0].ID != d.orders[i].ID {
			t.Errorf("buyer %q's orders: %+v", b, list.Orders)
		}
	}
	for _, tc := range []struct {
		name, method, path string
		body               any
		want               int
		code               string
	}{
		{"a purchase", "POST", fmt.Sprintf("/api/v1/activities/%d/orders", d.id), map[string]int{"quantity": 1}, 409, "sale_ended"},
		{"a PATCH", "PATCH", path, map[string]int{"per_user_limit": 5}, 409, "sale_archived"},
		{"a rebuild", "POST", path + "/rebuild", nil, 409, "sale_archived"},
	} {
		tok := admin
		if tc.method == "POST" && tc.code == "sale_ended" {
			tok = testutil.Token(t, 555, false)
		}
		if r := c.must(tc.method, tc.path, tok, tc.body); r.Status != tc.want || r.errorCode() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Body, tc.want, tc.code)
		}
	}
	var after stats
	c.must("GET", path+"/stats", admin, nil).decode(t, &after)
	if after != before {
		t.Errorf("stats after the refusals %+v, want %+v", after, before)
	}
	time.Sleep(3 * time.Second) // two runs of the worker's jobs (rebuild of lost sales, archive) pass
	if keys := testutil.SaleKeys(t, rdb, d.id); len(keys) > 0 {
		t.Errorf("keys of the archived sale back in Redis: %v", keys)
	}
	if m := string(c.must("GET", "/metrics", "", nil).Body); strings.Contains(m, fmt.Sprintf(`activity_id="%d"`, d.id)) {
		t.Errorf("the API's metrics still name the archived sale")
	}
}

// datedStats are asynq's daily counters (asynq:{queue}:processed:<date>, failed:<date>),
// a key per day whatever the sales: the test may cross midnight.
var datedStats = regexp.MustCompile(`^asynq:\{[^}]*\}:(processed|failed):\d{4}-\d{2}-\d{2}$`)

// redisLevel is what Redis holds: its keys (but asynq's daily counters) and used_memory.
func redisLevel(t *testing.T, rdb *redis.Client) ([]string, int64) {
	t.Helper()
	all, err := rdb.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	keys := slices.DeleteFunc(all, datedStats.MatchString)
	slices.Sort(keys)
	return keys, testutil.UsedMemory(t, rdb)
}

// A year of drops, short: many sales, each bought by a few buyers (with
// Idempotency-Keys and the per-user limit's refusals, some in three stock buckets), then
// each order paid, cancelled or left to expire, until every order is final. Once the
// worker has archived them all, Redis holds the keys it held before them, and its
// used_memory is within 1 MB of what it was (the contract's "A year of drops").
func TestYearOfDropsLeavesRedisAsItWas(t *testing.T) {
	const drops, perDrop = 40, 3
	s := testutil.StartStack(t, "SECKILL_SALE_RETENTION=1s", "SECKILL_RATE_USER=20")
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	rdb := s.Redis.Client(t)

	// A first drop to its archive: the worker's jobs, the queue and the scripts have
	// their keys and memory from then on.
	warm := newDrop(c, admin, 4*time.Second, 1)
	warm.buy(t, "1", "2", "3")
	warm.settle(t)
	warm.waitArchived(t, 60*time.Second)
	keysBefore, memBefore := redisLevel(t, rdb)

	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	ds := make([]*drop, drops)
	for i := range drops {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			buckets := 1
			if i%4 == 3 {
				buckets = 3
			}
			d := newDrop(c, admin, 5*time.Second, buckets)
			var buyers []buyer.ID
			for j := range perDrop {
				b := buyer.ID(fmt.Sprintf("%d", 1000+perDrop*i+j))
				if j == 2 {
					b = buyer.ID(fmt.Sprintf("auth0|drop buyer %d", i))
				}
				buyers = append(buyers, b)
			}
			d.buy(t, buyers...)
			d.settle(t)
			ds[i] = d
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	_, memLive := redisLevel(t, rdb)
	for _, d := range ds {
		d.waitArchived(t, 2*time.Minute)
	}
	var keysAfter []string
	var memAfter int64
	for deadline := time.Now().Add(30 * time.Second); ; { // a lock's waiters, a rate key: gone within seconds
		keysAfter, memAfter = redisLevel(t, rdb)
		if slices.Equal(keysAfter, keysBefore) && memAfter-memBefore <= 1<<20 {
			break
		}
		if time.Now().After(deadline) {
			added := slices.DeleteFunc(slices.Clone(keysAfter), func(k string) bool { return slices.Contains(keysBefore, k) })
			gone := slices.DeleteFunc(slices.Clone(keysBefore), func(k string) bool { return slices.Contains(keysAfter, k) })
			t.Fatalf("after %d drops archived: %d keys (%d before; new %v, gone %v), used_memory %d (%d before, %+d)",
				drops, len(keysAfter), len(keysBefore), added, gone, memAfter, memBefore, memAfter-memBefore)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%d drops of %d buyers: used_memory %d before, %d with them settled, %d once archived (%+d); %d keys before and after",
		drops, perDrop, memBefore, memLive, memAfter, memAfter-memBefore, len(keysAfter))
}

package e2e

import (
	"context"
	"encoding/json"
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
// shortest), in buckets stock buckets. It returns its failure rather than failing the
// test, so that a goroutine may call it.
func newDrop(c *client, admin string, open time.Duration, buckets int) (*drop, error) {
	now := time.Now().UTC()
	r, err := c.do("POST", "/api/v1/admin/activities", admin, map[string]any{
		"name": "weekly drop", "product_name": "sneaker", "price_cents": 12000, "stock": 10, "per_user_limit": 2,
		"starts_at": now.Add(-time.Minute).Format(time.RFC3339Nano), "ends_at": now.Add(open).Format(time.RFC3339Nano),
		"pay_window_seconds": 10, "stock_buckets": buckets})
	var a activity
	if err != nil || r.Status != http.StatusCreated || json.Unmarshal(r.Body, &a) != nil {
		return nil, fmt.Errorf("create a drop: %v %d %s", err, r.Status, r.Body)
	}
	return &drop{c: c, admin: admin, id: a.ID}, nil
}

// buy has each buyer buy one unit with an Idempotency-Key, then try to pass the limit
// (409 limit_exceeded). A 429 busy (the buyer's previous purchase still holds the
// buyer's lock on a slow machine) is retried after a moment, as a client does. It
// returns its failure rather than failing the test, so that a goroutine may call it.
func (d *drop) buy(t *testing.T, buyers ...buyer.ID) error {
	for _, b := range buyers {
		tok := testutil.TokenOf(t, b, false)
		path := fmt.Sprintf("/api/v1/activities/%d/orders", d.id)
		r, err := d.try("POST", path, tok, map[string]int{"quantity": 1}, "Idempotency-Key", d.key(b))
		if err != nil || r.Status != http.StatusAccepted {
			return fmt.Errorf("buyer %q in sale %d: %v %d %s", b, d.id, err, r.Status, r.Body)
		}
		var o order
		if err := json.Unmarshal(r.Body, &o); err != nil {
			return fmt.Errorf("buyer %q in sale %d: %w", b, d.id, err)
		}
		if r, err := d.try("POST", path, tok, map[string]int{"quantity": 2}); err != nil || r.errorCode() != "limit_exceeded" {
			return fmt.Errorf("buyer %q past the limit: %v %d %s", b, err, r.Status, r.Body)
		}
		d.buyers, d.orders = append(d.buyers, b), append(d.orders, o)
	}
	return nil
}

// try is the client's do, retried while the answer is 429 busy (for 10 s at most).
func (d *drop) try(method, path, token string, body any, header ...string) (response, error) {
	for deadline := time.Now().Add(10 * time.Second); ; {
		r, err := d.c.do(method, path, token, body, header...)
		if err != nil || r.errorCode() != "busy" || time.Now().After(deadline) {
			return r, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (d *drop) key(b buyer.ID) string {
	h := fnv.New32a()
	h.Write([]byte(b))
	return fmt.Sprintf("drop-%d-%08x", d.id, h.Sum32()) // a key holds A-Z, a-z, 0-9, _ and - only
}

// settle waits until MySQL has every order, then has the shop confirm the first buyer's
// payment, cancels the second's, and leaves the others to expire. It returns its failure
// rather than failing the test, so that a goroutine may call it.
func (d *drop) settle(t *testing.T) error {
	for i, o := range d.orders {
		tok := testutil.TokenOf(t, d.buyers[i], false)
		for deadline := time.Now().Add(30 * time.Second); ; {
			var got order
			r, err := d.c.do("GET", "/api/v1/orders/"+o.ID, tok, nil)
			if err == nil && json.Unmarshal(r.Body, &got) == nil && got.Status == "created" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("order %s is %q after 30 s (%v)", o.ID, got.Status, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		action, by := "", ""
		switch i {
		case 0:
			action, by = "/pay", d.admin // the shop confirms
		case 1:
			action, by = "/cancel", tok
		default:
			continue
		}
		if r, err := d.c.do("POST", "/api/v1/orders/"+o.ID+action, by, nil); err != nil || r.Status != http.StatusOK {
			return fmt.Errorf("%s %s: %v %d %s", action, o.ID, err, r.Status, r.Body)
		}
	}
	return nil
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
	d, err := newDrop(c, admin, 4*time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.buy(t, "101", "auth0|e2e buyer", "8f14e45f-ceea-467f-a0e7-5ad1c4b1c0c2"); err != nil {
		t.Fatal(err)
	}
	if err := d.settle(t); err != nil {
		t.Fatal(err)
	}
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
	warm, err := newDrop(c, admin, 4*time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.buy(t, "1", "2", "3"); err != nil {
		t.Fatal(err)
	}
	if err := warm.settle(t); err != nil {
		t.Fatal(err)
	}
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
			d, err := newDrop(c, admin, 5*time.Second, buckets)
			if err != nil {
				t.Error(err)
				return
			}
			var buyers []buyer.ID
			for j := range perDrop {
				b := buyer.ID(fmt.Sprintf("%d", 1000+perDrop*i+j))
				if j == 2 {
					b = buyer.ID(fmt.Sprintf("auth0|drop buyer %d", i))
				}
				buyers = append(buyers, b)
			}
			if err := d.buy(t, buyers...); err != nil {
				t.Error(err)
				return
			}
			if err := d.settle(t); err != nil {
				t.Error(err)
				return
			}
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

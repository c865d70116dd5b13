package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/testutil"
)

type waitlistEntry struct {
	Buyer    string `json:"buyer"`
	Position int    `json:"position"`
	Status   string `json:"status"`
	OrderID  string `json:"order_id"`
}

// TestWaitlistReturnsInOrderUnderACrowd: a sale of 6 units sells out to buyers 1..6;
// buyers 101..110 join its waitlist in that order, while a crowd keeps retrying the
// sold-out sale through both APIs. Units come back through a cancel, a refund with
// restock and expired pay windows (the worker's expiry), and an offered order left
// unpaid expires in turn: every returned unit is offered once, in join order, as a
// created order marked offered (its order.created event says so), the unpaid offer's
// entry ends and its unit goes to the next; the crowd never gets a unit while an entry
// waits; nothing is sold past the stock or the limit, and the ledger balances.
func TestWaitlistReturnsInOrderUnderACrowd(t *testing.T) {
	s := testutil.StartStackOnTopology(t, testutil.MySQL(t),
		testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always").Topology(), 2, 1,
		"SECKILL_WEBHOOK_ALLOW_PRIVATE=true")
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	hook := testutil.StartReceiver(t)
	c.subscribe(admin, hook, "order.created")
	a := c.createSaleWith(admin, 6, 1, map[string]any{"pay_window_seconds": 10})
	buyPath := fmt.Sprintf("/api/v1/activities/%d/orders", a.ID)
	waitlist := fmt.Sprintf("/api/v1/activities/%d/waitlist", a.ID)
	bought := map[int64]string{}
	for u := int64(1); u <= 6; u++ {
		r := c.must("POST", buyPath, testutil.Token(t, u, false), map[string]int{"quantity": 1})
		if r.Status != http.StatusAccepted {
			t.Fatalf("buyer %d: %d %s", u, r.Status, r.Body)
		}
		var o order
		r.decode(t, &o)
		bought[u] = o.ID
	}
	c.waitDrained(admin, a.ID, time.Minute)
	for i, u := range []int64{101, 102, 103, 104, 105, 106, 107, 108, 109, 110} {
		r := c.must("POST", waitlist, testutil.Token(t, u, false), map[string]int{"quantity": 1})
		var e waitlistEntry
		r.decode(t, &e)
		if r.Status != http.StatusCreated || e.Position != i+1 {
			t.Fatalf("buyer %d joins: %d %s, want 201 at position %d", u, r.Status, r.Body, i+1)
		}
	}

	// The crowd: buyers who keep retrying the sold-out sale through both APIs.
	ctx, stop := context.WithCancel(context.Background())
	var crowdWon, crowdTries atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			cl := newClient(t, s.URLs[g%2])
			for i := int64(0); ctx.Err() == nil; i++ {
				user := 50_000 + int64(g)*100_000 + i%500
				r, err := cl.do("POST", buyPath, testutil.Token(t, user, false), map[string]int{"quantity": 1})
				crowdTries.Add(1)
				if err == nil && r.Status == http.StatusAccepted {
					crowdWon.Add(1)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	defer func() { stop(); wg.Wait() }()

	entry := func(u int64) waitlistEntry {
		t.Helper()
		r := c.must("GET", waitlist, testutil.Token(t, u, false), nil)
		var e waitlistEntry
		r.decode(t, &e)
		if r.Status != http.StatusOK {
			t.Fatalf("entry of buyer %d: %d %s", u, r.Status, r.Body)
		}
		return e
	}
	waitOffered := func(u int64) string {
		t.Helper()
		deadline := time.Now().Add(40 * time.Second)
		for {
			if e := entry(u); e.Status == "offered" {
				return e.OrderID
			}
			if time.Now().After(deadline) {
				t.Fatalf("buyer %d never offered units: %+v", u, entry(u))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitCreated := func(u int64, id string) order {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var o order
			r := c.must("GET", "/api/v1/orders/"+id, testutil.Token(t, u, false), nil)
			r.decode(t, &o)
			if o.Status == "created" {
				return o
			}
			if time.Now().After(deadline) {
				t.Fatalf("buyer %d's offered order %s: %s", u, id, r.Body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	pay := func(id string) {
		t.Helper()
		if r := c.must("POST", "/api/v1/orders/"+id+"/pay", admin, nil); r.Status != http.StatusOK {
			t.Fatalf("pay %s: %d %s", id, r.Status, r.Body)
		}
	}
	offers := map[int64]string{}

	// A cancel: buyer 101 is offered the unit, and pays.
	if r := c.must("POST", "/api/v1/orders/"+bought[1]+"/cancel", testutil.Token(t, 1, false), nil); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	offers[101] = waitOffered(101)
	waitCreated(101, offers[101])
	pay(offers[101])
	// A refund with restock (the shop paid, then refunded buyer 2): buyer 102.
	pay(bought[2])
	if r := c.must("POST", "/api/v1/orders/"+bought[2]+"/refund", testutil.ServiceToken(t, 900), map[string]bool{"restock": true}); r.Status != http.StatusOK {
		t.Fatalf("refund: %d %s", r.Status, r.Body)
	}
	offers[102] = waitOffered(102)
	waitCreated(102, offers[102])
	pay(offers[102])
	// Buyers 3..6 never pay: their windows expire and 103..106 are offered, in order.
	for _, u := range []int64{103, 104, 105, 106} {
		offers[u] = waitOffered(u)
	}
	for _, u := range []int64{104, 105, 106} {
		waitCreated(u, offers[u])
		pay(offers[u])
	}
	// Buyer 103 leaves the offer unpaid: it expires, its entry ends, and 107 gets it.
	offers[107] = waitOffered(107)
	if e := entry(103); e.Status != "ended" || e.OrderID != offers[103] {
		t.Errorf("buyer 103's entry after the offer expired: %+v, want ended", e)
	}
	waitCreated(107, offers[107])
	pay(offers[107])
	for i, u := range []int64{108, 109, 110} {
		if e := entry(u); e.Status != "waiting" || e.Position != i+1 {
			t.Errorf("buyer %d: %+v, want waiting at %d", u, e, i+1)
		}
	}
	stop()
	wg.Wait()
	t.Logf("the crowd tried %d times and won %d", crowdTries.Load(), crowdWon.Load())
	if crowdWon.Load() != 0 || crowdTries.Load() == 0 {
		t.Errorf("the crowd retrying the sold-out sale won %d units of %d tries, want none: the returns were the waitlist's", crowdWon.Load(), crowdTries.Load())
	}

	// MySQL: the 7 offered orders (one per returned unit) marked offered, each with its
	// order.created event saying so; 6 units paid; the ledger balances.
	st := c.waitDrained(admin, a.ID, time.Minute)
	var offered int64
	if err := s.MySQL.Gorm.Raw("SELECT COUNT(*) FROM orders WHERE activity_id = ? AND offered", a.ID).Scan(&offered).Error; err != nil {
		t.Fatal(err)
	}
	events := 0
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ids := map[string]bool{} // at least once: an event may arrive again
		for _, d := range hook.Accepted() {
			if d.Type == "order.created" && strings.Contains(string(d.Body), `"offered":true`) {
				ids[d.ID] = true
			}
		}
		events = len(ids)
		if events >= 7 || time.Now().After(deadline) {
			break
		}
	}
	if offered != 7 || events != 7 || st.Orders.Paid != 6 || st.StockAvailable != 0 {
		t.Errorf("offered orders %d, their order.created events %d, stats %+v; want 7, 7, 6 paid, none available", offered, events, st)
	}
	r := c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/ledger", a.ID), admin, nil)
	var l struct{ Balanced bool }
	r.decode(t, &l)
	if !l.Balanced {
		t.Errorf("ledger: %s", r.Body)
	}
}

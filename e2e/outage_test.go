package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"seckill/internal/testutil"
)

// mysqlBound is the contract's bound on a route that needs MySQL while MySQL does not
// answer; the service aims at about two seconds, the rest is margin for a loaded machine.
const mysqlBound = 3 * time.Second

// boundedCall is one request made while MySQL is frozen, and what it got.
type boundedCall struct {
	name                string
	method, path, token string
	body                any
	got                 response
	err                 error
	took                time.Duration
}

// callAll makes the calls at once, spread over the clients, and records each answer and
// how long it took.
func callAll(clients []*client, calls []*boundedCall) {
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			c.got, c.err = clients[i%len(clients)].do(c.method, c.path, c.token, c.body)
			c.took = time.Since(start)
		}()
	}
	wg.Wait()
}

// checkUnavailable fails the test for each call not answered 503 unavailable with
// Retry-After within mysqlBound, and returns the slowest answer.
func checkUnavailable(t *testing.T, calls []*boundedCall) time.Duration {
	t.Helper()
	var slowest time.Duration
	for _, c := range calls {
		slowest = max(slowest, c.took)
		switch {
		case c.err != nil:
			t.Errorf("%s while MySQL was frozen: no answer after %v: %v", c.name, c.took, c.err)
		case c.got.Status != http.StatusServiceUnavailable || c.got.errorCode() != "unavailable":
			t.Errorf("%s while MySQL was frozen: %d %s, want 503 unavailable", c.name, c.got.Status, c.got.Body)
		case c.got.Header.Get("Retry-After") == "":
			t.Errorf("%s while MySQL was frozen: 503 without Retry-After", c.name)
		case c.took > mysqlBound:
			t.Errorf("%s while MySQL was frozen: answered after %v, want within %v", c.name, c.took, mysqlBound)
		}
	}
	return slowest
}

// While MySQL is frozen (SIGSTOP: connects succeed, nothing answers), every route that
// needs it answers 503 unavailable with Retry-After within the bound, for buyers, the
// shop's back end and admins alike, more of them at once than the connection pool holds,
// over two APIs; purchases still get 202.
func TestMySQLFrozenRoutesAnswerInBoundedTime(t *testing.T) {
	db := testutil.StartMariaDB(t)
	redis := testutil.StartRedis(t, "--appendonly", "yes")
	s := testutil.StartStackOnTopology(t, testutil.MySQLOn(t, db.DSN), redis.Topology(), 2, 1, "SECKILL_BUYER_PAYS=true")
	c := newClient(t, s.URL)
	admin, shop := testutil.Token(t, 1, true), testutil.ServiceToken(t, 900)
	a := c.createSale(admin, 1000, 1)
	ids := c.buyEach(admin, a.ID, 5000, 4)

	var calls []*boundedCall
	add := func(name, method, path, token string, body any) {
		calls = append(calls, &boundedCall{name: name, method: method, path: path, token: token, body: body})
	}
	for i := range 40 { // with the rest, more than the 64 connections of the two pools together
		add("a buyer's pay", "POST", "/api/v1/orders/"+ids[i%2]+"/pay", testutil.Token(t, 5000+int64(i%2), false), nil)
		add("the shop's confirmation", "POST", "/api/v1/orders/"+ids[2+i%2]+"/pay", shop, nil)
	}
	add("a buyer's cancel", "POST", "/api/v1/orders/"+ids[0]+"/cancel", testutil.Token(t, 5000, false), nil)
	add("the shop's cancel", "POST", "/api/v1/orders/"+ids[1]+"/cancel", shop, nil)
	add("an order read", "GET", "/api/v1/orders/"+ids[0], testutil.Token(t, 5000, false), nil)
	add("a buyer's orders", "GET", "/api/v1/orders", testutil.Token(t, 5001, false), nil)
	add("an admin's sale", "POST", "/api/v1/admin/activities", admin, map[string]any{
		"name": "during the outage", "product_name": "widget", "price_cents": 100, "stock": 5, "per_user_limit": 1,
		"starts_at": time.Now().UTC().Format(time.RFC3339), "ends_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	add("an admin's change", "PATCH", fmt.Sprintf("/api/v1/admin/activities/%d", a.ID), admin, map[string]any{"add_stock": 1})
	add("an admin's stats", "GET", fmt.Sprintf("/api/v1/admin/activities/%d/stats", a.ID), admin, nil)
	add("an admin's webhooks", "GET", "/api/v1/admin/webhooks", admin, nil)
	add("a webhook's removal", "DELETE", "/api/v1/admin/webhooks/1", admin, nil)

	clients := []*client{newClient(t, s.URLs[0]), newClient(t, s.URLs[1])}
	db.Pause()
	defer db.Resume()
	t.Log("MariaDB frozen with SIGSTOP")
	start := time.Now()
	callAll(clients, calls)
	t.Logf("%d calls answered in %v, the slowest after %v", len(calls), time.Since(start).Round(time.Millisecond),
		checkUnavailable(t, calls).Round(time.Millisecond))
	// A second round meets connections the first left broken, and pools refilling.
	callAll(clients, calls)
	t.Logf("again: the slowest after %v", checkUnavailable(t, calls).Round(time.Millisecond))
	if r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, 6000, false),
		map[string]int{"quantity": 1}); r.Status != http.StatusAccepted {
		t.Errorf("purchase while MySQL was frozen: %d %s, want 202", r.Status, r.Body)
	}
	db.Resume()
	t.Log("MariaDB resumed")
	// Once MySQL answers again, so do the routes.
	waitUntil(t, "the buyer's pay to succeed after MySQL resumed", 20*time.Second, func() bool {
		return c.must("POST", "/api/v1/orders/"+ids[0]+"/pay", testutil.Token(t, 5000, false), nil).Status == http.StatusOK
	})
}

// timedOrder is an order with the times a pay window is judged by.
type timedOrder struct {
	ID        string    `json:"id"`
	UserID    int64     `json:"user_id"`
	Status    string    `json:"status"`
	GroupID   string    `json:"group_id"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// getOrder reads an order as an admin.
func (c *client) getOrder(admin, id string) timedOrder {
	c.t.Helper()
	r := c.must("GET", "/api/v1/orders/"+id, admin, nil)
	var o timedOrder
	if r.Status != http.StatusOK {
		c.t.Fatalf("order %s: %d %s", id, r.Status, r.Body)
	}
	r.decode(c.t, &o)
	return o
}

// outageOrder is an order of the scenario: its window as set, and what the test did.
type outageOrder struct {
	timedOrder
	token string
	plan  string // "confirm": the shop confirms from the freeze on; "pay": its buyer pays after; "leave": nobody pays
}

// MariaDB SIGSTOPped for 10 s across the end of 18 pay windows (10 s each, ending 3, 5
// and 7 s into the freeze) and of 3 group windows, over two APIs and a worker (SIGKILLed
// during the freeze, started again after it):
//   - every pay during the freeze is answered 503 with Retry-After within the bound; the
//     shop's confirmations, retried through it, succeed the instant MySQL answers again;
//   - each window gets back the time the freeze took from it: its buyer's pay within the
//     extended window succeeds, an unpaid order shows the extended deadline and stays
//     created until it, then expires, its units back once, and its order.cancelled
//     event comes only then;
//   - orders bought during the freeze (queued until MySQL answers) get their window
//     from the freeze's end;
//   - a group whose window ended during the freeze takes a join during it and one after
//     it, and a group left alone fails only after its extended end;
//   - both sales' ledgers balance.
func TestMySQLOutageGivesWindowsTheirTime(t *testing.T) {
	db, rs := testutil.StartMariaDB(t), testutil.StartRedis(t, "--appendonly", "yes")
	s := testutil.StartStackOnTopology(t, testutil.MySQLOn(t, db.DSN), rs.Topology(), 2, 1, "SECKILL_WEBHOOK_ALLOW_PRIVATE=true",
		"SECKILL_BUYER_PAYS=true")
	c := newClient(t, s.URL)
	apis := []*client{newClient(t, s.URLs[0]), newClient(t, s.URLs[1])}
	admin, shop := testutil.Token(t, 1, true), testutil.ServiceToken(t, 900)
	hooks := testutil.StartReceiver(t)
	c.subscribe(admin, hooks)
	sale := c.createSaleWith(admin, 100, 1, map[string]any{"pay_window_seconds": 10})
	groupSale := createGroupSale(t, func(int64) redis.Cmdable { return rs.Client(t) }, c, admin, 20, 1, 2, 1, 10*time.Second)

	// Three waves of six buyers, 2 s apart; the shop confirms the first two of each
	// wave, the buyer pays the next two, and nobody pays the last two. Three groups open
	// with the first wave.
	plans := []string{"confirm", "confirm", "pay", "pay", "leave", "leave"}
	var orders []*outageOrder
	var seats []seatAnswer
	first := time.Now()
	for w := range 3 {
		// The waves come 2 s apart, so their windows end 2 s apart: the scenario under test.
		time.Sleep(time.Until(first.Add(time.Duration(w) * 2 * time.Second)))
		for i, plan := range plans {
			user := int64(100 + 10*w + i)
			token := testutil.Token(t, user, false)
			r := apis[i%2].must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", sale.ID), token, map[string]int{"quantity": 1})
			if r.Status != http.StatusAccepted {
				t.Fatalf("buy as user %d: %d %s", user, r.Status, r.Body)
			}
			var o timedOrder
			r.decode(t, &o)
			orders = append(orders, &outageOrder{timedOrder: o, token: token, plan: plan})
		}
		if w == 0 {
			for u := int64(500); u < 503; u++ {
				seats = append(seats, c.takeSeat(fmt.Sprintf("/api/v1/activities/%d/groups", groupSale.ID), u))
			}
		}
	}
	c.waitDrained(admin, sale.ID, 10*time.Second)
	for _, o := range orders {
		o.timedOrder = c.getOrder(admin, o.ID)
		if o.Status != "created" {
			t.Fatalf("order %s is %s before the freeze, want created", o.ID, o.Status)
		}
	}
	groups := make([]group, len(seats))
	for i, a := range seats {
		groups[i] = a.Group
	}

	// The windows end 3, 5 and 7 s into the freeze: the scenario under test.
	time.Sleep(time.Until(first.Add(7 * time.Second)))
	db.Pause()
	frozen := time.Now()
	defer db.Resume()
	t.Logf("MariaDB frozen with SIGSTOP; the windows end %v to %v into it", orders[0].ExpiresAt.Sub(frozen).Round(100*time.Millisecond),
		orders[len(orders)-1].ExpiresAt.Sub(frozen).Round(100*time.Millisecond))

	// The shop confirms its orders from the freeze on, again after each 503, as the
	// docs tell it to; every 503 within the bound.
	var wg sync.WaitGroup
	var confirmations []*boundedCall
	var mu sync.Mutex
	for i, o := range orders {
		if o.plan != "confirm" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for deadline := time.Now().Add(2 * time.Minute); ; {
				call := &boundedCall{name: "the shop's confirmation", method: "POST", path: "/api/v1/orders/" + o.ID + "/pay", token: shop}
				callAll([]*client{apis[i%2]}, []*boundedCall{call})
				if call.err != nil || call.got.Status != http.StatusServiceUnavailable {
					mu.Lock()
					confirmations = append(confirmations, call)
					mu.Unlock()
					return
				}
				if call.took > mysqlBound || call.got.Header.Get("Retry-After") == "" {
					t.Errorf("a confirmation during the freeze: 503 after %v, Retry-After %q", call.took, call.got.Header.Get("Retry-After"))
				}
				if time.Now().After(deadline) {
					t.Errorf("the shop's confirmation of %s still answered 503 two minutes on", o.ID)
					return
				}
				time.Sleep(300 * time.Millisecond) // the shop asks again after a 503, as the docs tell it to
			}
		}()
	}
	// Buyers try to pay during the freeze: 503 within the bound.
	var during []*boundedCall
	for _, o := range orders {
		if o.plan == "pay" {
			during = append(during, &boundedCall{name: "a buyer's pay", method: "POST", path: "/api/v1/orders/" + o.ID + "/pay", token: o.token})
		}
	}
	// A second into the freeze, buyers try to pay: the scenario under test.
	time.Sleep(time.Second)
	callAll(apis, during)
	t.Logf("buyers' pays during the freeze: the slowest answered after %v", checkUnavailable(t, during).Round(time.Millisecond))

	// Purchases go on: their windows start when MySQL answers again.
	var bought []*outageOrder
	for u := int64(200); u < 206; u++ {
		token := testutil.Token(t, u, false)
		r := apis[u%2].must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", sale.ID), token, map[string]int{"quantity": 1})
		if r.Status != http.StatusAccepted {
			t.Errorf("a purchase during the freeze: %d %s, want 202", r.Status, r.Body)
			continue
		}
		var o timedOrder
		r.decode(t, &o)
		bought = append(bought, &outageOrder{timedOrder: o, token: token, plan: []string{"pay", "leave"}[u%2]})
	}
	s.Worker.Signal(syscall.SIGKILL)
	t.Log("worker killed with SIGKILL")
	// A group whose window ended 3 s into the freeze takes a join during it.
	// 5 s into the freeze: the scenario under test.
	time.Sleep(time.Until(frozen.Add(5 * time.Second)))
	seats = append(seats, c.takeSeat("/api/v1/groups/"+groups[0].ID+"/join", 510))

	// The freeze lasts 10 s: the scenario under test.
	time.Sleep(time.Until(frozen.Add(10 * time.Second)))
	db.Resume()
	resumed := time.Now()
	took := resumed.Sub(frozen)
	t.Logf("MariaDB resumed after %v", took.Round(time.Millisecond))
	s.Worker.Start()

	// A join after the freeze, within the time it gave back.
	// 1.5 s after the freeze, within the time it gave back: the scenario under test.
	time.Sleep(1500 * time.Millisecond)
	seats = append(seats, c.takeSeat("/api/v1/groups/"+groups[1].ID+"/join", 511))
	if g := c.group(groups[2].ID); g.Status != "open" || g.ExpiresAt.Before(groups[2].ExpiresAt.Add(took-100*time.Millisecond)) {
		t.Errorf("the group left alone, 1.5 s after the freeze: %s until %v, want open until at least %v", g.Status,
			g.ExpiresAt, groups[2].ExpiresAt.Add(took))
	}

	// The buyers pay halfway through what is left of their windows; the unpaid orders
	// show the extended deadline and stay created until shortly before it.
	g := testutil.NewGoroutines(t)
	for _, o := range orders {
		extended := o.ExpiresAt.Add(took - 100*time.Millisecond) // the freeze's share: the rest is measurement
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := c.on(g)
			switch o.plan {
			case "pay":
				// Halfway through what is left of the window: the moment under test.
				time.Sleep(time.Until(resumed.Add(extended.Sub(resumed) / 2)))
				if r := c.must("POST", "/api/v1/orders/"+o.ID+"/pay", o.token, nil); r.Status != http.StatusOK {
					t.Errorf("the buyer's pay %v after the freeze, %v before the extended window ends: %d %s",
						time.Since(resumed).Round(time.Millisecond), time.Until(extended).Round(time.Millisecond), r.Status, r.Body)
				}
			case "leave":
				// 0.7 s before the extended deadline: the moment under test.
				time.Sleep(time.Until(extended.Add(-700 * time.Millisecond)))
				if got := c.getOrder(admin, o.ID); got.Status != "created" || got.ExpiresAt.Before(extended) {
					t.Errorf("an unpaid order 0.7 s before its extended deadline: %s until %v, want created until at least %v",
						got.Status, got.ExpiresAt, extended)
				}
			}
		}()
	}
	// Orders bought during the freeze: their windows run from when they are stored,
	// after it. Each is checked as soon as it is stored: one that the killed worker held
	// waits for the repair job (tens of seconds), and the others' windows may pass
	// meanwhile.
	var stored sync.WaitGroup
	for _, o := range bought {
		stored.Add(1)
		go func() {
			defer stored.Done()
			c := c.on(g)
			got := c.getOrder(admin, o.ID)
			for deadline := time.Now().Add(time.Minute); got.Status == "queued" && time.Now().Before(deadline); {
				time.Sleep(100 * time.Millisecond)
				got = c.getOrder(admin, o.ID)
			}
			t.Logf("an order bought during the freeze is in MySQL %v after it", time.Since(resumed).Round(100*time.Millisecond))
			if got.Status != "created" || got.ExpiresAt.Before(resumed.Add(10*time.Second-100*time.Millisecond)) {
				t.Errorf("an order bought during the freeze: %s until %v, want created until at least 10 s after it (%v)",
					got.Status, got.ExpiresAt, resumed.Add(10*time.Second))
			}
			if o.plan == "pay" {
				if r := c.must("POST", "/api/v1/orders/"+o.ID+"/pay", o.token, nil); r.Status != http.StatusOK {
					t.Errorf("pay an order bought during the freeze: %d %s", r.Status, r.Body)
				}
			}
		}()
	}
	stored.Wait()
	// The seats of the two complete groups are payable.
	c.waitDrained(admin, groupSale.ID, time.Minute)
	for _, a := range append(seats[:2], seats[3:]...) {
		if r := c.must("POST", "/api/v1/orders/"+a.Order.ID+"/pay", testutil.Token(t, a.Order.UserID, false), nil); r.Status != http.StatusOK {
			t.Errorf("pay the seat of user %d in a complete group: %d %s", a.Order.UserID, r.Status, r.Body)
		}
	}
	wg.Wait()
	g.Report()
	// A confirmation is judged when it came: during the freeze, its window had not
	// been running since the freeze began.
	for _, call := range confirmations {
		var o struct {
			timedOrder
			PaidAt time.Time `json:"paid_at"`
		}
		if call.err != nil || call.got.Status != http.StatusOK {
			t.Errorf("the shop's confirmation retried after the freeze: %d %s (%v), want 200", call.got.Status, call.got.Body, call.err)
			continue
		}
		call.got.decode(t, &o)
		for _, want := range orders {
			extended := want.ExpiresAt.Add(min(o.PaidAt.Sub(frozen), took) - 100*time.Millisecond)
			if want.ID == o.ID && o.ExpiresAt.Before(extended) {
				t.Errorf("an order confirmed at %v shows %v, want its deadline in force then, at least %v", o.PaidAt, o.ExpiresAt, extended)
			}
		}
	}

	// Every window ends: the unpaid orders expire, the lone group fails.
	waitUntil(t, "every unpaid order and group to expire", time.Minute, func() bool {
		st, gst := c.stats(admin, sale.ID), c.stats(admin, groupSale.ID)
		return st.Orders.Created == 0 && st.Orders.Queued == 0 && gst.Orders.Queued == 0 && gst.Orders.Grouping == 0 &&
			gst.Orders.Created == 0 && c.group(groups[2].ID).Status == "failed"
	})
	t.Logf("every window ended %v after the freeze", time.Since(resumed).Round(100*time.Millisecond))
	// The complete groups' orders are payable; the lone group's seat is cancelled.
	for _, g := range groups[:2] {
		if got := c.group(g.ID); got.Status != "complete" {
			t.Errorf("group %s: %s, want complete", g.ID, got.Status)
		}
	}
	final := map[string]int{}
	for _, o := range append(orders, bought...) {
		got := c.getOrder(admin, o.ID)
		final[o.plan+" "+got.Status]++
	}
	want := map[string]int{"confirm paid": 6, "pay paid": 9, "leave cancelled": 9}
	if fmt.Sprint(final) != fmt.Sprint(want) {
		t.Errorf("orders by plan and status %v, want %v", final, want)
	}
	st := c.stats(admin, sale.ID)
	if st.StockAvailable != 100-15 || st.Orders.Paid != 15 || st.Orders.Cancelled != 9 {
		t.Errorf("sale stats %+v, want 15 paid, 9 cancelled, 85 units available", st)
	}
	for _, a := range []activity{sale, groupSale} {
		r := c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/ledger", a.ID), admin, nil)
		var l struct {
			Balanced bool `json:"balanced"`
		}
		if r.decode(t, &l); r.Status != http.StatusOK || !l.Balanced {
			t.Errorf("ledger of sale %d: %d %s", a.ID, r.Status, r.Body)
		}
	}
	checkCancelledEvents(t, hooks, orders, took)
	for _, d := range hooks.Accepted() {
		var ev struct {
			CreatedAt time.Time `json:"created_at"`
		}
		if d.Type == "group.failed" && d.Subject == groups[2].ID {
			if err := json.Unmarshal(d.Body, &ev); err != nil || ev.CreatedAt.Before(groups[2].ExpiresAt.Add(took-100*time.Millisecond)) {
				t.Errorf("group.failed of the lone group at %v (%v), want once its window with the freeze given back had passed: %v",
					ev.CreatedAt, err, groups[2].ExpiresAt.Add(took))
			}
		}
	}
}

// checkCancelledEvents: every order.cancelled event came once the order's deadline in
// force had passed, and shows it; for the scenario's orders, that is at least their
// window as set plus the freeze.
func checkCancelledEvents(t *testing.T, hooks *testutil.Receiver, orders []*outageOrder, took time.Duration) {
	t.Helper()
	set := map[string]time.Time{}
	for _, o := range orders {
		set[o.ID] = o.ExpiresAt
	}
	n := 0
	waitUntil(t, "the order.cancelled events", 30*time.Second, func() bool {
		n = 0
		for _, d := range hooks.Accepted() {
			if d.Type == "order.cancelled" {
				n++
			}
		}
		return n >= 10 // nine unpaid orders and the lone group's seat
	})
	for _, d := range hooks.Accepted() {
		if d.Type != "order.cancelled" {
			continue
		}
		var ev struct {
			CreatedAt time.Time `json:"created_at"`
			Data      struct {
				Order timedOrder `json:"order"`
			} `json:"data"`
		}
		if err := json.Unmarshal(d.Body, &ev); err != nil {
			t.Fatal(err)
		}
		o := ev.Data.Order
		if ev.CreatedAt.Before(o.ExpiresAt) {
			t.Errorf("order.cancelled of %s at %v, before its deadline %v", o.ID, ev.CreatedAt, o.ExpiresAt)
		}
		if e, ok := set[o.ID]; ok && o.ExpiresAt.Before(e.Add(took-100*time.Millisecond)) {
			t.Errorf("order.cancelled of %s shows %v, want the extended deadline, at least %v", o.ID, o.ExpiresAt, e.Add(took))
		}
	}
}

// takeSeat opens a group or joins one (path) as user, and returns the answer.
func (c *client) takeSeat(path string, user int64) seatAnswer {
	c.t.Helper()
	r := c.must("POST", path, testutil.Token(c.t, user, false), map[string]int{"quantity": 1})
	var a seatAnswer
	if r.Status != http.StatusAccepted {
		c.t.Errorf("a seat for user %d (%s): %d %s, want 202", user, path, r.Status, r.Body)
		return a
	}
	r.decode(c.t, &a)
	return a
}

// group reads a group.
func (c *client) group(id string) group {
	c.t.Helper()
	var g group
	c.must("GET", "/api/v1/groups/"+id, "", nil).decode(c.t, &g)
	return g
}

// Processes started while MySQL does not answer, frozen (SIGSTOP: connects hang) or
// stopped (connects refused), as a crashed pod, an API scaled out or a first install
// would be during an outage: an API and a worker of a running service SIGKILLed and
// started again, and a new service on a database never migrated. Both APIs become
// ready and the first sells (202) to buyers at once; every route that needs MySQL
// answers 503 unavailable with Retry-After within the bound, on the fresh database
// before its migrations have run too; the workers start and are not ready. Once MySQL
// answers, the new service's API migrates its database and its routes answer, the
// workers become ready, and every order acknowledged during the outage is in MySQL.
func TestStartDuringMySQLOutage(t *testing.T) {
	outages := []struct {
		name        string
		start, stop func(*testutil.MariaDBServer)
	}{
		{"frozen", (*testutil.MariaDBServer).Pause, (*testutil.MariaDBServer).Resume},
		{"stopped", (*testutil.MariaDBServer).Stop, (*testutil.MariaDBServer).Start},
	}
	for _, o := range outages {
		t.Run(o.name, func(t *testing.T) {
			maria := testutil.StartMariaDB(t)
			s := testutil.StartStackOn(t, testutil.MySQLOn(t, maria.DSN), "SECKILL_BUYER_PAYS=true")
			c := newClient(t, s.URL)
			admin := testutil.Token(t, 1, true)
			a := c.createSale(admin, 100, 1)
			paid := c.buyEach(admin, a.ID, 5000, 1)[0]
			empty := testutil.EmptyMySQLOn(t, maria.DSN)

			o.start(maria)
			down := true
			defer func() { // whatever happens: the clean-up needs the server
				if down {
					o.stop(maria)
				}
			}()
			began := time.Now()
			t.Logf("MariaDB %s", o.name)
			s.API.Signal(syscall.SIGKILL)
			s.Worker.Signal(syscall.SIGKILL)
			s.API.Start()
			s.Worker.Start()
			s.WaitReady(t)
			first := testutil.StartStackOn(t, empty) // waits until its API is ready
			t.Logf("both APIs ready %v into the outage", time.Since(began).Round(time.Millisecond))

			p := newProbeWatch(t)
			for _, u := range []string{s.URL, first.URL} {
				p.wait(u+"/readyz", 200, `{"ready":true,"redis":"ok","mysql":"down"}`, time.Now(), 3*time.Second)
			}
			for _, u := range []string{s.WorkerURLs[0], first.WorkerURLs[0]} {
				p.wait(u+"/readyz", 503, `{"ready":false,"redis":"ok","mysql":"down"}`, time.Now(), 3*time.Second)
			}
			const buyers = 40
			bought := make([]string, buyers)
			var wg sync.WaitGroup
			g := testutil.NewGoroutines(t)
			for i := range buyers {
				wg.Go(func() { bought[i] = c.on(g).buyOne(a.ID, 6000+int64(i)) })
			}
			wg.Wait()
			g.Report()
			calls := []*boundedCall{
				{name: "a buyer's pay", method: "POST", path: "/api/v1/orders/" + paid + "/pay", token: testutil.Token(t, 5000, false)},
				{name: "an order read", method: "GET", path: "/api/v1/orders/" + paid, token: admin},
				{name: "an admin's stats", method: "GET", path: fmt.Sprintf("/api/v1/admin/activities/%d/stats", a.ID), token: admin},
			}
			callAll([]*client{c}, calls)
			fresh := newClient(t, first.URL)
			newSale := func() *boundedCall {
				now := time.Now().UTC()
				return &boundedCall{name: "a sale on the database never migrated", method: "POST", path: "/api/v1/admin/activities",
					token: admin, body: map[string]any{"name": "first", "product_name": "widget", "price_cents": 100, "stock": 5,
						"per_user_limit": 1, "starts_at": now.Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339)}}
			}
			firstCalls := []*boundedCall{newSale(), {name: "the webhooks on the database never migrated", method: "GET",
				path: "/api/v1/admin/webhooks", token: admin}}
			callAll([]*client{fresh}, firstCalls)
			t.Logf("routes that need MySQL: the slowest answer after %v", checkUnavailable(t, append(calls, firstCalls...)).Round(time.Millisecond))
			for _, p := range append(append([]*testutil.Process{}, s.APIs[0], s.Workers[0]), append(first.APIs, first.Workers...)...) {
				if exited, code := p.Exited(); exited {
					t.Fatalf("a process started while MySQL was %s exited with %d:\n%s", o.name, code, p.Output())
				}
			}

			o.stop(maria)
			down = false
			t.Log("MariaDB back")
			// The audit: every order acknowledged during the outage reaches MySQL.
			waitUntil(t, "the orders bought during the outage in MySQL", time.Minute, func() bool {
				var n int64
				s.MySQL.Gorm.Raw("SELECT COUNT(*) FROM orders WHERE id IN ? AND status = 'created'", bought).Scan(&n)
				return n == int64(len(bought))
			})
			waitUntil(t, "the pay to succeed once MySQL is back", 20*time.Second, func() bool {
				return c.must("POST", "/api/v1/orders/"+paid+"/pay", testutil.Token(t, 5000, false), nil).Status == http.StatusOK
			})
			// The new service's API migrated its database once MySQL answered; its sale
			// sells and its order reaches MySQL.
			var created response
			waitUntil(t, "a sale created on the database migrated once MySQL is back", 30*time.Second, func() bool {
				created = fresh.must("POST", "/api/v1/admin/activities", admin, newSale().body)
				return created.Status == http.StatusCreated
			})
			// Its log line reaches the test through a pipe, a moment after the sale's answer.
			waitUntil(t, "the API started on the database never migrated to log its migrations", 10*time.Second, func() bool {
				return strings.Contains(first.API.Output(), "migrations applied")
			})
			var sale activity
			created.decode(t, &sale)
			fresh.buyEach(admin, sale.ID, 7000, 1)
			for _, u := range []string{s.WorkerURLs[0], first.WorkerURLs[0]} {
				p.wait(u+"/readyz", 200, `{"ready":true,"redis":"ok","mysql":"ok"}`, time.Now(), 10*time.Second)
			}
		})
	}
}

// An API started while MySQL does not answer applies its migrations once MySQL does; a
// migration that then fails for another reason (here the user may not even open the
// database) stops it, as it would have at start: it logs why, hands on what it holds
// (its shutdown), and exits 1.
func TestMigrationFailingOnceMySQLAnswersStopsTheAPI(t *testing.T) {
	maria := testutil.StartMariaDB(t)
	db := testutil.EmptyMySQLOn(t, maria.DSN)
	if err := db.Gorm.Exec("CREATE USER 'nogrants'@'%' IDENTIFIED BY 'nogrants'").Error; err != nil {
		t.Fatal(err)
	}
	cfg, err := mysql.ParseDSN(db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = "nogrants", "nogrants"
	denied := *db
	denied.DSN = cfg.FormatDSN()

	maria.Stop()
	s := testutil.StartStackOnTopology(t, &denied, testutil.StartRedis(t, "--appendonly", "yes").Topology(), 1, 0, "SECKILL_SHUTDOWN_DELAY=1s")
	maria.Start()
	waitUntil(t, "the API to exit once MySQL answers", time.Minute, func() bool {
		exited, _ := s.API.Exited()
		return exited
	})
	_, code := s.API.Exited()
	out := s.API.Output()
	if code != 1 || !strings.Contains(out, "migrations failed once MySQL answered") || !strings.Contains(out, "Access denied") ||
		!strings.Contains(out, "shut down") {
		t.Errorf("the API exited with %d, want 1 after a log of the failed migration and its shutdown:\n%s", code, out)
	}
}

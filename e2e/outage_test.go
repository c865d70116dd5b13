package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

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
	redis := testutil.StartRedis(t)
	s := testutil.StartStackOnTopology(t, testutil.MySQLOn(t, db.DSN), redis.Topology(), 2, 1)
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

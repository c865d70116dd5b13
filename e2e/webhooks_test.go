package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// subscribe creates an endpoint for r through the admin route and hands r its secret.
func (c *client) subscribe(admin string, r *testutil.Receiver, events ...string) int64 {
	c.t.Helper()
	body := map[string]any{"url": r.URL}
	if events != nil {
		body["events"] = events
	}
	res := c.must("POST", "/api/v1/admin/webhooks", admin, body)
	var w struct {
		ID     int64  `json:"id"`
		Secret string `json:"secret"`
	}
	res.decode(c.t, &w)
	if res.Status != http.StatusCreated || w.Secret == "" {
		c.t.Fatalf("subscribe: %d %s", res.Status, res.Body)
	}
	r.SetSecret(c.t, w.Secret)
	return w.ID
}

// eventsBySubject returns, per order or group, the types of the events r accepted, in
// the order each first arrived, and how many arrived again (at least once allows
// that). An event that arrives again with other bytes is an error.
func eventsBySubject(t *testing.T, r *testutil.Receiver) (map[string][]string, int) {
	t.Helper()
	if bad := r.Invalid(); len(bad) > 0 {
		t.Errorf("%d deliveries whose signature did not verify, the first: %q", len(bad), bad[0])
	}
	out := map[string][]string{}
	bodies := map[string][]byte{}
	again := 0
	for _, d := range r.Accepted() {
		if b, ok := bodies[d.ID]; ok {
			again++
			if !bytes.Equal(b, d.Body) {
				t.Errorf("event %s arrived again with another body:\n%s\n%s", d.ID, b, d.Body)
			}
			continue
		}
		bodies[d.ID] = d.Body
		out[d.Subject] = append(out[d.Subject], d.Type)
		testutil.CheckTimes(t, d.Type+" event", d.Body)
		var ev struct {
			Data struct {
				Order *struct{ Status string } `json:"order"`
			} `json:"data"`
		}
		if err := json.Unmarshal(d.Body, &ev); err != nil {
			t.Errorf("event %s: %v", d.ID, err)
		} else if o := ev.Data.Order; o != nil && "order."+o.Status != d.Type {
			t.Errorf("event %s is %s but carries an order %s", d.ID, d.Type, o.Status)
		}
	}
	return out, again
}

// webhookState is an endpoint as the admin routes show it, with its deliveries.
func (c *client) webhookState(admin string, id int64) (disabled bool, byStatus map[string]int) {
	c.t.Helper()
	var list struct {
		Webhooks []struct {
			ID         int64      `json:"id"`
			DisabledAt *time.Time `json:"disabled_at"`
		} `json:"webhooks"`
	}
	c.must("GET", "/api/v1/admin/webhooks", admin, nil).decode(c.t, &list)
	for _, w := range list.Webhooks {
		if w.ID == id {
			disabled = w.DisabledAt != nil
		}
	}
	var ds struct {
		Deliveries []struct{ Status string } `json:"deliveries"`
	}
	c.must("GET", fmt.Sprintf("/api/v1/admin/webhooks/%d/deliveries", id), admin, nil).decode(c.t, &ds)
	byStatus = map[string]int{}
	for _, d := range ds.Deliveries {
		byStatus[d.Status]++
	}
	return disabled, byStatus
}

// waitUntil polls cond until it holds or within passes.
func waitUntil(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", within, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Events from real processes to two endpoints: one refuses the first try of every
// event, then answers 410 and is disabled; the other gets every change of every order
// and group (created, paid by the shop's service token, cancelled by the buyer, a
// group completed, a group failed with its order cancelled, a paid order refunded),
// each order's in order, each signed. A private target is refused while the setting is off.
func TestWebhooksFromRealProcesses(t *testing.T) {
	strict := testutil.StartStack(t)
	strictClient := newClient(t, strict.URL)
	r := strictClient.must("POST", "/api/v1/admin/webhooks", testutil.Token(t, 1, true), map[string]string{"url": "http://127.0.0.1:9/hook"})
	if r.Status != http.StatusBadRequest || r.errorCode() != "invalid_request" || !strings.Contains(string(r.Body), "private network") {
		t.Errorf("a private target outside dev mode: %d %s, want 400 invalid_request", r.Status, r.Body)
	}

	s := testutil.StartStack(t, "SECKILL_WEBHOOK_ALLOW_PRIVATE=true")
	c := newClient(t, s.URL)
	admin, shop := testutil.Token(t, 1, true), testutil.ServiceToken(t, 900)
	flaky, healthy := testutil.StartReceiver(t), testutil.StartReceiver(t)
	var accepted atomic.Int64
	flaky.Answer = func(_ testutil.Received, n int) int { // deliveries of several orders come at once
		for {
			switch a := accepted.Load(); {
			case a >= 3:
				return http.StatusGone
			case n == 1:
				return http.StatusServiceUnavailable
			case accepted.CompareAndSwap(a, a+1):
				return http.StatusOK
			}
		}
	}
	flakyID, healthyID := c.subscribe(admin, flaky), c.subscribe(admin, healthy)

	a := c.createSale(admin, 20, 1)
	ids := c.buyEach(admin, a.ID, 100, 6)
	want := map[string][]string{}
	for i, id := range ids {
		want[id] = []string{"order.created"}
		switch i % 3 {
		case 0:
			if res := c.must("POST", "/api/v1/orders/"+id+"/pay", shop, nil); res.Status != http.StatusOK {
				t.Fatalf("pay as the shop: %d %s", res.Status, res.Body)
			}
			want[id] = append(want[id], "order.paid")
			if i == 3 { // and refunds it
				if res := c.must("POST", "/api/v1/orders/"+id+"/refund", shop, map[string]bool{"restock": false}); res.Status != http.StatusOK {
					t.Fatalf("refund as the shop: %d %s", res.Status, res.Body)
				}
				want[id] = append(want[id], "order.refunded")
			}
		case 1:
			if res := c.must("POST", "/api/v1/orders/"+id+"/cancel", testutil.Token(t, int64(100+i), false), nil); res.Status != http.StatusOK {
				t.Fatalf("cancel: %d %s", res.Status, res.Body)
			}
			want[id] = append(want[id], "order.cancelled")
		}
	}

	// A group that fills, and one whose window passes unfilled.
	g := createGroupSale(t, singleRedis(t, s), c, admin, 10, 1, 2, 1, 3*time.Second)
	seat := func(path string, user int64) seatAnswer {
		res := c.must("POST", path, testutil.Token(t, user, false), map[string]int{"quantity": 1})
		if res.Status != http.StatusAccepted {
			t.Fatalf("%s: %d %s", path, res.Status, res.Body)
		}
		var sa seatAnswer
		res.decode(t, &sa)
		return sa
	}
	opened := seat(fmt.Sprintf("/api/v1/activities/%d/groups", g.ID), 200)
	joined := seat("/api/v1/groups/"+opened.Group.ID+"/join", 201)
	lonely := seat(fmt.Sprintf("/api/v1/activities/%d/groups", g.ID), 202)
	want[opened.Order.ID] = []string{"order.created"}
	want[joined.Order.ID] = []string{"order.created"}
	want[opened.Group.ID] = []string{"group.completed"}
	want[lonely.Order.ID] = []string{"order.cancelled"}
	want[lonely.Group.ID] = []string{"group.failed"}

	total := 0
	for _, types := range want {
		total += len(types)
	}
	waitUntil(t, "every event at the healthy endpoint", time.Minute, func() bool {
		got, _ := eventsBySubject(t, healthy)
		n := 0
		for _, types := range got {
			n += len(types)
		}
		return n >= total
	})
	got, again := eventsBySubject(t, healthy)
	for subject, types := range want {
		if strings.Join(got[subject], " ") != strings.Join(types, " ") {
			t.Errorf("%s: got %v, want %v", subject, got[subject], types)
		}
	}
	if len(got) != len(want) || again != 0 {
		t.Errorf("the healthy endpoint got events of %d subjects (want %d) and %d again", len(got), len(want), again)
	}

	// The flaky endpoint: each of its first three events delivered on the retry, with
	// the same webhook-id, then a 410 disables it.
	waitUntil(t, "the flaky endpoint disabled", time.Minute, func() bool {
		disabled, _ := c.webhookState(admin, flakyID)
		return disabled
	})
	tries := map[string]int{}
	for _, d := range flaky.Deliveries() {
		tries[d.ID]++
	}
	twice := 0
	for _, n := range tries {
		if n == 2 {
			twice++
		}
	}
	if len(flaky.Accepted()) != 3 || twice < 3 {
		t.Errorf("flaky endpoint: %d accepted, %d events tried twice (%v); want 3 accepted on their retry", len(flaky.Accepted()), twice, tries)
	}
	before := len(flaky.Deliveries())
	_, byStatus := c.webhookState(admin, flakyID)
	if byStatus["delivered"] != 3 || byStatus["pending"] != 0 || byStatus["failed"] == 0 {
		t.Errorf("flaky endpoint's deliveries by status: %v; want 3 delivered, the rest failed", byStatus)
	}
	if disabled, byStatus := c.webhookState(admin, healthyID); disabled || byStatus["delivered"] != total {
		t.Errorf("healthy endpoint: disabled %v, deliveries %v; want %d delivered", disabled, byStatus, total)
	}
	// A change after the 410 goes to the healthy endpoint only.
	if res := c.must("POST", "/api/v1/orders/"+ids[2]+"/cancel", shop, nil); res.Status != http.StatusOK {
		t.Fatalf("cancel as the shop: %d %s", res.Status, res.Body)
	}
	waitUntil(t, "the shop's cancel delivered", 30*time.Second, func() bool { return len(healthy.Accepted()) == total+1 })
	// A quiet half second in which the disabled endpoint may get nothing more: the behaviour
	// under test.
	time.Sleep(500 * time.Millisecond)
	if n := len(flaky.Deliveries()); n != before {
		t.Errorf("the disabled endpoint got %d more deliveries", n-before)
	}
}

// 1,000 orders, half paid by the shop and a quarter cancelled by their buyers, while
// the worker is SIGKILLed with deliveries in flight and started again: every order's
// events reach the endpoint, complete and in order (some again: at least once).
func TestWebhooksSurviveWorkerKill(t *testing.T) {
	s := testutil.StartStack(t, "SECKILL_WEBHOOK_ALLOW_PRIVATE=true")
	c := newClient(t, s.URL)
	admin, shop := testutil.Token(t, 1, true), testutil.ServiceToken(t, 900)
	r := testutil.StartReceiver(t)
	var inflight atomic.Int64
	// Once hold is set, the endpoint answers nothing until the worker is dead (released),
	// so the deliveries in flight at the kill are certain not to have been recorded.
	var hold atomic.Bool
	released := make(chan struct{})
	r.Answer = func(testutil.Received, int) int {
		inflight.Add(1)
		defer inflight.Add(-1)
		// The endpoint takes 5 ms per delivery, so deliveries overlap: the load under test.
		time.Sleep(5 * time.Millisecond)
		if hold.Load() {
			<-released
		}
		return http.StatusOK
	}
	c.subscribe(admin, r)

	const n = 1000
	a := c.createSale(admin, n, 1)
	ids := make([]string, n)
	var wg sync.WaitGroup
	g := testutil.NewGoroutines(t)
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := c.on(g)
			for i := range work {
				ids[i] = c.buyOne(a.ID, int64(10000+i))
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	g.Report()
	if t.Failed() {
		t.FailNow()
	}
	c.waitDrained(admin, a.ID, 2*time.Minute)

	// Confirm and cancel while events are being delivered; kill the worker as soon as
	// some deliveries are in flight at the endpoint.
	var killedAt int
	var held int64
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		defer close(released)
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if len(r.Deliveries()) > 200 {
				hold.Store(true)
			}
			if n := inflight.Load(); n > 0 && hold.Load() {
				killedAt, held = len(r.Deliveries()), n
				s.Worker.Signal(syscall.SIGKILL)
				return
			}
		}
	}()
	want := make(map[string][]string, n)
	work = make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := c.on(g)
			for i := range work {
				path, token := "/api/v1/orders/"+ids[i]+"/pay", shop
				if i%4 == 1 {
					path, token = "/api/v1/orders/"+ids[i]+"/cancel", testutil.Token(t, int64(10000+i), false)
				}
				if res := c.must("POST", path, token, nil); res.Status != http.StatusOK {
					t.Errorf("%s: %d %s", path, res.Status, res.Body)
				}
			}
		}()
	}
	for i, id := range ids {
		want[id] = []string{"order.created"}
		switch i % 4 {
		case 0, 2:
			want[id] = append(want[id], "order.paid")
		case 1:
			want[id] = append(want[id], "order.cancelled")
		default:
			continue
		}
		work <- i
	}
	close(work)
	wg.Wait()
	g.Report()
	<-killed
	if held == 0 {
		t.Fatal("no delivery was in flight at the endpoint within 2 minutes: the worker was not killed")
	}
	t.Logf("worker SIGKILLed with %d deliveries made, %d in flight at the endpoint", killedAt, held)
	// The worker stays dead a second: the scenario under test.
	time.Sleep(time.Second)
	s.Worker.Start()

	total := 0
	for _, types := range want {
		total += len(types)
	}
	var got map[string][]string
	var again int
	// Every event delivered, and one held at the kill again: the held deliveries were
	// answered once released, so they count among the first; their next try comes once
	// their lease (the delivery timeout + 15 s) has run out, possibly after all the rest.
	waitUntil(t, "every event delivered, and a delivery held at the kill again", 3*time.Minute, func() bool {
		got, again = eventsBySubject(t, r)
		m := 0
		for _, types := range got {
			m += len(types)
		}
		return m >= total && again > 0
	})
	wrong := 0
	for id, types := range want {
		if strings.Join(got[id], " ") != strings.Join(types, " ") {
			if wrong++; wrong <= 5 {
				t.Errorf("order %s: got %v, want %v", id, got[id], types)
			}
		}
	}
	if wrong > 0 || len(got) != n {
		t.Errorf("%d of %d orders with wrong events; events of %d subjects", wrong, n, len(got))
	}
	t.Logf("%d events of %d orders delivered, %d of them again after the kill (at least once)", total, n, again)
	// A delivery the endpoint was still answering when the worker died (held until then)
	// was never recorded: its lease ran out and it came again.
	if killedAt >= total || again == 0 {
		t.Errorf("killed after %d of %d deliveries, %d came again: the kill did not catch one in flight", killedAt, total, again)
	}
}

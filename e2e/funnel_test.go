package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"seckill/internal/testutil"
)

// funnelBody is the funnel as the API answers it.
type funnelBody struct {
	ActivityID int64     `json:"activity_id"`
	AsOf       time.Time `json:"as_of"`
	Line       *struct {
		Joined            int64 `json:"joined"`
		JoinedBeforeStart int64 `json:"joined_before_start"`
		Admitted          int64 `json:"admitted"`
		PassesExpired     int64 `json:"passes_expired"`
		WaitSeconds       *struct {
			P50, P90, P99, Max float64
		} `json:"wait_seconds"`
		WaitDistribution []struct {
			Buyers int64 `json:"buyers"`
		} `json:"wait_distribution"`
	} `json:"line"`
	Purchases struct {
		Accepted int64            `json:"accepted"`
		Refused  map[string]int64 `json:"refused"`
	} `json:"purchases"`
	Orders struct {
		Created, Paid, Cancelled, Expired, Failed, Refunded, Offered int64
	} `json:"orders"`
	Units struct {
		Sold       int64 `json:"sold"`
		Returned   int64 `json:"returned"`
		ToWaitlist int64 `json:"to_waitlist"`
	} `json:"units"`
	FirstPurchaseAt *time.Time `json:"first_purchase_at"`
	SoldOutAt       *time.Time `json:"sold_out_at"`
	SellOutSeconds  *float64   `json:"sell_out_seconds"`
	PaySeconds      *struct {
		P50, P90, P99 float64
	} `json:"pay_seconds"`
}

func (c *client) funnel(token string, id int64) funnelBody {
	c.t.Helper()
	r := c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/funnel", id), token, nil)
	if r.Status != http.StatusOK {
		c.t.Fatalf("funnel: %d %s", r.Status, r.Body)
	}
	var f funnelBody
	r.decode(c.t, &f)
	return f
}

// TestFunnelOfAScriptedDrop runs a drop whose outcome the test knows, over two APIs and
// a worker, and holds the funnel to it: every figure exact, the refusals (counted by
// each API, flushed every 2 s) within 5 s; the waits within what the test could see of
// each buyer's join and admission. Then the sale ends, is archived, and MySQL answers
// the same funnel, and the line's public status as it was; a purchase refused after the
// archive is counted all the same; the CSV holds the same figures.
func TestFunnelOfAScriptedDrop(t *testing.T) {
	s := testutil.StartStackOnRedis(t, testutil.MySQL(t), testutil.StartRedis(t, "--appendonly", "yes").Topology(), 2, 1,
		"SECKILL_SALE_RETENTION=1s")
	apis := []*client{newClient(t, s.URLs[0]), newClient(t, s.URLs[1])}
	c := apis[0]
	admin, shop := testutil.Token(t, 1, true), testutil.ServiceToken(t, 900)
	const stock = 6
	a := c.createRoomSale(admin, stock, 100, time.Now().Add(3*time.Second), map[string]any{
		"pass_ttl_seconds": 30, "pay_window_seconds": 10, "prequeue_seconds": 600})
	start := a.StartsAt
	line := fmt.Sprintf("/api/v1/activities/%d/line", a.ID)
	buy := fmt.Sprintf("/api/v1/activities/%d/orders", a.ID)

	// 8 buyers join before the start, 2 after.
	joinedBy := map[int64][2]time.Time{} // buyer -> when its join was sent and answered
	join := func(u int64) {
		sent := time.Now()
		if r := apis[u%2].must("POST", line, testutil.Token(t, u, false), map[string]any{}); r.Status != http.StatusCreated {
			t.Fatalf("buyer %d joins: %d %s", u, r.Status, r.Body)
		}
		joinedBy[u] = [2]time.Time{sent, time.Now()}
	}
	for u := int64(1); u <= 8; u++ {
		join(u)
	}
	if time.Now().After(start) {
		t.Fatal("the early joins took until after the start; give them more time")
	}
	time.Sleep(time.Until(start) + 50*time.Millisecond)
	join(9)
	join(10)
	tickets := map[int64]ticket{}
	waitUntil(t, "every buyer admitted", 30*time.Second, func() bool {
		for u := int64(1); u <= 10; u++ {
			if tk := apis[u%2].ticket(a.ID, u); tk.Status == "admitted" {
				tickets[u] = tk
			}
		}
		return len(tickets) == 10
	})

	// Purchases, each answer tallied as the funnel is to count it.
	accepted, refused := 0, map[string]int64{}
	orders := map[int64]string{}
	purchase := func(u int64, pass string, key string) response {
		header := []string{"X-Sale-Pass", pass}
		if key != "" {
			header = append(header, "Idempotency-Key", key)
		}
		for {
			r := apis[u%2].must("POST", buy, testutil.Token(t, u, false), map[string]int{"quantity": 1}, header...)
			switch {
			case r.Status == http.StatusAccepted:
				accepted++
				orders[u] = orderOf(t, r)
			case r.Status >= 400 && r.Status < 500:
				refused[r.errorCode()]++
			}
			if r.errorCode() != "busy" { // the buyer's previous purchase still holds its lock: again
				return r
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if r := purchase(11, "", ""); r.errorCode() != "not_admitted" { // no ticket, no pass
		t.Errorf("a purchase without a pass: %d %s", r.Status, r.Body)
	}
	if r := purchase(7, "forged", ""); r.errorCode() != "not_admitted" {
		t.Errorf("a purchase with a forged pass: %d %s", r.Status, r.Body)
	}
	purchase(1, tickets[1].Pass, "")
	purchase(2, tickets[2].Pass, "key-2")
	if r := purchase(2, tickets[2].Pass, "key-2"); r.Status != http.StatusOK { // a replay: counted once
		t.Errorf("a replay: %d %s", r.Status, r.Body)
	}
	if r := purchase(1, tickets[1].Pass, ""); r.errorCode() != "limit_exceeded" {
		t.Errorf("past the limit: %d %s", r.Status, r.Body)
	}
	firstSent := time.Now()
	for u := int64(3); u <= 6; u++ {
		purchase(u, tickets[u].Pass, "")
	}
	soldOutBy := time.Now()
	for _, u := range []int64{7, 8} {
		if r := purchase(u, tickets[u].Pass, ""); r.errorCode() != "sold_out" {
			t.Errorf("buyer %d after the sell-out: %d %s", u, r.Status, r.Body)
		}
	}
	if accepted != stock || len(orders) != stock {
		t.Fatalf("%d purchases accepted (%v), want %d", accepted, orders, stock)
	}

	// Buyer 9 waits for a unit; the shop confirms 1 and 2, refunds 2 with restock (its
	// unit goes to buyer 9, whose order the shop confirms); 3 cancels (the unit goes back
	// on sale); 4, 5 and 6 let their pay windows expire.
	waitlist := fmt.Sprintf("/api/v1/activities/%d/waitlist", a.ID)
	if r := c.must("POST", waitlist, testutil.Token(t, 9, false), map[string]int{"quantity": 1}); r.Status != http.StatusCreated {
		t.Fatalf("buyer 9 joins the waitlist: %d %s", r.Status, r.Body)
	}
	waitStatus := func(u int64, want string) {
		waitUntil(t, fmt.Sprintf("buyer %d's order %s", u, want), 30*time.Second, func() bool {
			var o order
			c.must("GET", "/api/v1/orders/"+orders[u], admin, nil).decode(t, &o)
			return o.Status == want
		})
	}
	do := func(action string, u int64, token string, body any) {
		waitStatus(u, "created")
		if r := c.must("POST", "/api/v1/orders/"+orders[u]+action, token, body); r.Status != http.StatusOK {
			t.Fatalf("%s buyer %d's order: %d %s", action, u, r.Status, r.Body)
		}
	}
	do("/pay", 1, shop, nil)
	do("/pay", 2, shop, nil)
	if r := c.must("POST", "/api/v1/orders/"+orders[2]+"/refund", shop, map[string]bool{"restock": true}); r.Status != http.StatusOK {
		t.Fatalf("refund: %d %s", r.Status, r.Body)
	}
	waitUntil(t, "buyer 9 offered the refunded unit", 30*time.Second, func() bool {
		var e waitlistEntry
		c.must("GET", waitlist, testutil.Token(t, 9, false), nil).decode(t, &e)
		orders[9] = e.OrderID
		return e.Status == "offered"
	})
	do("/pay", 9, shop, nil)
	do("/cancel", 3, testutil.Token(t, 3, false), nil)
	for u := int64(4); u <= 6; u++ {
		waitStatus(u, "cancelled") // its pay window (10 s) ran out
	}

	// Every pass expires 30 s after its admission; buyers 1 and 9 hold units then, so
	// theirs count as used.
	var live funnelBody
	waitUntil(t, "the passes expired", 60*time.Second, func() bool {
		live = apis[1].funnel(admin, a.ID)
		return live.Line != nil && live.Line.PassesExpired == 8
	})
	waitUntil(t, "the refusals flushed (within 5 s)", 5*time.Second, func() bool {
		live = apis[1].funnel(shop, a.ID) // the shop's back end reads it too
		return cmp.Equal(live.Purchases.Refused, refused)
	})
	if diff := cmp.Diff(refused, live.Purchases.Refused); diff != "" {
		t.Errorf("refusals (-tallied +funnel):\n%s", diff)
	}
	body, _ := json.Marshal(live)
	t.Logf("the live funnel: %s", body)
	want := live
	want.Purchases.Accepted = stock
	want.Orders.Created, want.Orders.Paid, want.Orders.Cancelled, want.Orders.Expired = 7, 3, 4, 3
	want.Orders.Failed, want.Orders.Refunded, want.Orders.Offered = 0, 1, 1
	want.Units.Sold, want.Units.Returned, want.Units.ToWaitlist = 2, 5, 1
	want.Line.Joined, want.Line.JoinedBeforeStart, want.Line.Admitted = 10, 8, 10
	if diff := cmp.Diff(want, live); diff != "" {
		t.Errorf("funnel (-want +got):\n%s", diff)
	}
	within := func(what string, got *time.Time, from, to time.Time) {
		if got == nil || got.Before(from.Add(-time.Millisecond)) || got.After(to) {
			t.Errorf("%s %v, want within [%v, %v]", what, got, from, to)
		}
	}
	within("first_purchase_at", live.FirstPurchaseAt, start, firstSent)
	within("sold_out_at", live.SoldOutAt, firstSent, soldOutBy)
	if live.SellOutSeconds == nil || math.Abs(*live.SellOutSeconds-live.SoldOutAt.Sub(start).Seconds()) > 0.001 {
		t.Errorf("sell_out_seconds %v, want sold_out_at - starts_at", live.SellOutSeconds)
	}
	if p := live.PaySeconds; p == nil || p.P50 < 0 || p.P99 > time.Since(firstSent).Seconds() || p.P50 > p.P90 || p.P90 > p.P99 {
		t.Errorf("pay_seconds %+v, want 0 <= p50 <= p90 <= p99 <= %v", p, time.Since(firstSent))
	}

	// The waits: from the start (an early joiner) or the join, to the admission. The
	// test knows each admission to the millisecond and a late join between its request
	// and its answer: every percentile lies between those of the shortest and the
	// longest waits that allows.
	var low, high []float64
	for u, tk := range tickets {
		from := [2]time.Time{start, start}
		if j := joinedBy[u]; j[0].After(start) {
			from = j
		}
		low = append(low, tk.AdmittedAt.Sub(from[1]).Seconds())
		high = append(high, tk.AdmittedAt.Sub(from[0]).Seconds())
	}
	slices.Sort(low)
	slices.Sort(high)
	rank := func(v []float64, p float64) float64 { return v[int(math.Ceil(p*float64(len(v))))-1] }
	w := live.Line.WaitSeconds
	for _, pc := range []struct {
		name string
		got  float64
		p    float64
	}{{"p50", w.P50, 0.5}, {"p90", w.P90, 0.9}, {"p99", w.P99, 0.99}, {"max", w.Max, 1}} {
		if lo, hi := rank(low, pc.p), rank(high, pc.p); pc.got < lo-0.001 || pc.got > hi+0.001 {
			t.Errorf("wait %s %.3f s, want within [%.3f, %.3f]", pc.name, pc.got, lo, hi)
		}
	}
	var buyers int64
	for _, r := range live.Line.WaitDistribution {
		buyers += r.Buyers
	}
	if buyers != 10 {
		t.Errorf("the wait distribution counts %d buyers, want the 10 admitted", buyers)
	}
	if r := c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/funnel", a.ID), testutil.Token(t, 5, false), nil); r.Status != http.StatusForbidden {
		t.Errorf("a buyer reads the funnel: %d, want 403", r.Status)
	}

	// The sale ends and is archived: MySQL answers the same funnel, and the line's status.
	var status lineStatus
	c.must("GET", fmt.Sprintf("/api/v1/activities/%d/line/status", a.ID), "", nil).decode(t, &status)
	end := time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)
	if r := c.must("PATCH", fmt.Sprintf("/api/v1/admin/activities/%d", a.ID), admin, map[string]any{"ends_at": end}); r.Status != http.StatusOK {
		t.Fatalf("end the sale: %d %s", r.Status, r.Body)
	}
	d := &drop{c: c, admin: admin, id: a.ID}
	d.waitArchived(t, 60*time.Second)
	archived := apis[1].funnel(admin, a.ID)
	live.AsOf, archived.AsOf = time.Time{}, time.Time{}
	if diff := cmp.Diff(live, archived); diff != "" {
		t.Errorf("the archived sale's funnel differs from the live one (-live +archived):\n%s", diff)
	}
	var after lineStatus
	var view struct {
		StockAvailable int64 `json:"stock_available"`
	}
	c.must("GET", fmt.Sprintf("/api/v1/activities/%d/line/status", a.ID), "", nil).decode(t, &after)
	c.must("GET", fmt.Sprintf("/api/v1/activities/%d", a.ID), "", nil).decode(t, &view)
	if after.State != "ended" || after.AdmittedThrough < status.AdmittedThrough || after.AdmittedThrough == 0 ||
		after.Joined != archived.Line.Joined || after.Admitted != archived.Line.Admitted || after.UnitsLeft != view.StockAvailable {
		t.Errorf("the archived line's status %+v (before the end %+v); want ended, its admissions and joins as kept "+
			"(%d joined, %d admitted), %d units left", after, status, archived.Line.Joined, archived.Line.Admitted, view.StockAvailable)
	}
	if r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, 5, false),
		map[string]any{"quantity": 1}); r.errorCode() != "sale_ended" {
		t.Fatalf("a purchase after the archive: %d %s", r.Status, r.Body)
	}
	for deadline := time.Now().Add(6 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got := apis[0].funnel(admin, a.ID).Purchases.Refused["sale_ended"]
		if got == archived.Purchases.Refused["sale_ended"]+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("refused sale_ended %d within 6 s of a refusal after the archive, want %d", got,
				archived.Purchases.Refused["sale_ended"]+1)
		}
	}

	r := c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/funnel?format=csv", a.ID), admin, nil)
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("csv: %d %s %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	lines := strings.Split(strings.TrimSpace(string(r.Body)), "\n")
	for _, want := range []string{"figure,value", fmt.Sprintf("purchases.refused.sold_out,%d", refused["sold_out"]),
		"purchases.accepted,6", "orders.expired,3", "units.to_waitlist,1", "line.passes_expired,8"} {
		if !slices.Contains(lines, want) {
			t.Errorf("the CSV lacks %q:\n%s", want, r.Body)
		}
	}
	if r := c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/funnel?format=xml", a.ID), admin, nil); r.Status != http.StatusBadRequest ||
		r.errorCode() != "invalid_request" {
		t.Errorf("format=xml: %d %s, want 400 invalid_request", r.Status, r.Body)
	}
	if r := c.must("GET", "/api/v1/admin/activities/999999/funnel", admin, nil); r.Status != http.StatusNotFound {
		t.Errorf("the funnel of no sale: %d, want 404", r.Status)
	}
}

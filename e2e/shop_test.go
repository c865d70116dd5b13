package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// createSaleWith creates an active sale with the given fields added to a plain one.
func (c *client) createSaleWith(admin string, stock int64, limit int, extra map[string]any) activity {
	c.t.Helper()
	now := time.Now().UTC()
	body := map[string]any{"name": "e2e sale", "product_name": "widget", "price_cents": 1500, "stock": stock,
		"per_user_limit": limit, "starts_at": now.Add(-time.Minute).Format(time.RFC3339),
		"ends_at": now.Add(time.Hour).Format(time.RFC3339)}
	for k, v := range extra {
		body[k] = v
	}
	r := c.must("POST", "/api/v1/admin/activities", admin, body)
	if r.Status != http.StatusCreated {
		c.t.Fatalf("create sale: %d %s", r.Status, r.Body)
	}
	var a activity
	r.decode(c.t, &a)
	return a
}

// A shop's back end confirms 50 payments around the instant each order's pay window
// ends, while the worker's expiry job runs: each order ends as the confirmation's answer
// said (200: paid; 409 order_expired: cancelled, its unit back in stock), and the
// ledger balances.
func TestConfirmationsRaceThePayWindow(t *testing.T) {
	s := testutil.StartStack(t)
	c := newClient(t, s.URL)
	admin, shop := testutil.Token(t, 1, true), testutil.ServiceToken(t, 900)
	a := c.createSaleWith(admin, 50, 1, map[string]any{"pay_window_seconds": 10})

	const n = 50
	ids := make([]string, n)
	for i := range n {
		r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, int64(2000+i), false), map[string]int{"quantity": 1})
		if r.Status != http.StatusAccepted {
			t.Fatalf("buy: %d %s", r.Status, r.Body)
		}
		var o order
		r.decode(t, &o)
		ids[i] = o.ID
	}
	c.waitDrained(admin, a.ID, time.Minute)
	expires := make([]time.Time, n)
	for i, id := range ids {
		var o struct {
			Status    string    `json:"status"`
			ExpiresAt time.Time `json:"expires_at"`
		}
		c.must("GET", "/api/v1/orders/"+id, admin, nil).decode(t, &o)
		if o.Status != "created" {
			t.Fatalf("order %s is %s, want created", id, o.Status)
		}
		expires[i] = o.ExpiresAt
	}

	// Confirmation i comes (i-25)*10 ms after its order's window ends: from 250 ms
	// before to 240 ms after.
	answers := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(expires[i].Add(time.Duration(i-25) * 10 * time.Millisecond)))
			answers[i] = c.must("POST", "/api/v1/orders/"+ids[i]+"/pay", shop, nil)
		}()
	}
	wg.Wait()

	// Each answer stands once given: the order is paid or cancelled by then.
	paid, expired := 0, 0
	for i, id := range ids {
		var o order
		c.must("GET", "/api/v1/orders/"+id, admin, nil).decode(t, &o)
		switch ans := answers[i]; {
		case ans.Status == http.StatusOK && o.Status == "paid":
			paid++
		case ans.Status == http.StatusConflict && ans.errorCode() == "order_expired" && o.Status == "cancelled":
			expired++
		default:
			t.Errorf("order %s: the confirmation got %d %s and the order is %s", id, ans.Status, ans.Body, o.Status)
		}
	}
	t.Logf("%d confirmations won (paid), %d lost to the end of the window (order_expired, cancelled)", paid, expired)
	if paid == 0 || expired == 0 {
		t.Errorf("paid %d, expired %d: the confirmations did not straddle the windows' ends", paid, expired)
	}
	// Every cancelled unit is back in stock, once.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := c.stats(admin, a.ID)
		if st.StockAvailable == int64(expired) && st.Orders.Paid == int64(paid) && st.Orders.Cancelled == int64(expired) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: want %d units available, %d paid, %d cancelled", st, expired, paid, expired)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/ledger", a.ID), admin, nil)
	var l struct {
		Balanced bool `json:"balanced"`
	}
	r.decode(t, &l)
	if r.Status != http.StatusOK || !l.Balanced {
		t.Errorf("ledger: %d %s", r.Status, r.Body)
	}
}

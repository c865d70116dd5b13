package handler_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/internal/handler"
	"seckill/internal/sale"
	"seckill/internal/testutil"
)

// buyCreated buys qty units of a sale as the buyer of token and waits until MySQL has
// the order; it returns the order's id.
func (s *stack) buyCreated(act int64, token string, qty int) string {
	s.t.Helper()
	a := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", act), token: token, body: fmt.Sprintf(`{"quantity":%d}`, qty)})
	if a.status != http.StatusAccepted {
		s.t.Fatalf("buy: %d %s", a.status, a.body)
	}
	var o struct{ ID string }
	if err := json.Unmarshal([]byte(a.body), &o); err != nil {
		s.t.Fatal(err)
	}
	s.waitCreated(o.ID, token)
	return o.ID
}

// With SECKILL_BUYER_PAYS (BuyerPays) a buyer marks their own order paid, recorded as
// paid by the buyer, and another buyer's order stays out of reach; without it the same
// call is 403 payment_by_shop and the order is unchanged.
func TestBuyerPays(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	act := s.sale(10, 2, now.Add(-time.Minute), now.Add(time.Hour))
	buyer, other := testutil.Token(t, 42, false), testutil.Token(t, 43, false)
	id := s.buyCreated(act, buyer, 1)
	before := s.do(call{method: "GET", path: "/api/v1/orders/" + id, token: buyer})

	wantError(t, s.do(call{method: "POST", path: "/api/v1/orders/" + id + "/pay", token: buyer}), http.StatusForbidden, "payment_by_shop")
	if after := s.do(call{method: "GET", path: "/api/v1/orders/" + id, token: buyer}); after.body != before.body {
		t.Errorf("the order after the refused payment: %s, want it unchanged: %s", after.body, before.body)
	}

	s.svc.BuyerPays = true
	wantError(t, s.do(call{method: "POST", path: "/api/v1/orders/" + id + "/pay", token: other}), http.StatusNotFound, "not_found")
	paid := s.do(call{method: "POST", path: "/api/v1/orders/" + id + "/pay", token: buyer})
	if paid.status != http.StatusOK || !strings.Contains(paid.body, `"status":"paid"`) || !strings.Contains(paid.body, `"paid_by":"buyer"`) {
		t.Errorf("the buyer pays: %d %s, want 200 paid by the buyer", paid.status, paid.body)
	}
}

// A shop's checkout: a created order carries its checkout URL, filled in with the
// order's id and sale; a paid one does not.
func TestCheckoutURL(t *testing.T) {
	s := newStack(t, handler.Options{})
	s.svc.Checkout = sale.Checkout("https://shop.example/checkout/{activity_id}?order={order_id}")
	now := time.Now()
	act := s.sale(10, 2, now.Add(-time.Minute), now.Add(time.Hour))
	buyer, admin := testutil.Token(t, 42, false), testutil.Token(t, 1, true)
	id := s.buyCreated(act, buyer, 1)
	want := fmt.Sprintf(`"checkout_url":"https://shop.example/checkout/%d?order=%s"`, act, id)
	for _, path := range []string{"/api/v1/orders/" + id, "/api/v1/orders"} {
		if a := s.do(call{method: "GET", path: path, token: buyer}); a.status != http.StatusOK || !strings.Contains(a.body, want) {
			t.Errorf("GET %s: %d %s, want %s", path, a.status, a.body, want)
		}
	}
	if a := s.do(call{method: "POST", path: "/api/v1/orders/" + id + "/pay", token: admin}); a.status != http.StatusOK || strings.Contains(a.body, "checkout_url") ||
		!strings.Contains(a.body, `"paid_by":"admin"`) {
		t.Errorf("paid by an admin: %d %s, want no checkout_url and paid_by admin", a.status, a.body)
	}
}

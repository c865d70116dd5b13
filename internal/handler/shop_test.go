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

// A refund through the API: only the shop's back end and admins may, only of a paid
// order; bad input changes nothing; the refunded buyer buys again up to the limit, and
// a refund without restock keeps the units off sale (the stats say where they are).
func TestRefundRoute(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	act := s.sale(4, 2, now.Add(-time.Minute), now.Add(time.Hour))
	buyer, other, admin, shop := testutil.Token(t, 42, false), testutil.Token(t, 43, false), testutil.Token(t, 1, true),
		testutil.ServiceToken(t, 900)
	back, kept := s.buyCreated(act, buyer, 2), s.buyCreated(act, other, 1)
	refund := func(id, token, body string) answer {
		return s.do(call{method: "POST", path: "/api/v1/orders/" + id + "/refund", token: token, body: body})
	}
	wantError(t, refund(back, shop, ""), http.StatusConflict, "order_not_refundable") // created, not paid
	for _, id := range []string{back, kept} {
		if a := s.do(call{method: "POST", path: "/api/v1/orders/" + id + "/pay", token: shop}); a.status != http.StatusOK {
			t.Fatalf("pay: %d %s", a.status, a.body)
		}
	}
	paid := s.do(call{method: "GET", path: "/api/v1/orders/" + back, token: admin})

	for _, tc := range []struct {
		name, token, body string
		status            int
		code, inMsg       string
	}{
		{"a buyer", buyer, "", 403, "forbidden", ""},
		{"restock not a boolean", shop, `{"restock":"no"}`, 400, "invalid_request", "restock"},
		{"restock a number", shop, `{"restock":0}`, 400, "invalid_request", "restock"},
		{"not an object", shop, `[true]`, 400, "invalid_request", "JSON object"},
		{"malformed", shop, `{"restock":`, 400, "invalid_request", "JSON"},
		{"no such order", shop, "", 404, "not_found", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := back
			if tc.code == "not_found" {
				id = "01ARZ3NDEKTSV4RRFFQ69G5FAV" + fmt.Sprint(act)
			}
			a := refund(id, tc.token, tc.body)
			wantError(t, a, tc.status, tc.code)
			if !strings.Contains(a.body, tc.inMsg) {
				t.Errorf("message %s does not name %q", a.body, tc.inMsg)
			}
		})
	}
	if after := s.do(call{method: "GET", path: "/api/v1/orders/" + back, token: admin}); after.body != paid.body {
		t.Errorf("the order after the refused refunds: %s, want it unchanged: %s", after.body, paid.body)
	}

	first := refund(back, shop, "") // no body: restock
	if first.status != http.StatusOK || !strings.Contains(first.body, `"status":"refunded"`) || !strings.Contains(first.body, `"restock":true`) ||
		!strings.Contains(first.body, `"refunded_at":`) {
		t.Fatalf("refund: %d %s, want 200 refunded with restock", first.status, first.body)
	}
	if again := refund(back, admin, `{"restock":false}`); again.status != http.StatusOK || again.body != first.body {
		t.Errorf("the refund again: %d %s, want 200 %s", again.status, again.body, first.body)
	}
	if a := refund(kept, admin, `{"restock":false}`); a.status != http.StatusOK || !strings.Contains(a.body, `"restock":false`) {
		t.Errorf("refund without restock: %d %s", a.status, a.body)
	}
	wantError(t, s.do(call{method: "POST", path: "/api/v1/orders/" + back + "/pay", token: shop}), http.StatusConflict, "order_not_payable")

	// 4 units: 2 back on sale, 1 off sale, 1 left: the refunded buyer buys 2 again.
	var st sale.Stats
	a := s.do(call{method: "GET", path: fmt.Sprintf("/api/v1/admin/activities/%d/stats", act), token: admin})
	if err := json.Unmarshal([]byte(a.body), &st); err != nil || st.StockAvailable != 3 || st.Sold != 0 || st.OffSale != 1 ||
		st.Orders.Refunded != 2 {
		t.Errorf("stats: %d %s; want 3 available, 0 sold, 1 off sale, 2 refunded", a.status, a.body)
	}
	s.buyCreated(act, buyer, 2)
}

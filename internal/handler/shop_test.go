package handler_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
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

// page is a page of a sale's orders as the API answers it.
type page struct {
	Orders []struct {
		ID     string `json:"id"`
		UserID int64  `json:"user_id"`
		Status string `json:"status"`
	} `json:"orders"`
	Next *string `json:"next"`
}

// readPage reads a page of a sale's orders and fails the test unless it is 200.
func (s *stack) readPage(token, query string) page {
	s.t.Helper()
	a := s.do(call{method: "GET", path: "/api/v1/orders?" + query, token: token})
	var p page
	if a.status != http.StatusOK || json.Unmarshal([]byte(a.body), &p) != nil {
		s.t.Fatalf("GET /api/v1/orders?%s: %d %s", query, a.status, a.body)
	}
	return p
}

// The pages of a sale's orders while buyers buy and the shop confirms payments: paged
// from the start, and on from the last next until every order is stored and past the
// horizon, every order of the sale shows exactly once, in id order.
func TestSaleOrdersPagesUnderWrites(t *testing.T) {
	s := newStack(t, handler.Options{})
	s.svc.ListMargin = time.Second // the stack's lock wait is 100 ms, and one clock
	now := time.Now()
	act := s.sale(1000, 1, now.Add(-time.Minute), now.Add(time.Hour))
	admin, shop := testutil.Token(t, 1, true), testutil.ServiceToken(t, 900)
	const buyers, writers = 240, 8
	var wg sync.WaitGroup
	errs := make(chan error, buyers)
	for w := range writers {
		wg.Go(func() {
			for u := int64(w); u < buyers; u += writers {
				a := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", act),
					token: testutil.Token(t, 1000+u, false), body: `{"quantity":1}`})
				if a.status != http.StatusAccepted {
					errs <- fmt.Errorf("buy as %d: %d %s", 1000+u, a.status, a.body)
					continue
				}
				if u%3 == 0 { // the shop confirms some as they come, once stored
					var o struct{ ID string }
					_ = json.Unmarshal([]byte(a.body), &o)
					for range 100 {
						if p := s.do(call{method: "POST", path: "/api/v1/orders/" + o.ID + "/pay", token: shop}); p.status != http.StatusConflict {
							break
						}
						time.Sleep(10 * time.Millisecond)
					}
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	seen := map[string]int{}
	last, after := "", ""
	reads, pages := 0, 0
	writing := true
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		select {
		case <-done:
			writing = false
		default:
		}
		query := fmt.Sprintf("activity_id=%d&limit=7", act)
		if after != "" {
			query += "&after=" + url.QueryEscape(after)
		}
		p := s.readPage(admin, query)
		reads++
		for _, o := range p.Orders {
			seen[o.ID]++
			if o.ID <= last {
				t.Errorf("order %s after %s: not in id order", o.ID, last)
			}
			last = o.ID
		}
		if p.Next != nil {
			after = *p.Next
			pages++
			continue
		}
		if len(p.Orders) != 0 {
			t.Fatalf("a page of %d orders without next", len(p.Orders))
		}
		// The end, for now: once the writers are done, the queue drained and the horizon
		// past the last order, every order has been shown.
		if !writing && len(seen) == buyers {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var stored []string
	all := s.readPage(admin, fmt.Sprintf("activity_id=%d&limit=1000", act))
	for _, o := range all.Orders {
		stored = append(stored, o.ID)
		if seen[o.ID] != 1 {
			t.Errorf("order %s shown %d times while paging", o.ID, seen[o.ID])
		}
	}
	if len(stored) != buyers || len(seen) != buyers {
		t.Errorf("%d orders stored, %d shown while paging; want %d", len(stored), len(seen), buyers)
	}
	t.Logf("%d reads, %d pages of up to 7 while %d orders were bought", reads, pages, buyers)
}

// Bad input to the pages of a sale's orders is 400 naming the parameter; a buyer sees
// only their own orders, the shop every buyer's, of one status when asked; a cursor
// works for its own listing only.
func TestSaleOrdersPages(t *testing.T) {
	s := newStack(t, handler.Options{})
	s.svc.ListMargin = time.Second
	now := time.Now()
	act := s.sale(10, 2, now.Add(-time.Minute), now.Add(time.Hour))
	other := s.sale(10, 2, now.Add(-time.Minute), now.Add(time.Hour))
	buyer, stranger, admin, shop := testutil.Token(t, 42, false), testutil.Token(t, 43, false), testutil.Token(t, 1, true),
		testutil.ServiceToken(t, 900)
	mine := []string{s.buyCreated(act, buyer, 1), s.buyCreated(act, buyer, 1)}
	theirs := s.buyCreated(act, stranger, 1)
	if a := s.do(call{method: "POST", path: "/api/v1/orders/" + mine[1] + "/pay", token: shop}); a.status != http.StatusOK {
		t.Fatalf("pay: %d %s", a.status, a.body)
	}
	q := func(extra string) string { return fmt.Sprintf("activity_id=%d%s", act, extra) }
	var full page
	for deadline := time.Now().Add(10 * time.Second); len(full.Orders) < 3; { // past the horizon
		if time.Now().After(deadline) {
			t.Fatalf("the sale's orders never all listed: %+v", full)
		}
		time.Sleep(100 * time.Millisecond)
		full = s.readPage(shop, q(""))
	}
	first := s.readPage(shop, q("&limit=1"))
	paid := s.readPage(admin, q("&status=paid&limit=1"))
	own := s.readPage(buyer, q("&limit=1"))

	for _, tc := range []struct {
		name, token, query string
		status             int
		code, inMsg        string
	}{
		{"limit 0", shop, q("&limit=0"), 400, "invalid_request", "limit"},
		{"limit 1001", shop, q("&limit=1001"), 400, "invalid_request", "limit"},
		{"limit not a number", shop, q("&limit=ten"), 400, "invalid_request", "limit"},
		{"status queued", shop, q("&status=queued"), 400, "invalid_request", "status"},
		{"status unknown", shop, q("&status=shipped"), 400, "invalid_request", "status"},
		{"activity_id not a number", shop, "activity_id=one", 400, "invalid_request", "activity_id"},
		{"activity_id 0", shop, "activity_id=0", 400, "invalid_request", "activity_id"},
		{"no such sale", shop, "activity_id=999999", 404, "not_found", ""},
		{"a service token without activity_id", shop, "", 400, "invalid_request", "activity_id"},
		{"limit without activity_id", buyer, "limit=5", 400, "invalid_request", "activity_id"},
		{"a cursor made up", shop, q("&after=MDFKRDZZNFpRMkgzTjhWNVhLN005UDBSU1Q0Mg.AAAAAAAAAAAAAAAAAAAAAA"), 400, "invalid_request", "after"},
		{"a cursor of another status", admin, q("&after=" + url.QueryEscape(*paid.Next)), 400, "invalid_request", "after"},
		{"a cursor of another sale", shop, fmt.Sprintf("activity_id=%d&after=%s", other, url.QueryEscape(*first.Next)), 400, "invalid_request", "after"},
		{"a buyer's cursor for another buyer", stranger, q("&after=" + url.QueryEscape(*own.Next)), 400, "invalid_request", "after"},
		{"a buyer's cursor for the shop", shop, q("&after=" + url.QueryEscape(*own.Next)), 400, "invalid_request", "after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := s.do(call{method: "GET", path: "/api/v1/orders?" + tc.query, token: tc.token})
			wantError(t, a, tc.status, tc.code)
			if !strings.Contains(a.body, tc.inMsg) {
				t.Errorf("message %s does not name %q", a.body, tc.inMsg)
			}
		})
	}

	ids := func(p page) (out []string) {
		for _, o := range p.Orders {
			out = append(out, o.ID)
		}
		return out
	}
	want := append(append([]string{}, mine...), theirs)
	slices.Sort(want)
	if got := ids(full); !slices.Equal(got, want) {
		t.Errorf("the shop's page: %v, want every order in id order %v", got, want)
	}
	if next := s.readPage(shop, q("&limit=1&after="+url.QueryEscape(*first.Next))); len(next.Orders) != 1 || next.Orders[0].ID != want[1] {
		t.Errorf("the page after the first: %v, want %s", ids(next), want[1])
	}
	if got := ids(paid); !slices.Equal(got, []string{mine[1]}) {
		t.Errorf("the paid orders: %v, want %s", got, mine[1])
	}
	if rest := s.readPage(admin, q("&status=paid&after="+url.QueryEscape(*paid.Next))); len(rest.Orders) != 0 || rest.Next != nil {
		t.Errorf("after the last paid order: %+v, want an empty page and no next", rest)
	}
	if got, wantMine := ids(s.readPage(buyer, q(""))), slices.Sorted(slices.Values(mine)); !slices.Equal(got, wantMine) {
		t.Errorf("the buyer's page: %v, want only theirs %v", got, wantMine)
	}
	if got := s.readPage(buyer, fmt.Sprintf("activity_id=%d", other)); len(got.Orders) != 0 || got.Next != nil {
		t.Errorf("the buyer's page of a sale they did not buy from: %+v", got)
	}
}

// A sale's external_ref and metadata: on create and PATCH, shown by the activity, which
// anyone reads without a token; every bad value is 400 naming its field, and changes
// nothing.
func TestShopFieldsOfASale(t *testing.T) {
	s := newStack(t, handler.Options{})
	admin := testutil.Token(t, 1, true)
	now := time.Now().UTC()
	body := func(extra string) string {
		return fmt.Sprintf(`{"name":"n","product_name":"p","price_cents":100,"stock":5,"per_user_limit":1,"starts_at":%q,"ends_at":%q%s}`,
			now.Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339), extra)
	}
	created := s.do(call{method: "POST", path: "/api/v1/admin/activities", token: admin,
		body: body(`,"external_ref":"SKU-42 ÉTÉ","metadata":{ "color" : "red", "sizes": [42, 43] }`)})
	var a struct {
		ID          int64           `json:"id"`
		ExternalRef string          `json:"external_ref"`
		Metadata    json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(created.body), &a); created.status != http.StatusCreated || err != nil ||
		a.ExternalRef != "SKU-42 ÉTÉ" || string(a.Metadata) != `{"color":"red","sizes":[42,43]}` {
		t.Fatalf("create: %d %s; want the reference and the metadata, compacted", created.status, created.body)
	}
	path := fmt.Sprintf("/api/v1/admin/activities/%d", a.ID)
	public := fmt.Sprintf("/api/v1/activities/%d", a.ID)
	before := s.do(call{method: "GET", path: public})
	if !strings.Contains(before.body, `"external_ref":"SKU-42 ÉTÉ"`) || !strings.Contains(before.body, `"metadata":{"color":"red","sizes":[42,43]}`) {
		t.Errorf("the activity: %s", before.body)
	}

	big := `{"k":"` + strings.Repeat("x", 4090) + `"}` // 4,098 bytes
	for _, tc := range []struct {
		name, field, value string
	}{
		{"external_ref empty", "external_ref", `""`},
		{"external_ref of 129 characters", "external_ref", `"` + strings.Repeat("é", 129) + `"`},
		{"external_ref with a line break", "external_ref", `"SKU\n42"`},
		{"external_ref with a control character", "external_ref", `"SKU\u000142"`},
		{"external_ref a number", "external_ref", `42`},
		{"metadata an array", "metadata", `[1,2]`},
		{"metadata a string", "metadata", `"red"`},
		{"metadata a number", "metadata", `1`},
		{"metadata over 4 KiB", "metadata", big},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []call{
				{method: "POST", path: "/api/v1/admin/activities", token: admin, body: body(`,"` + tc.field + `":` + tc.value)},
				{method: "PATCH", path: path, token: admin, body: `{"per_user_limit":2,"` + tc.field + `":` + tc.value + `}`},
			} {
				a := s.do(c)
				wantError(t, a, http.StatusBadRequest, "invalid_request")
				if !strings.Contains(a.body, tc.field) {
					t.Errorf("%s: %s does not name %s", c.method, a.body, tc.field)
				}
			}
		})
	}
	if after := s.do(call{method: "GET", path: public}); after.body != before.body {
		t.Errorf("the sale after the refused changes: %s, want it unchanged: %s", after.body, before.body)
	}
	if list := s.do(call{method: "GET", path: "/api/v1/admin/activities", token: admin}); strings.Count(list.body, `"id":`) != 1 {
		t.Errorf("sales after the refused creates: %s, want the one", list.body)
	}

	exact := `{"k":"` + strings.Repeat("x", 4088) + `"}` // 4,096 bytes
	patched := s.do(call{method: "PATCH", path: path, token: admin, body: `{"external_ref":"SKU-43","metadata":` + exact + `}`})
	if patched.status != http.StatusOK || !strings.Contains(patched.body, `"external_ref":"SKU-43"`) || !strings.Contains(patched.body, exact) ||
		!strings.Contains(patched.body, `"per_user_limit":1`) {
		t.Errorf("patch: %d %s, want the new reference and 4 KiB of metadata, the rest as it was", patched.status, patched.body)
	}
	if again := s.do(call{method: "GET", path: public}); !strings.Contains(again.body, `"external_ref":"SKU-43"`) {
		t.Errorf("the activity after the patch: %s", again.body)
	}
}

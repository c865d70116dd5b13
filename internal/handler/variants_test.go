package handler_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/internal/handler"
	"seckill/internal/testutil"
)

// variantSale is a create body of a sale of variants, with extra fields over it (a nil
// value drops a field).
func variantSale(extra map[string]any) string {
	now := time.Now()
	body := map[string]any{"name": "Drop", "product_name": "Sneaker", "price_cents": 12000, "per_user_limit": 3,
		"starts_at": now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
		"pay_window_seconds": 60, "per_variant_limit": 2,
		"variants": []map[string]any{{"name": "EU 42", "stock": 2, "external_ref": "SKU-42"}, {"name": "EU 43", "stock": 1},
			{"name": "EU 44", "stock": 3}}}
	return bodyOf(body, extra)
}

type activityView struct {
	ID              int64  `json:"id"`
	StockTotal      int64  `json:"stock_total"`
	StockAvailable  int64  `json:"stock_available"`
	Status          string `json:"status"`
	PerVariantLimit *int   `json:"per_variant_limit"`
	Variants        []struct {
		Name           string  `json:"name"`
		ExternalRef    *string `json:"external_ref"`
		StockTotal     int64   `json:"stock_total"`
		StockAvailable int64   `json:"stock_available"`
		Status         string  `json:"status"`
	} `json:"variants"`
}

// The contract's section on variants through the HTTP handlers, against real Redis and
// MySQL: a sale made of variants, purchases that name one, a variant sold out while the
// others sell, the limits across variants and of one, units added to a variant, the
// orders and the stats that name them, and every bad input answered 400 naming its
// field. Steps run in order on one stack.
func TestVariantsContract(t *testing.T) {
	s := newStack(t, handler.Options{})
	admin, buyer := testutil.Token(t, 1, true), testutil.Token(t, 42, false)
	created := s.do(call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: variantSale(nil)})
	var a activityView
	if err := json.Unmarshal([]byte(created.body), &a); created.status != http.StatusCreated || err != nil {
		t.Fatalf("create a sale of variants: %d %s", created.status, created.body)
	}
	if a.StockTotal != 6 || len(a.Variants) != 3 || a.Variants[0].Name != "EU 42" || a.Variants[0].ExternalRef == nil ||
		*a.Variants[0].ExternalRef != "SKU-42" || a.Variants[2].StockAvailable != 3 || a.Variants[1].Status != "active" ||
		a.PerVariantLimit == nil || *a.PerVariantLimit != 2 {
		t.Fatalf("created: %s", created.body)
	}
	for _, list := range []call{{method: "GET", path: "/api/v1/activities"}, {method: "GET", path: "/api/v1/admin/activities", token: admin}} {
		if got := s.do(list); !strings.Contains(got.body, `"variants":[{"name":"EU 42","external_ref":"SKU-42","stock_total":2`) {
			t.Errorf("%s lists the sale without its variants: %s", list.path, got.body)
		}
	}
	plain := s.sale(5, 3, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	buy := func(act int64) string { return fmt.Sprintf("/api/v1/activities/%d/orders", act) }
	patch := fmt.Sprintf("/api/v1/admin/activities/%d", a.ID)
	create := func(extra map[string]any) call {
		return call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: variantSale(extra)}
	}
	many := make([]map[string]any, 101)
	for i := range many {
		many[i] = map[string]any{"name": fmt.Sprint("V", i), "stock": 1}
	}
	bad := []struct {
		name  string
		c     call
		field string
	}{
		{"no variant", create(map[string]any{"variants": []any{}}), "variants"},
		{"101 variants", create(map[string]any{"variants": many}), "variants"},
		{"variants not a list", create(map[string]any{"variants": "EU 42"}), "variants"},
		{"a duplicate name", create(map[string]any{"variants": []map[string]any{{"name": "M", "stock": 1}, {"name": "M", "stock": 2}}}), "variants[1].name"},
		{"an empty name", create(map[string]any{"variants": []map[string]any{{"name": "", "stock": 1}}}), "variants[0].name"},
		{"a name of 65 characters", create(map[string]any{"variants": []map[string]any{{"name": strings.Repeat("é", 65), "stock": 1}}}), "variants[0].name"},
		{"a name with a control character", create(map[string]any{"variants": []map[string]any{{"name": "M\n", "stock": 1}}}), "variants[0].name"},
		{"no name", create(map[string]any{"variants": []map[string]any{{"stock": 1}}}), "variants[0].name"},
		{"a variant's stock 0", create(map[string]any{"variants": []map[string]any{{"name": "M", "stock": 0}}}), "variants[0].stock"},
		{"a variant's stock over 10^9", create(map[string]any{"variants": []map[string]any{{"name": "M", "stock": 1_000_000_001}}}), "variants[0].stock"},
		{"a variant without stock", create(map[string]any{"variants": []map[string]any{{"name": "M"}}}), "variants[0].stock"},
		{"an external_ref of 129 characters", create(map[string]any{"variants": []map[string]any{{"name": "M", "stock": 1, "external_ref": strings.Repeat("x", 129)}}}), "variants[0].external_ref"},
		{"stock beside variants", create(map[string]any{"stock": 6}), "stock"},
		{"per_variant_limit over per_user_limit", create(map[string]any{"per_variant_limit": 4}), "per_variant_limit"},
		{"per_variant_limit 0", create(map[string]any{"per_variant_limit": 0}), "per_variant_limit"},
		{"per_variant_limit without variants", create(map[string]any{"variants": nil, "stock": 5}), "per_variant_limit"},
		{"variants in a group-buy sale", create(map[string]any{"kind": "group", "group_size": 2, "group_window_seconds": 60, "per_variant_limit": nil}), "variants"},
		{"a purchase without its variant", call{method: "POST", path: buy(a.ID), token: buyer, body: `{"quantity":1}`}, "variant"},
		{"a purchase of an unknown variant", call{method: "POST", path: buy(a.ID), token: buyer, body: `{"quantity":1,"variant":"EU 45"}`}, "variant"},
		{"a variant in other case", call{method: "POST", path: buy(a.ID), token: buyer, body: `{"quantity":1,"variant":"eu 42"}`}, "variant"},
		{"a variant not a string", call{method: "POST", path: buy(a.ID), token: buyer, body: `{"quantity":1,"variant":42}`}, "variant"},
		{"a variant in a sale without", call{method: "POST", path: buy(plain), token: buyer, body: `{"quantity":1,"variant":"EU 42"}`}, "variant"},
		{"add_stock a number to a sale of variants", call{method: "PATCH", path: patch, token: admin, body: `{"add_stock":5}`}, "add_stock"},
		{"add_stock to an unknown variant", call{method: "PATCH", path: patch, token: admin, body: `{"add_stock":{"EU 45":5}}`}, "add_stock"},
		{"add_stock 0 to a variant", call{method: "PATCH", path: patch, token: admin, body: `{"add_stock":{"EU 42":0}}`}, "add_stock"},
		{"add_stock of no variant", call{method: "PATCH", path: patch, token: admin, body: `{"add_stock":{}}`}, "add_stock"},
		{"add_stock not a number", call{method: "PATCH", path: patch, token: admin, body: `{"add_stock":{"EU 42":"5"}}`}, "add_stock"},
		{"add_stock by variant to a sale without", call{method: "PATCH", path: fmt.Sprintf("/api/v1/admin/activities/%d", plain), token: admin, body: `{"add_stock":{"EU 42":5}}`}, "add_stock"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			got := s.do(tt.c)
			wantError(t, got, http.StatusBadRequest, "invalid_request")
			var e struct{ Error struct{ Message string } }
			_ = json.Unmarshal([]byte(got.body), &e)
			if !strings.HasPrefix(e.Error.Message, tt.field+" ") {
				t.Errorf("message %q does not begin with the field %s", e.Error.Message, tt.field)
			}
		})
	}

	// A variant sells out while the others sell, and its refusal names it (from the
	// script, then from the sold-out flag); the limits hold across variants and of one; a
	// key replayed with another variant is refused.
	purchase := func(token, variant string, qty int, key string) answer {
		c := call{method: "POST", path: buy(a.ID), token: token, body: fmt.Sprintf(`{"quantity":%d,"variant":%q}`, qty, variant)}
		if key != "" {
			c.header = map[string]string{"Idempotency-Key": key}
		}
		return s.do(c)
	}
	other, third := testutil.Token(t, 43, false), testutil.Token(t, 44, false)
	first := purchase(buyer, "EU 43", 1, "k-43")
	if first.status != http.StatusAccepted || !strings.Contains(first.body, `"variant":"EU 43"`) {
		t.Fatalf("buy the last EU 43: %d %s", first.status, first.body)
	}
	id := orderID(t, first.body)
	steps := []struct {
		name   string
		got    func() answer
		status int
		code   string
		says   string // in the error's message
	}{
		{"the sold-out variant", func() answer { return purchase(other, "EU 43", 1, "") }, 409, "sold_out", "EU 43 is sold out"},
		{"the sold-out variant again, from the flag", func() answer { return purchase(third, "EU 43", 1, "") }, 409, "sold_out", "EU 43 is sold out"},
		{"more of a variant than is left", func() answer { return purchase(other, "EU 42", 3, "") }, 409, "sold_out", "EU 42 is sold out: only 2 left"},
		{"the same key with another variant", func() answer { return purchase(buyer, "EU 42", 1, "k-43") }, 422, "idempotency_key_reused", ""},
		{"past the per-variant limit", func() answer { return purchase(other, "EU 44", 3, "") }, 409, "limit_exceeded", ""},
		{"up to the per-variant limit", func() answer { return purchase(buyer, "EU 44", 2, "") }, 202, "", ""},
		{"past the limit across variants", func() answer { return purchase(buyer, "EU 42", 1, "") }, 409, "limit_exceeded", ""},
		{"another buyer, another variant", func() answer { return purchase(third, "EU 42", 2, "") }, 202, "", ""},
	}
	for _, st := range steps {
		time.Sleep(5 * time.Millisecond) // the lock of the buyer's last purchase is released
		got := st.got()
		if st.code == "" {
			if got.status != st.status {
				t.Errorf("%s: %d %s, want %d", st.name, got.status, got.body, st.status)
			}
			continue
		}
		wantError(t, got, st.status, st.code)
		if !strings.Contains(got.body, st.says) {
			t.Errorf("%s: %s, want a message that says %q", st.name, got.body, st.says)
		}
	}
	if replay := purchase(buyer, "EU 43", 1, "k-43"); replay.status != http.StatusOK || orderID(t, replay.body) != id {
		t.Errorf("the replay of a purchase of a variant: %d %s", replay.status, replay.body)
	}
	s.waitCreated(id, buyer)
	if got := s.do(call{method: "GET", path: "/api/v1/orders/" + id, token: buyer}); !strings.Contains(got.body, `"variant":"EU 43"`) {
		t.Errorf("the stored order: %s; want its variant", got.body)
	}

	// The public sale is a snapshot up to a second old: wait for the purchases to show.
	var view activityView
	var got answer
	soldOut := func() bool {
		return view.Status == "active" && view.StockAvailable == 1 && view.Variants[1].Status == "sold_out" &&
			view.Variants[2].StockAvailable == 1 && view.Variants[0].StockAvailable == 0 && view.Variants[0].Status == "sold_out"
	}
	for deadline := time.Now().Add(5 * time.Second); !soldOut() && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got = s.do(call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d", a.ID)})
		if err := json.Unmarshal([]byte(got.body), &view); err != nil {
			t.Fatal(err)
		}
	}
	if !soldOut() {
		t.Errorf("the sale with two variants sold out: %s", got.body)
	}

	// Units added to a variant: it sells again, and the stats show each variant.
	if p := s.do(call{method: "PATCH", path: patch, token: admin, body: `{"add_stock":{"EU 43":5,"EU 42":1}}`}); p.status != http.StatusOK ||
		!strings.Contains(p.body, `"stock_total":12`) {
		t.Fatalf("add stock to two variants: %d %s", p.status, p.body)
	}
	got = purchase(other, "EU 43", 2, "")
	if got.status != http.StatusAccepted {
		t.Fatalf("a purchase of the units added: %d %s", got.status, got.body)
	}
	// The stats of a busy sale are right within the orders persisted meanwhile: read
	// them once no order is queued.
	var st answer
	for deadline := time.Now().Add(10 * time.Second); ; {
		st = s.do(call{method: "GET", path: fmt.Sprintf("/api/v1/admin/activities/%d/stats", a.ID), token: admin})
		if strings.Contains(st.body, `"queued":0`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var stats struct {
		Sold     int64
		Variants []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(st.body), &stats); err != nil || stats.Sold != 7 || len(stats.Variants) != 3 ||
		!strings.Contains(st.body, `{"name":"EU 43","stock_total":6,"stock_available":3,"status":"active"}`) {
		t.Errorf("stats: %d %s", st.status, st.body)
	}
}

// A sale of variants with a waiting room has one line: a pass buys any variant, the
// ticket's units_left counts every variant's units, a variant sells out while the line
// still admits for the others, and once every variant is sold out the sale is, for the
// line too.
func TestVariantsWithAWaitingRoom(t *testing.T) {
	s := newStack(t, handler.Options{})
	admin := testutil.Token(t, 1, true)
	a := s.do(call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: variantSale(map[string]any{
		"waiting_room": true, "admit_per_second": 100, "per_variant_limit": nil, "per_user_limit": 2,
		"variants": []map[string]any{{"name": "S", "stock": 1}, {"name": "M", "stock": 2}}})})
	var room activityView
	if err := json.Unmarshal([]byte(a.body), &room); a.status != http.StatusCreated || err != nil {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	lineOf, buy := fmt.Sprintf("/api/v1/activities/%d/line", room.ID), fmt.Sprintf("/api/v1/activities/%d/orders", room.ID)
	tokens := []string{testutil.Token(t, 51, false), testutil.Token(t, 52, false), testutil.Token(t, 53, false)}
	for _, tok := range tokens {
		if j := s.do(call{method: "POST", path: lineOf, token: tok, body: `{}`}); j.status != http.StatusCreated ||
			!strings.Contains(j.body, `"units_left":3`) {
			t.Fatalf("join: %d %s; want 201 with every variant's 3 units left", j.status, j.body)
		}
	}
	if _, err := s.line.Admit(t.Context(), room.ID); err != nil {
		t.Fatal(err)
	}
	pass := func(tok string) map[string]string {
		a := s.do(call{method: "GET", path: lineOf, token: tok})
		var tk struct{ Pass string }
		if err := json.Unmarshal([]byte(a.body), &tk); err != nil || tk.Pass == "" {
			t.Fatalf("ticket: %d %s; want a pass", a.status, a.body)
		}
		return map[string]string{handler.PassHeader: tk.Pass}
	}
	steps := []struct {
		name   string
		c      call
		status int
		code   string
	}{
		{"a variant without a pass", call{method: "POST", path: buy, token: tokens[0], body: `{"quantity":1,"variant":"S"}`}, 409, "not_admitted"},
		{"the pass buys S", call{method: "POST", path: buy, token: tokens[0], body: `{"quantity":1,"variant":"S"}`, header: pass(tokens[0])}, 202, ""},
		{"S sold out, for another pass", call{method: "POST", path: buy, token: tokens[1], body: `{"quantity":1,"variant":"S"}`, header: pass(tokens[1])}, 409, "sold_out"},
		{"the same pass buys M", call{method: "POST", path: buy, token: tokens[1], body: `{"quantity":1,"variant":"M"}`, header: pass(tokens[1])}, 202, ""},
		{"the first pass buys M too", call{method: "POST", path: buy, token: tokens[0], body: `{"quantity":1,"variant":"M"}`, header: pass(tokens[0])}, 202, ""},
		{"nothing left of any variant", call{method: "POST", path: buy, token: tokens[2], body: `{"quantity":1,"variant":"M"}`, header: pass(tokens[2])}, 409, "sold_out"},
		{"the line of a sold-out sale", call{method: "POST", path: lineOf, token: testutil.Token(t, 54, false), body: `{}`}, 409, "sold_out"},
	}
	for _, st := range steps {
		time.Sleep(5 * time.Millisecond) // the buyer's lock of the purchase before is released
		got := s.do(st.c)
		if st.code == "" {
			if got.status != st.status {
				t.Errorf("%s: %d %s, want %d", st.name, got.status, got.body, st.status)
			}
			continue
		}
		t.Run(st.name, func(t *testing.T) { wantError(t, got, st.status, st.code) })
	}
}

// The shop's refunds of orders of a sale of variants: with restock the units go back to
// their variant (and to its waitlist first: none here), without they stay off sale; the
// ledger balances each variant.
func TestVariantsRefunds(t *testing.T) {
	s := newStack(t, handler.Options{})
	admin, shop := testutil.Token(t, 1, true), testutil.ServiceToken(t, 900)
	created := s.do(call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: variantSale(map[string]any{
		"per_variant_limit": nil, "variants": []map[string]any{{"name": "S", "stock": 1}, {"name": "M", "stock": 2}}})})
	var a activityView
	if err := json.Unmarshal([]byte(created.body), &a); created.status != http.StatusCreated || err != nil {
		t.Fatalf("create: %d %s", created.status, created.body)
	}
	buy := func(u int64, size string) string {
		got := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), token: testutil.Token(t, u, false),
			body: fmt.Sprintf(`{"quantity":1,"variant":%q}`, size)})
		if got.status != http.StatusAccepted {
			t.Fatalf("buyer %d buys %s: %d %s", u, size, got.status, got.body)
		}
		id := orderID(t, got.body)
		s.waitCreated(id, testutil.Token(t, u, false))
		if p := s.do(call{method: "POST", path: "/api/v1/orders/" + id + "/pay", token: shop}); p.status != http.StatusOK {
			t.Fatalf("pay: %d %s", p.status, p.body)
		}
		return id
	}
	small, medium := buy(42, "S"), buy(43, "M")
	for _, r := range []struct {
		id, body string
	}{{small, `{"restock":true}`}, {medium, `{"restock":false}`}} {
		if got := s.do(call{method: "POST", path: "/api/v1/orders/" + r.id + "/refund", token: shop, body: r.body}); got.status != http.StatusOK ||
			!strings.Contains(got.body, `"status":"refunded"`) {
			t.Fatalf("refund %s: %d %s", r.body, got.status, got.body)
		}
	}
	// The units come back once the worker's return (here the call's own) has run, and
	// the public sale (a snapshot up to a second old) shows them.
	var view activityView
	refunded := func() bool {
		return view.Variants[0].StockAvailable == 1 && view.Variants[0].Status == "active" && view.Variants[1].StockAvailable == 1
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := s.do(call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d", a.ID)})
		if err := json.Unmarshal([]byte(got.body), &view); err != nil {
			t.Fatal(err)
		}
		if refunded() || time.Now().After(deadline) {
			break
		}
	}
	if !refunded() {
		t.Errorf("after a refund of S with restock and of M without: %+v; want S 1 left, M 1 left", view.Variants)
	}
	l := s.do(call{method: "GET", path: fmt.Sprintf("/api/v1/admin/activities/%d/ledger", a.ID), token: admin})
	if !strings.Contains(l.body, `"balanced":true`) || !strings.Contains(l.body, `{"name":"M","stock_total":2,"redis_stock_total":2,"available":1,"held_units":0,"off_sale_units":1,"difference":0,"sold_column":1}`) {
		t.Errorf("ledger: %s", l.body)
	}
}

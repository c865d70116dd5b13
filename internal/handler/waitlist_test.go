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
	"seckill/internal/waitingroom"
)

type entryView struct {
	Buyer    string `json:"buyer"`
	Variant  string `json:"variant"`
	Quantity int    `json:"quantity"`
	Position int    `json:"position"`
	Status   string `json:"status"`
	OrderID  string `json:"order_id"`
}

// The contract's waitlist through the HTTP handlers, against real Redis and MySQL: a
// join only while the sale is sold out and within the buyer's limit, again answering the
// same entry; the units of a cancel offered in join order as created orders marked
// offered, with their own pay window; an offered order cancelled ends its entry and goes
// to the next; leaving; and every bad input answered 400 naming its field. Steps run in
// order on one stack.
func TestWaitlistContract(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	admin := testutil.Token(t, 1, true)
	sold := s.sale(2, 2, now.Add(-time.Minute), now.Add(time.Hour))
	onSale := s.sale(5, 2, now.Add(-time.Minute), now.Add(time.Hour))
	ended := s.sale(5, 2, now.Add(-2*time.Hour), now.Add(-time.Hour))
	tok := func(u int64) string { return testutil.Token(t, u, false) }
	waitlist := func(act int64) string { return fmt.Sprintf("/api/v1/activities/%d/waitlist", act) }
	first := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", sold), token: tok(42), body: `{"quantity":2}`})
	if first.status != http.StatusAccepted {
		t.Fatalf("buy the sale out: %d %s", first.status, first.body)
	}
	firstID := orderID(t, first.body)
	s.waitCreated(firstID, tok(42))

	for _, tt := range []struct {
		name   string
		c      call
		status int
		code   string
		field  string
	}{
		{"without a token", call{method: "POST", path: waitlist(sold), body: `{"quantity":1}`}, 401, "unauthorized", ""},
		{"without a quantity", call{method: "POST", path: waitlist(sold), token: tok(43), body: `{}`}, 400, "invalid_request", "quantity"},
		{"quantity 0", call{method: "POST", path: waitlist(sold), token: tok(43), body: `{"quantity":0}`}, 400, "invalid_request", "quantity"},
		{"quantity above the limit", call{method: "POST", path: waitlist(sold), token: tok(43), body: `{"quantity":3}`}, 400, "invalid_request", "quantity"},
		{"quantity not a number", call{method: "POST", path: waitlist(sold), token: tok(43), body: `{"quantity":"1"}`}, 400, "invalid_request", "quantity"},
		{"a variant in a sale without", call{method: "POST", path: waitlist(sold), token: tok(43), body: `{"quantity":1,"variant":"M"}`}, 400, "invalid_request", "variant"},
		{"units on sale", call{method: "POST", path: waitlist(onSale), token: tok(43), body: `{"quantity":1}`}, 409, "not_sold_out", ""},
		{"past the buyer's limit", call{method: "POST", path: waitlist(sold), token: tok(42), body: `{"quantity":1}`}, 409, "limit_exceeded", ""},
		{"an ended sale", call{method: "POST", path: waitlist(ended), token: tok(43), body: `{"quantity":1}`}, 409, "sale_ended", ""},
		{"no such sale", call{method: "POST", path: waitlist(999999), token: tok(43), body: `{"quantity":1}`}, 404, "not_found", ""},
		{"no entry to read", call{method: "GET", path: waitlist(sold), token: tok(43)}, 404, "not_found", ""},
		{"no entry to leave", call{method: "DELETE", path: waitlist(sold), token: tok(43)}, 404, "not_found", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := s.do(tt.c)
			wantError(t, got, tt.status, tt.code)
			if tt.field != "" && !strings.Contains(got.body, `"message":"`+tt.field+" ") {
				t.Errorf("message of %s does not begin with the field %s", got.body, tt.field)
			}
		})
	}

	join := func(u int64, qty int) (answer, entryView) {
		t.Helper()
		got := s.do(call{method: "POST", path: waitlist(sold), token: tok(u), body: fmt.Sprintf(`{"quantity":%d}`, qty)})
		var e entryView
		_ = json.Unmarshal([]byte(got.body), &e)
		return got, e
	}
	read := func(u int64) entryView {
		t.Helper()
		got := s.do(call{method: "GET", path: waitlist(sold), token: tok(u)})
		var e entryView
		if got.status != http.StatusOK || json.Unmarshal([]byte(got.body), &e) != nil {
			t.Fatalf("entry of buyer %d: %d %s", u, got.status, got.body)
		}
		return e
	}
	for i, u := range []int64{43, 44, 45} {
		got, e := join(u, 1)
		if got.status != http.StatusCreated || e.Status != "waiting" || e.Position != i+1 || e.Buyer != fmt.Sprint(u) {
			t.Fatalf("buyer %d joins: %d %s; want 201 waiting at %d", u, got.status, got.body, i+1)
		}
	}
	if got, e := join(43, 2); got.status != http.StatusOK || e.Quantity != 1 || e.Position != 1 {
		t.Errorf("buyer 43 joins again: %d %s; want 200 and the same entry", got.status, got.body)
	}
	again := s.do(call{method: "POST", path: waitlist(sold), token: tok(43), body: `{"quantity":1,"variant":"M"}`})
	if e := (entryView{}); again.status != http.StatusOK || json.Unmarshal([]byte(again.body), &e) != nil || e.Position != 1 {
		t.Errorf("buyer 43 joins again naming a variant of a sale without: %d %s; want 200 and the same entry",
			again.status, again.body)
	}

	// Buyer 42 cancels the 2 units: buyers 43 and 44 are offered one each, as created
	// orders marked offered; buyer 45 waits, first now.
	if got := s.do(call{method: "POST", path: "/api/v1/orders/" + firstID + "/cancel", token: tok(42)}); got.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", got.status, got.body)
	}
	offers := map[int64]string{}
	for _, u := range []int64{43, 44} {
		e := read(u)
		if e.Status != "offered" || e.OrderID == "" || e.Position != 0 {
			t.Fatalf("buyer %d's entry after the cancel: %+v, want offered with an order", u, e)
		}
		offers[u] = e.OrderID
		s.waitCreated(e.OrderID, tok(u))
		o := s.do(call{method: "GET", path: "/api/v1/orders/" + e.OrderID, token: tok(u)})
		if !strings.Contains(o.body, `"offered":true`) || !strings.Contains(o.body, `"quantity":1`) || !strings.Contains(o.body, `"status":"created"`) {
			t.Errorf("buyer %d's offered order: %s", u, o.body)
		}
	}
	if e := read(45); e.Status != "waiting" || e.Position != 1 {
		t.Errorf("buyer 45 after two offers: %+v, want waiting first", e)
	}
	a := s.do(call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d", sold)})
	if !strings.Contains(a.body, `"stock_available":0`) {
		t.Errorf("the units offered went on open sale: %s", a.body)
	}

	// Buyer 43 cancels the offered order: the entry ends, and buyer 45 is offered it.
	if got := s.do(call{method: "POST", path: "/api/v1/orders/" + offers[43] + "/cancel", token: tok(43)}); got.status != http.StatusOK {
		t.Fatalf("cancel the offered order: %d %s", got.status, got.body)
	}
	if e := read(43); e.Status != "ended" || e.OrderID != offers[43] {
		t.Errorf("buyer 43's entry after the offered order was cancelled: %+v, want ended", e)
	}
	if e := read(45); e.Status != "offered" || e.OrderID == "" {
		t.Errorf("buyer 45 after the offered order came back: %+v, want offered", e)
	}

	// Leaving: the entry goes; the order offered stays.
	if got := s.do(call{method: "DELETE", path: waitlist(sold), token: tok(44)}); got.status != http.StatusNoContent {
		t.Errorf("leave: %d %s", got.status, got.body)
	}
	wantError(t, s.do(call{method: "GET", path: waitlist(sold), token: tok(44)}), 404, "not_found")
	if o := s.do(call{method: "GET", path: "/api/v1/orders/" + offers[44], token: tok(44)}); !strings.Contains(o.body, `"status":"created"`) {
		t.Errorf("the order offered to a buyer who left: %s", o.body)
	}
	_ = admin
}

// On a sale with a waiting room, only a buyer who holds a ticket of its line joins its
// waitlist: a buyer who never joined the line is 409 not_admitted, with or without a
// solved challenge's worth of effort; a buyer who joined it (admitted or not) joins; and
// a unit that comes back goes to that entry.
func TestWaitlistOfALineSale(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	a, err := s.svc.Catalog.CreateActivity(t.Context(), sale.NewActivity{Name: "s", ProductName: "p", PriceCents: 250, Stock: 1,
		PerUserLimit: 1, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PayWindowSeconds: 60,
		Room: sale.RoomPatch{WaitingRoom: ptr(true), AdmitPerSecond: ptr(1)}})
	if err != nil {
		t.Fatal(err)
	}
	tok := func(u int64) string { return testutil.Token(t, u, false) }
	path := func(what string) string { return fmt.Sprintf("/api/v1/activities/%d/%s", a.ID, what) }
	for _, u := range []int64{42, 44} {
		if got := s.do(call{method: "POST", path: path("line"), token: tok(u), body: `{}`}); got.status != http.StatusCreated {
			t.Fatalf("buyer %d joins the line: %d %s", u, got.status, got.body)
		}
	}
	if _, err := s.line.Admit(t.Context(), a.ID); err != nil { // buyer 42 first, at 1 a second
		t.Fatal(err)
	}
	var ticket waitingroom.Ticket
	got := s.do(call{method: "GET", path: path("line"), token: tok(42)})
	if json.Unmarshal([]byte(got.body), &ticket) != nil || ticket.Pass == "" {
		t.Fatalf("buyer 42's ticket: %d %s", got.status, got.body)
	}
	bought := s.do(call{method: "POST", path: path("orders"), token: tok(42), body: `{"quantity":1}`,
		header: map[string]string{handler.PassHeader: ticket.Pass}})
	if bought.status != http.StatusAccepted {
		t.Fatalf("buyer 42 buys the last unit with the pass: %d %s", bought.status, bought.body)
	}
	s.waitCreated(orderID(t, bought.body), tok(42))

	wantError(t, s.do(call{method: "POST", path: path("waitlist"), token: tok(43), body: `{"quantity":1}`}), 409, "not_admitted")
	wantError(t, s.do(call{method: "GET", path: path("waitlist"), token: tok(43)}), 404, "not_found")
	joined := s.do(call{method: "POST", path: path("waitlist"), token: tok(44), body: `{"quantity":1}`})
	if joined.status != http.StatusCreated {
		t.Fatalf("buyer 44, who holds a ticket still waiting, joins the waitlist: %d %s; want 201", joined.status, joined.body)
	}
	if c := s.do(call{method: "POST", path: "/api/v1/orders/" + orderID(t, bought.body) + "/cancel", token: tok(42)}); c.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", c.status, c.body)
	}
	var e entryView
	got = s.do(call{method: "GET", path: path("waitlist"), token: tok(44)})
	if json.Unmarshal([]byte(got.body), &e) != nil || e.Status != "offered" {
		t.Errorf("buyer 44's entry after the cancel: %d %s; want offered", got.status, got.body)
	}
}

func ptr[T any](v T) *T { return &v }

// A buyer with an entry on a sale of variants who joins again gets that entry as it is
// (its own variant and position), whatever variant the join names: another of the
// sale's, one it does not have, or none. A buyer without an entry naming no variant or
// an unknown one is 400 naming the field.
func TestWaitlistSecondJoinWhateverVariant(t *testing.T) {
	s := newStack(t, handler.Options{})
	admin := testutil.Token(t, 1, true)
	created := s.do(call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: variantSale(nil)})
	var a activityView
	if err := json.Unmarshal([]byte(created.body), &a); created.status != http.StatusCreated || err != nil {
		t.Fatalf("create a sale of variants: %d %s", created.status, created.body)
	}
	tok := func(u int64) string { return testutil.Token(t, u, false) }
	waitlist := fmt.Sprintf("/api/v1/activities/%d/waitlist", a.ID)
	if got := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), token: tok(42),
		body: `{"quantity":1,"variant":"EU 43"}`}); got.status != http.StatusAccepted {
		t.Fatalf("buy the last EU 43: %d %s", got.status, got.body)
	}
	if got := s.do(call{method: "POST", path: waitlist, token: tok(43), body: `{"quantity":1,"variant":"EU 43"}`}); got.status != http.StatusCreated {
		t.Fatalf("join the waitlist of EU 43: %d %s", got.status, got.body)
	}
	for _, tt := range []struct {
		name, body string
	}{
		{"another variant of the sale", `{"quantity":1,"variant":"EU 44"}`},
		{"a variant the sale does not have", `{"quantity":1,"variant":"EU 99"}`},
		{"no variant", `{"quantity":1}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := s.do(call{method: "POST", path: waitlist, token: tok(43), body: tt.body})
			var e entryView
			if got.status != http.StatusOK || json.Unmarshal([]byte(got.body), &e) != nil || e.Variant != "EU 43" ||
				e.Position != 1 || e.Status != "waiting" {
				t.Errorf("join again: %d %s; want 200 and the entry of EU 43, first", got.status, got.body)
			}
		})
	}
	for _, tt := range []struct {
		name, body string
	}{
		{"a new buyer naming a variant the sale does not have", `{"quantity":1,"variant":"EU 99"}`},
		{"a new buyer naming no variant", `{"quantity":1}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := s.do(call{method: "POST", path: waitlist, token: tok(44), body: tt.body})
			wantError(t, got, http.StatusBadRequest, "invalid_request")
			if !strings.Contains(got.body, `"message":"variant `) {
				t.Errorf("message of %s does not begin with the field variant", got.body)
			}
		})
	}
}

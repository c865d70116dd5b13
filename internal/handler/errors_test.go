package handler_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seckill/internal/auth"
	"seckill/internal/handler"
	"seckill/internal/sale"
	"seckill/internal/stock"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// Every error of the contract, through the HTTP handlers, against real Redis and MySQL.
// Steps run in order on one stack; each names the contract's status and code.
func TestContractErrors(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	open := s.sale(10, 2, now.Add(-time.Minute), now.Add(time.Hour))
	upcoming := s.sale(5, 1, now.Add(time.Hour), now.Add(2*time.Hour))
	ended := s.sale(5, 1, now.Add(-2*time.Hour), now.Add(-time.Hour))
	tiny := s.sale(1, 1, now.Add(-time.Minute), now.Add(time.Hour))
	admin, buyer, other := testutil.Token(t, 1, true), testutil.Token(t, 42, false), testutil.Token(t, 43, false)
	buy := func(act int64) string { return fmt.Sprintf("/api/v1/activities/%d/orders", act) }

	// A paid order and a created one for the order steps.
	first := s.do(call{method: "POST", path: buy(open), token: buyer, body: `{"quantity":1}`, header: map[string]string{"Idempotency-Key": "k-1"}})
	if first.status != http.StatusAccepted {
		t.Fatalf("first purchase: %d %s", first.status, first.body)
	}
	paidID := orderID(t, first.body)
	s.waitCreated(paidID, buyer)
	if a := s.do(call{method: "POST", path: "/api/v1/orders/" + paidID + "/pay", token: admin}); a.status != http.StatusOK || !strings.Contains(a.body, `"status":"paid"`) {
		t.Fatalf("pay: %d %s", a.status, a.body)
	}
	sold := s.do(call{method: "POST", path: buy(tiny), token: other, body: `{"quantity":1}`})
	if sold.status != http.StatusAccepted {
		t.Fatalf("buy the last unit: %d %s", sold.status, sold.body)
	}
	createdID := orderID(t, sold.body)
	s.waitCreated(createdID, other)

	const secret = testutil.JWTSecret
	sign := func(c jwt.MapClaims, key string) string {
		tok, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(key))
		return tok
	}
	expired := sign(jwt.MapClaims{"sub": "42", "role": "user", "exp": now.Add(-time.Minute).Unix()}, secret)
	wrongKey := sign(jwt.MapClaims{"sub": "42", "role": "user", "exp": now.Add(time.Hour).Unix()}, strings.Repeat("k", 40))
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." +
		base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"sub":"42","role":"admin","exp":%d}`, now.Add(time.Hour).Unix()))) + "."
	// validSale is a valid new sale with some fields replaced (a nil value drops the field).
	validSale := func(replace map[string]any) string {
		return bodyOf(map[string]any{"name": "n", "product_name": "p", "price_cents": 100, "stock": 10,
			"per_user_limit": 1, "starts_at": now.Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339)}, replace)
	}

	tests := []struct {
		name   string
		c      call
		status int
		code   string
		inMsg  string // the message must name this
	}{
		{"malformed JSON", call{method: "POST", path: buy(open), token: buyer, body: `{"quantity":`}, 400, "invalid_request", "JSON"},
		{"wrong type", call{method: "POST", path: buy(open), token: buyer, body: `{"quantity":"two"}`}, 400, "invalid_request", "quantity"},
		{"missing field", call{method: "POST", path: buy(open), token: buyer, body: `{"qty":1}`}, 400, "invalid_request", "quantity"},
		{"a field's name in other case is unknown", call{method: "POST", path: buy(open), token: buyer, body: `{"QUANTITY":1}`}, 400, "invalid_request", "quantity"},
		{"a field's name with an escape, in other case", call{method: "POST", path: buy(open), token: buyer, body: `{"\u0051uantity":1}`}, 400, "invalid_request", "quantity"},
		{"quantity zero", call{method: "POST", path: buy(open), token: buyer, body: `{"quantity":0}`}, 400, "invalid_request", "quantity"},
		{"quantity above the limit", call{method: "POST", path: buy(open), token: buyer, body: `{"quantity":3}`}, 400, "invalid_request", "quantity"},
		{"bad Idempotency-Key", call{method: "POST", path: buy(open), token: buyer, body: `{"quantity":1}`, header: map[string]string{"Idempotency-Key": "no spaces!"}}, 400, "invalid_request", "Idempotency-Key"},
		{"trailing data", call{method: "POST", path: buy(open), token: buyer, body: `{"quantity":1} {}`}, 400, "invalid_request", "JSON"},
		{"a body not UTF-8", call{method: "POST", path: buy(open), token: buyer, body: "{\"quantity\":1,\"x\":\"\xff\xfe\"}"}, 400, "invalid_request", "UTF-8"},
		{"admin: a name not UTF-8", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: strings.Replace(validSale(map[string]any{"name": "NAME"}), "NAME", "a\xffb", 1)}, 400, "invalid_request", "UTF-8"},
		{"admin: missing name", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"name": nil})}, 400, "invalid_request", "name"},
		{"admin: price out of range", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"price_cents": 1000000000001})}, 400, "invalid_request", "price_cents"},
		{"admin: stock too big for int64", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"stock": json.Number("1e30")})}, 400, "invalid_request", "stock"},
		{"admin: time without zone", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"starts_at": "2026-01-01T10:00:00"})}, 400, "invalid_request", "starts_at"},
		{"admin: pay window too short", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"pay_window_seconds": 5})}, 400, "invalid_request", "pay_window_seconds"},
		{"admin: unknown kind", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"kind": "auction"})}, 400, "invalid_request", "kind"},
		{"admin: group sale without a size", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"kind": "group", "group_window_seconds": 60})}, 400, "invalid_request", "group_size"},
		{"admin: group of one", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"kind": "group", "group_size": 1, "group_window_seconds": 60})}, 400, "invalid_request", "group_size"},
		{"admin: group window too short", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"kind": "group", "group_size": 3, "group_window_seconds": 59})}, 400, "invalid_request", "group_window_seconds"},
		{"admin: group size on a plain sale", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"group_size": 3})}, 400, "invalid_request", "group_size"},
		{"admin: wrong type in a waiting-room field, named as sent", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"waiting_room": true, "admit_per_second": "5"})}, 400, "invalid_request", `"message":"admit_per_second must be`},
		{"admin: stock_buckets 0", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"stock_buckets": 0})}, 400, "invalid_request", "stock_buckets"},
		{"admin: stock_buckets 65", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"stock_buckets": 65})}, 400, "invalid_request", "stock_buckets"},
		{"admin: stock_buckets 3 in a group sale", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"stock_buckets": 3, "kind": "group", "group_size": 3, "group_window_seconds": 60})}, 400, "invalid_request", "stock_buckets"},
		{"admin: stock_buckets 3 with a waiting room", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"stock_buckets": 3, "waiting_room": true, "admit_per_second": 5})}, 400, "invalid_request", "stock_buckets"},
		{"admin: stock_buckets not a number", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"stock_buckets": "3"})}, 400, "invalid_request", "stock_buckets"},
		{"admin: early_access_seconds -1", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"early_access_seconds": -1})}, 400, "invalid_request", "early_access_seconds"},
		{"admin: early_access_seconds over a week", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"early_access_seconds": 604801})}, 400, "invalid_request", "early_access_seconds"},
		{"admin: early_access_seconds not a number", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"early_access_seconds": "60"})}, 400, "invalid_request", "early_access_seconds"},
		{"admin: early_access_seconds with stock_buckets 3", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"early_access_seconds": 60, "stock_buckets": 3})}, 400, "invalid_request", "early_access_seconds"},
		{"admin: patch early_access_seconds over a week", call{method: "PATCH", path: fmt.Sprintf("/api/v1/admin/activities/%d", open), token: admin, body: `{"early_access_seconds":604801}`}, 400, "invalid_request", "early_access_seconds"},
		{"admin: patch early_access_seconds a fraction", call{method: "PATCH", path: fmt.Sprintf("/api/v1/admin/activities/%d", open), token: admin, body: `{"early_access_seconds":1.5}`}, 400, "invalid_request", "early_access_seconds"},
		{"admin: participations 0", call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"per_user_participations": 0})}, 400, "invalid_request", "per_user_participations"},
		{"open a group in a plain sale", call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/groups", open), token: buyer, body: `{"quantity":1}`}, 409, "not_a_group_sale", ""},
		{"join no such group", call{method: "POST", path: "/api/v1/groups/01ARZ3NDEKTSV4RRFFQ69G5FAV7/join", token: buyer, body: `{"quantity":1}`}, 404, "not_found", ""},
		{"join a malformed group id", call{method: "POST", path: "/api/v1/groups/nope/join", token: buyer, body: `{"quantity":1}`}, 404, "not_found", ""},
		{"join without a token", call{method: "POST", path: "/api/v1/groups/01ARZ3NDEKTSV4RRFFQ69G5FAV7/join", body: `{"quantity":1}`}, 401, "unauthorized", ""},
		{"join without quantity", call{method: "POST", path: "/api/v1/groups/01ARZ3NDEKTSV4RRFFQ69G5FAV7/join", token: buyer, body: `{}`}, 400, "invalid_request", "quantity"},
		{"no such group", call{method: "GET", path: "/api/v1/groups/01ARZ3NDEKTSV4RRFFQ69G5FAV7"}, 404, "not_found", ""},
		{"groups of a plain sale", call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d/groups", open)}, 409, "not_a_group_sale", ""},
		{"groups of no such sale", call{method: "GET", path: "/api/v1/activities/999999/groups"}, 404, "not_found", ""},
		{"groups: limit 0", call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d/groups?limit=0", open)}, 400, "invalid_request", "limit"},
		{"groups: limit not a number", call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d/groups?limit=ten", open)}, 400, "invalid_request", "limit"},
		{"admin: groups limit above 500", call{method: "GET", path: fmt.Sprintf("/api/v1/admin/activities/%d/groups?limit=501", open), token: admin}, 400, "invalid_request", "limit"},
		{"admin: patch limit 0", call{method: "PATCH", path: fmt.Sprintf("/api/v1/admin/activities/%d", open), token: admin, body: `{"per_user_limit":0}`}, 400, "invalid_request", "per_user_limit"},
		{"admin: patch with a wrong type in a waiting-room field", call{method: "PATCH", path: fmt.Sprintf("/api/v1/admin/activities/%d", open), token: admin, body: `{"prequeue_seconds":"x"}`}, 400, "invalid_request", `"message":"prequeue_seconds must be`},
		{"admin: patch ends before start", call{method: "PATCH", path: fmt.Sprintf("/api/v1/admin/activities/%d", open), token: admin, body: fmt.Sprintf(`{"ends_at":%q}`, now.Add(-time.Hour).Format(time.RFC3339))}, 400, "invalid_request", "ends_at"},
		{"no token", call{method: "POST", path: buy(open), body: `{"quantity":1}`}, 401, "unauthorized", ""},
		{"malformed token", call{method: "POST", path: buy(open), token: "abc.def", body: `{"quantity":1}`}, 401, "unauthorized", ""},
		{"expired token", call{method: "GET", path: "/api/v1/orders", token: expired}, 401, "unauthorized", ""},
		{"token of another key", call{method: "GET", path: "/api/v1/orders", token: wrongKey}, 401, "unauthorized", ""},
		{"alg none", call{method: "GET", path: "/api/v1/admin/activities", token: none}, 401, "unauthorized", ""},
		{"user on an admin route", call{method: "POST", path: "/api/v1/admin/activities", token: buyer, body: validSale(nil)}, 403, "forbidden", ""},
		{"no such activity", call{method: "GET", path: "/api/v1/activities/999999"}, 404, "not_found", ""},
		{"buy from no such activity", call{method: "POST", path: buy(999999), token: buyer, body: `{"quantity":1}`}, 404, "not_found", ""},
		{"activity id not a number", call{method: "GET", path: "/api/v1/activities/abc"}, 404, "not_found", ""},
		{"no such order", call{method: "GET", path: "/api/v1/orders/01ARZ3NDEKTSV4RRFFQ69G5FAV7", token: buyer}, 404, "not_found", ""},
		{"another user's order", call{method: "GET", path: "/api/v1/orders/" + paidID, token: other}, 404, "not_found", ""},
		{"a buyer pays, outside dev mode", call{method: "POST", path: "/api/v1/orders/" + createdID + "/pay", token: other}, 403, "payment_by_shop", ""},
		{"a buyer pays another user's order, outside dev mode", call{method: "POST", path: "/api/v1/orders/" + createdID + "/pay", token: buyer}, 404, "not_found", ""},
		{"no such route", call{method: "GET", path: "/api/v1/nothing"}, 404, "not_found", ""},
		{"sale not started", call{method: "POST", path: buy(upcoming), token: buyer, body: `{"quantity":1}`}, 409, "sale_not_started", ""},
		{"sale ended", call{method: "POST", path: buy(ended), token: buyer, body: `{"quantity":1}`}, 409, "sale_ended", ""},
		{"sold out", call{method: "POST", path: buy(tiny), token: buyer, body: `{"quantity":1}`}, 409, "sold_out", ""},
		{"limit exceeded", call{method: "POST", path: buy(open), token: buyer, body: `{"quantity":2}`}, 409, "limit_exceeded", ""},
		{"cancel a paid order", call{method: "POST", path: "/api/v1/orders/" + paidID + "/cancel", token: buyer}, 409, "order_not_cancellable", ""},
		{"body over 64 KiB", call{method: "POST", path: buy(open), token: buyer, body: `{"quantity":1,"pad":"` + strings.Repeat("x", 70<<10) + `"}`}, 413, "payload_too_large", ""},
		{"chunked body over 64 KiB", call{method: "POST", path: buy(open), token: buyer, body: `{"quantity":1,"pad":"` + strings.Repeat("x", 70<<10) + `"}`, chunked: true}, 413, "payload_too_large", ""},
		{"chunked body over 64 KiB on a route that reads none", call{method: "POST", path: "/api/v1/orders/" + paidID + "/cancel", token: buyer, body: strings.Repeat("x", 70<<10), chunked: true}, 413, "payload_too_large", ""},
		{"chunked body under 64 KiB is read", call{method: "POST", path: buy(tiny), token: buyer, body: `{"quantity":1}`, chunked: true}, 409, "sold_out", ""},
		{"key reused with another body", call{method: "POST", path: buy(open), token: buyer, body: `{"quantity":2}`, header: map[string]string{"Idempotency-Key": "k-1"}}, 422, "idempotency_key_reused", ""},
		{"wrong method", call{method: "DELETE", path: "/api/v1/orders"}, 405, "method_not_allowed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := s.do(tt.c)
			wantError(t, a, tt.status, tt.code)
			if tt.inMsg != "" && !strings.Contains(strings.ToLower(a.body), strings.ToLower(tt.inMsg)) {
				t.Errorf("message %s does not name %q", a.body, tt.inMsg)
			}
		})
	}

	t.Run("a waiting room on a sale of several buckets", func(t *testing.T) {
		a := s.do(call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"stock_buckets": 2})})
		var created struct{ ID int64 }
		if err := json.Unmarshal([]byte(a.body), &created); a.status != http.StatusCreated || err != nil {
			t.Fatalf("create: %d %s", a.status, a.body)
		}
		p := s.do(call{method: "PATCH", path: fmt.Sprintf("/api/v1/admin/activities/%d", created.ID), token: admin,
			body: `{"waiting_room":true,"admit_per_second":5}`})
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, `"invalid_request"`) || !strings.Contains(p.body, "waiting_room") {
			t.Errorf("patch: %d %s; want 400 invalid_request naming waiting_room", p.status, p.body)
		}
	})
	for _, k := range []int{1, 3, 64} {
		t.Run(fmt.Sprintf("stock_buckets %d, echoed", k), func(t *testing.T) {
			a := s.do(call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"stock_buckets": k})})
			if a.status != http.StatusCreated || !strings.Contains(a.body, fmt.Sprintf(`"stock_buckets":%d`, k)) {
				t.Errorf("create with stock_buckets %d: %d %s; want 201 echoing it", k, a.status, a.body)
			}
		})
	}
	t.Run("a name in other case is ignored, not taken for the field", func(t *testing.T) {
		a := s.do(call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: validSale(map[string]any{"stock": 5, "Stock": 7, "STOCK": 9})})
		if a.status != http.StatusCreated || !strings.Contains(a.body, `"stock_total":5`) {
			t.Errorf("create with stock 5 and Stock 7: %d %s; want 201 with stock_total 5", a.status, a.body)
		}
	})
	t.Run("replay answers 200 with the same order", func(t *testing.T) {
		a := s.do(call{method: "POST", path: buy(open), token: buyer, body: `{"quantity":1}`, header: map[string]string{"Idempotency-Key": "k-1"}})
		if a.status != http.StatusOK || orderID(t, a.body) != paidID {
			t.Errorf("got %d %s; want 200 with order %s", a.status, a.body, paidID)
		}
	})
	t.Run("busy: the user's lock stays held past the wait", func(t *testing.T) {
		if err := stocktest.New(s.rdb).HoldUserLock(t.Context(), open, "42", "someone-else", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		a := s.do(call{method: "POST", path: buy(open), token: buyer, body: `{"quantity":1}`})
		wantError(t, a, 429, "busy")
		if a.header.Get("Retry-After") == "" {
			t.Error("429 busy without Retry-After")
		}
		if err := stocktest.New(s.rdb).ReleaseUserLocks(t.Context(),
			reserve.Reservation{Purchase: stock.Purchase{ActivityID: open, Buyer: "42"},
				LockToken: "someone-else"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("order expired", func(t *testing.T) {
		s.clock.Advance(2 * time.Minute) // past the 60 s pay window
		defer s.clock.Advance(-2 * time.Minute)
		wantError(t, s.do(call{method: "POST", path: "/api/v1/orders/" + createdID + "/pay", token: admin}), 409, "order_expired")
	})
	t.Run("cancel gives the unit back", func(t *testing.T) {
		a := s.do(call{method: "POST", path: "/api/v1/orders/" + createdID + "/cancel", token: other})
		if a.status != http.StatusOK || !strings.Contains(a.body, `"status":"cancelled"`) {
			t.Fatalf("cancel: %d %s", a.status, a.body)
		}
		again := s.do(call{method: "POST", path: buy(tiny), token: buyer, body: `{"quantity":1}`})
		if again.status != http.StatusAccepted {
			t.Fatalf("buy after the cancel: %d %s; want 202", again.status, again.body)
		}
		// The buyer's list has the new order (queued or already created) first, then
		// the paid one; nobody else's.
		list := s.do(call{method: "GET", path: "/api/v1/orders", token: buyer})
		newID := orderID(t, again.body)
		iNew, iPaid := strings.Index(list.body, newID), strings.Index(list.body, paidID)
		if list.status != http.StatusOK || iNew < 0 || iPaid < 0 || iNew > iPaid || strings.Contains(list.body, createdID) {
			t.Errorf("orders of the buyer: %d %s; want %s before %s and not %s", list.status, list.body, newID, paidID, createdID)
		}
	})
}

func TestRateLimited(t *testing.T) {
	s := newStack(t, handler.Options{RateUser: 2, RateIP: 0})
	buyer := testutil.Token(t, 7, false)
	var limited answer
	for i := 0; i < 10 && limited.status == 0; i++ {
		if a := s.do(call{method: "GET", path: "/api/v1/orders", token: buyer}); a.status == http.StatusTooManyRequests {
			limited = a
		}
	}
	wantError(t, limited, 429, "rate_limited")
	if ra := limited.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After = %q, want whole seconds >= 1", ra)
	}
	if a := s.do(call{method: "GET", path: "/api/v1/orders", token: testutil.Token(t, 8, false)}); a.status != http.StatusOK {
		t.Errorf("another user: %d %s, want 200", a.status, a.body)
	}

	ipLimited := newStack(t, handler.Options{RateIP: 1})
	codes := map[int]int{}
	for i := 0; i < 5; i++ {
		codes[ipLimited.do(call{method: "GET", path: "/api/v1/activities"}).status]++
	}
	if codes[http.StatusTooManyRequests] == 0 {
		t.Errorf("IP limit 1/s: 5 requests got %v, want some 429", codes)
	}
}

// Redis stopped: purchases answer 503 quickly, /readyz says 503 within 3 s (with the
// probes' own body, not the error body), and both recover, /readyz within 5 s.
func TestRedisDownIsUnavailable(t *testing.T) {
	s := newStack(t, handler.Options{}) // appendfsync always: the sale survives the SIGKILL
	now := time.Now()
	act := s.sale(10, 5, now.Add(-time.Minute), now.Add(time.Hour))
	buyer := testutil.Token(t, 9, false)
	path := fmt.Sprintf("/api/v1/activities/%d/orders", act)
	s.waitReady(true, `{"ready":true,"redis":"ok","mysql":"ok"}`, 5*time.Second)

	s.redis.Kill()
	start := time.Now()
	a := s.do(call{method: "POST", path: path, token: buyer, body: `{"quantity":1}`})
	took := time.Since(start)
	wantError(t, a, 503, "unavailable")
	if strings.Contains(a.body, "dial") || strings.Contains(a.body, "127.0.0.1") {
		t.Errorf("503 body leaks internals: %s", a.body)
	}
	t.Logf("purchase with Redis down answered %d in %v", a.status, took)
	// Every 503 of an API route says when to try again: the purchase, and a route
	// whose storage error is not one of the mapped ones (a ticket's read).
	ticket := s.do(call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d/line", act), token: buyer})
	for name, a := range map[string]answer{"purchase": a, "ticket": ticket} {
		wantError(t, a, 503, "unavailable")
		if a.header.Get("Retry-After") != "1" {
			t.Errorf("%s: 503 with Retry-After %q, want 1", name, a.header.Get("Retry-After"))
		}
	}
	s.waitReady(false, `{"ready":false,"redis":"down","mysql":"ok"}`, 3*time.Second-time.Since(start))

	s.redis.Start()
	back := time.Now()
	s.waitReady(true, `{"ready":true,"redis":"ok","mysql":"ok"}`, 5*time.Second)
	t.Logf("readyz 200 again %v after Redis answered", time.Since(back).Round(10*time.Millisecond))
	if a := s.do(call{method: "POST", path: path, token: buyer, body: `{"quantity":1}`}); a.status != http.StatusAccepted {
		t.Errorf("purchase once ready again: %d %s", a.status, a.body)
	}
}

// Limits that hold across instances: two handlers that know of each other (two live
// APIs), one user's requests alternating between them, get one allowance between them
// (5/s x the interval the requests took + the burst of 10), not one each, and the
// refusals are the contract's 429. No Redis call is made for the limit
// (internal/ratelimit). The requests go on until two allowances would have refused
// some (limitedStream), so the count tells one allowance from two on a slow machine too.
func TestRateLimitSharedAcrossInstances(t *testing.T) {
	s := newStack(t, handler.Options{})
	const rate, burst = 5, 10
	var urls []string
	for range 2 {
		ts := httptest.NewServer(handler.New(services(s.svc), handler.Options{JWTSecret: testutil.JWTSecret,
			RateUser: rate, APIs: func() int { return 2 }}).Routes())
		t.Cleanup(ts.Close)
		urls = append(urls, ts.URL)
	}
	buyer := testutil.Token(t, 7, false)
	codes := map[int]int{}
	var limited answer
	window := limitedStream(t, rate, burst, func(i int) {
		s.url = urls[i%2]
		a := s.do(call{method: "GET", path: "/api/v1/orders", token: buyer})
		codes[a.status]++
		if a.status == http.StatusTooManyRequests {
			limited = a
		}
	})
	allowance := int(rate*window.Seconds()) + burst
	t.Logf("%v over two instances: %v", window, codes)
	if got := codes[http.StatusOK]; got > allowance+1 || got < burst+int(rate*window.Seconds()/2) {
		t.Errorf("%v over two instances: %v; want at most one allowance, %d (+1 for a token earned meanwhile; "+
			"per-instance limits would allow %d), and at least the burst and half the refill, %d",
			window, codes, allowance, 2*allowance, burst+int(rate*window.Seconds()/2))
	}
	if len(codes) != 2 {
		t.Errorf("answers %v, want only 200 and 429", codes)
	}
	wantError(t, limited, 429, "rate_limited")
	if ra := limited.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After = %q, want whole seconds >= 1", ra)
	}
}

// limitedStream makes one user's requests (request(i) makes the i-th) for at least
// 1.5 s, a few milliseconds apart, and on until there are more of them than two
// allowances of rate and burst let through over the interval they took: then a count of
// what was allowed tells one allowance from two, however slowly the machine answers. It
// returns that interval, as measured.
func limitedStream(t *testing.T, rate, burst int, request func(i int)) time.Duration {
	t.Helper()
	start := time.Now()
	for i := 0; ; i++ {
		request(i)
		took := time.Since(start)
		if took >= 1500*time.Millisecond && i+1 > 2*(burst+int(float64(rate)*took.Seconds()))+2 {
			return took
		}
		if took > time.Minute {
			t.Fatalf("%d requests in %v: too few for two allowances to refuse any", i+1, took)
		}
		// The stream's pace, the behaviour under test: requests spread over the interval,
		// so that the allowance refills while they come.
		time.Sleep(5 * time.Millisecond)
	}
}

// X-Forwarded-For names the client only when the peer is a trusted proxy: behind one,
// two clients get an allowance each; from an untrusted peer the header changes nothing.
func TestClientIPFromTrustedProxiesOnly(t *testing.T) {
	s := newStack(t, handler.Options{})
	tests := []struct {
		name    string
		proxies []string
		want    map[int]int // answers to 3 requests each from two forwarded clients
	}{
		{"trusted proxy", []string{"127.0.0.1/32"}, map[int]int{200: 4, 429: 2}},
		{"no trusted proxy", nil, map[int]int{200: 2, 429: 4}},
		{"another proxy", []string{"10.0.0.0/8"}, map[int]int{200: 2, 429: 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(handler.New(services(s.svc), handler.Options{JWTSecret: testutil.JWTSecret,
				RateIP: 1, TrustedProxies: tc.proxies}).Routes()) // a fresh allowance per case
			t.Cleanup(ts.Close)
			s.url = ts.URL
			codes := map[int]int{}
			for i := range 6 {
				client := []string{"203.0.113.7", "198.51.100.9"}[i%2]
				codes[s.do(call{method: "GET", path: "/api/v1/activities", header: map[string]string{
					"X-Forwarded-For": client}}).status]++
			}
			if !reflect.DeepEqual(codes, tc.want) {
				t.Errorf("answers %v, want %v", codes, tc.want)
			}
		})
	}
}

// A shop's back end (role service) reads, pays and cancels any buyer's order, and
// nothing else: it cannot buy, is no admin, and the per-user and per-IP limits do not
// hold it back.
func TestServiceRole(t *testing.T) {
	s := newStack(t, handler.Options{RateUser: 1, RateIP: 1})
	now := time.Now()
	act := s.sale(10, 2, now.Add(-time.Minute), now.Add(time.Hour))
	buyer, shop := testutil.Token(t, 42, false), testutil.ServiceToken(t, 42) // the same sub as the buyer
	buy := func() string {
		t.Helper()
		a := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", act), token: buyer, body: `{"quantity":1}`})
		if a.status != http.StatusAccepted {
			t.Fatalf("buy: %d %s", a.status, a.body)
		}
		id := orderID(t, a.body)
		// The buyer's allowance of 1 request/s (and the IP's) comes back: a rate is time, with no
		// state to poll.
		time.Sleep(time.Second)
		s.waitCreated(id, buyer)
		return id
	}
	paid, cancelled := buy(), buy()

	// Many requests in a row, past both limits of 1/s: none is refused, and the service
	// reads any buyer's order.
	for range 6 {
		if a := s.do(call{method: "GET", path: "/api/v1/orders/" + paid, token: shop}); a.status != http.StatusOK || !strings.Contains(a.body, `"status":"created"`) {
			t.Errorf("service reads the buyer's order: %d %s", a.status, a.body)
		}
	}
	// Past the per-IP limit a purchase route refuses a token it has not verified before
	// (429, no signature check); the service's token is known by now, and refused as a
	// buyer's would not be.
	for _, c := range []call{
		{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", act), body: `{"quantity":1}`},
		{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/groups", act), body: `{"quantity":1}`},
		{method: "POST", path: "/api/v1/groups/01ARZ3NDEKTSV4RRFFQ69G5FAV7" + fmt.Sprint(act) + "/join", body: `{"quantity":1}`},
		{method: "GET", path: "/api/v1/admin/activities"},
		{method: "POST", path: "/api/v1/admin/activities", body: `{}`},
	} {
		c.token = shop
		wantError(t, s.do(c), http.StatusForbidden, "forbidden")
	}
	confirmed := s.do(call{method: "POST", path: "/api/v1/orders/" + paid + "/pay", token: shop})
	if confirmed.status != http.StatusOK || !strings.Contains(confirmed.body, `"status":"paid"`) ||
		!strings.Contains(confirmed.body, `"user_id":42`) || !strings.Contains(confirmed.body, `"paid_by":"service"`) {
		t.Errorf("service pays the buyer's order: %d %s", confirmed.status, confirmed.body)
	}
	// The confirmation sent again (its answer was lost): 200 and the same order, paid when
	// it was first.
	if again := s.do(call{method: "POST", path: "/api/v1/orders/" + paid + "/pay", token: shop}); again.status != http.StatusOK || again.body != confirmed.body {
		t.Errorf("the confirmation again: %d %s, want 200 %s", again.status, again.body, confirmed.body)
	}
	if a := s.do(call{method: "POST", path: "/api/v1/orders/" + cancelled + "/cancel", token: shop}); a.status != http.StatusOK ||
		!strings.Contains(a.body, `"status":"cancelled"`) {
		t.Errorf("service cancels the buyer's order: %d %s", a.status, a.body)
	}
	wantError(t, s.do(call{method: "GET", path: "/api/v1/orders", token: shop}), http.StatusBadRequest, "invalid_request") // it has no orders of its own: activity_id
	// The buyer's limits hold as before: the service's requests did not use them up,
	// and a second request within the second is refused.
	// The allowance of 1 request/s comes back: a rate is time, with no state to poll.
	time.Sleep(time.Second)
	if a := s.do(call{method: "GET", path: "/api/v1/orders/" + paid, token: buyer}); a.status != http.StatusOK || !strings.Contains(a.body, `"status":"paid"`) {
		t.Errorf("the buyer reads the paid order: %d %s", a.status, a.body)
	}
	wantError(t, s.do(call{method: "GET", path: "/api/v1/orders/" + paid, token: buyer}), http.StatusTooManyRequests, "rate_limited")
}

// An admin pays and cancels any buyer's order, as the shop's back end does (the
// contract's confirmations from the shop: "service (or admin)"); another buyer gets 404
// (a buyer's payment on: SECKILL_BUYER_PAYS).
func TestAdminActsOnAnyOrder(t *testing.T) {
	s := newStack(t, handler.Options{})
	s.svc.BuyerPays = true
	now := time.Now()
	act := s.sale(10, 2, now.Add(-time.Minute), now.Add(time.Hour))
	buyer, other, admin := testutil.Token(t, 42, false), testutil.Token(t, 43, false), testutil.Token(t, 1, true)
	var ids []string
	for range 2 {
		a := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", act), token: buyer, body: `{"quantity":1}`})
		if a.status != http.StatusAccepted {
			t.Fatalf("buy: %d %s", a.status, a.body)
		}
		ids = append(ids, orderID(t, a.body))
		s.waitCreated(ids[len(ids)-1], buyer)
	}
	for _, tc := range []struct{ action, id, status string }{{"pay", ids[0], "paid"}, {"cancel", ids[1], "cancelled"}} {
		wantError(t, s.do(call{method: "POST", path: "/api/v1/orders/" + tc.id + "/" + tc.action, token: other}), http.StatusNotFound, "not_found")
		if a := s.do(call{method: "POST", path: "/api/v1/orders/" + tc.id + "/" + tc.action, token: admin}); a.status != http.StatusOK ||
			!strings.Contains(a.body, `"status":"`+tc.status+`"`) || !strings.Contains(a.body, `"user_id":42`) {
			t.Errorf("an admin's %s of the buyer's order: %d %s, want 200 %s", tc.action, a.status, a.body, tc.status)
		}
	}
}

// Purchase attempts that reach Redis are counted by the reserve script, on Redis'
// clock, whatever each instance believes: two handlers that each think they are alone
// (their own share would be the whole allowance) still give one user one allowance in
// a sale (5/s x the window + the burst of 10). The attempts that the process answers
// itself (the sold-out flag) are counted against its own share, as other requests are.
func TestPurchaseAttemptsLimited(t *testing.T) {
	s := newStack(t, handler.Options{RateUser: 5})
	const rate, burst = 5, 10
	var urls []string
	for range 2 {
		ts := httptest.NewServer(handler.New(services(s.svc), handler.Options{JWTSecret: testutil.JWTSecret,
			RateUser: rate, APIs: func() int { return 1 }, Passes: auth.NewPasses(testutil.JWTSecret)}).Routes())
		t.Cleanup(ts.Close)
		urls = append(urls, ts.URL)
	}
	now := time.Now()
	upcoming := s.sale(10, 1, now.Add(time.Hour), now.Add(2*time.Hour)) // every attempt reaches the script
	buyer := testutil.Token(t, 7, false)
	codes := map[string]int{}
	var limited answer
	window := limitedStream(t, rate, burst, func(i int) {
		s.url = urls[i%2]
		a := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", upcoming), token: buyer,
			body: `{"quantity":1}`})
		codes[fmt.Sprintf("%d %s", a.status, errorCode(a.body))]++
		if a.status == http.StatusTooManyRequests {
			limited = a
		}
	})
	allowance := int(rate*window.Seconds()) + burst
	t.Logf("%v of purchase attempts over two instances: %v", window, codes)
	if got := codes["409 sale_not_started"]; got > allowance+1 || got < burst+int(rate*window.Seconds()/2) {
		t.Errorf("answered past the limit: %d, want one allowance, %d (+1), and at least %d",
			got, allowance, burst+int(rate*window.Seconds()/2))
	}
	if len(codes) != 2 {
		t.Errorf("answers %v, want only 409 sale_not_started and 429 rate_limited", codes)
	}
	wantError(t, limited, 429, "rate_limited")
	if ra := limited.header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After = %q, want 1 (the next attempt is at most 200 ms away)", ra)
	}
	// Another user, another sale: allowances of their own.
	s.url = urls[0]
	if a := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", upcoming),
		token: testutil.Token(t, 8, false), body: `{"quantity":1}`}); a.status != http.StatusConflict {
		t.Errorf("another user: %d %s, want 409 sale_not_started", a.status, a.body)
	}

	// A sold-out sale is answered from the flag in the process: the handler's own
	// share counts those, burst 10.
	soldOut := s.sale(1, 1, now.Add(-time.Minute), now.Add(time.Hour))
	path := fmt.Sprintf("/api/v1/activities/%d/orders", soldOut)
	if a := s.do(call{method: "POST", path: path, token: testutil.Token(t, 9, false), body: `{"quantity":1}`}); a.status != http.StatusAccepted {
		t.Fatalf("the only unit: %d %s", a.status, a.body)
	}
	other := testutil.Token(t, 10, false)
	codes = map[string]int{}
	for range 30 {
		a := s.do(call{method: "POST", path: path, token: other, body: `{"quantity":1}`})
		codes[fmt.Sprintf("%d %s", a.status, errorCode(a.body))]++
	}
	if codes["409 sold_out"] < burst || codes["429 rate_limited"] == 0 || len(codes) != 2 {
		t.Errorf("30 attempts at once on a sold-out sale: %v, want about the burst (%d) sold_out, then 429", codes, burst)
	}

	// So are the flag's not_admitted answers of a sold-out waiting-room sale, even when
	// the answer is worded with why the pass sent was refused.
	on, admit := true, 10
	a, err := s.svc.Catalog.CreateActivity(context.Background(), sale.NewActivity{Name: "s", ProductName: "p",
		PriceCents: 250, Stock: 1, PerUserLimit: 1, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour),
		PayWindowSeconds: 60, Room: sale.RoomPatch{WaitingRoom: &on, AdmitPerSecond: &admit}})
	if err != nil {
		t.Fatal(err)
	}
	pass, err := auth.NewPasses(testutil.JWTSecret).Sign("11", a.ID, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	path = fmt.Sprintf("/api/v1/activities/%d/orders", a.ID)
	if a := s.do(call{method: "POST", path: path, token: testutil.Token(t, 11, false), body: `{"quantity":1}`,
		header: map[string]string{handler.PassHeader: pass}}); a.status != http.StatusAccepted {
		t.Fatalf("the room's only unit, with a pass: %d %s", a.status, a.body)
	}
	codes = map[string]int{}
	for range 30 {
		a := s.do(call{method: "POST", path: path, token: testutil.Token(t, 12, false), body: `{"quantity":1}`,
			header: map[string]string{handler.PassHeader: "not-a-pass"}})
		codes[fmt.Sprintf("%d %s", a.status, errorCode(a.body))]++
	}
	if codes["409 not_admitted"] < burst || codes["429 rate_limited"] == 0 || len(codes) != 2 {
		t.Errorf("30 attempts with a forged pass on a sold-out room: %v, want about the burst (%d) not_admitted, then 429", codes, burst)
	}
}

// A replay of an acknowledged purchase gets its order back (200) even while the user's
// lock is still held, as when a lock outlives its purchase (a slow commit, an API that
// died holding it); a new purchase of that user meanwhile waits and gets 429 busy.
func TestReplayWhileLockHeld(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	act := s.sale(10, 5, now.Add(-time.Minute), now.Add(time.Hour))
	buyer := testutil.Token(t, 11, false)
	path := fmt.Sprintf("/api/v1/activities/%d/orders", act)
	first := s.do(call{method: "POST", path: path, token: buyer, body: `{"quantity":1}`,
		header: map[string]string{"Idempotency-Key": "tap-1"}})
	if first.status != http.StatusAccepted {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	// Once the first purchase's commit has released its lock, as if a later purchase took
	// it and never released it.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		err := stocktest.New(s.rdb).HoldUserLock(context.Background(), act, "11", "a-token-of-a-purchase-that-never-released", time.Minute)
		if err == nil {
			break
		}
		if !errors.Is(err, sale.ErrBusy) || time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	again := s.do(call{method: "POST", path: path, token: buyer, body: `{"quantity":1}`,
		header: map[string]string{"Idempotency-Key": "tap-1"}})
	if again.status != http.StatusOK || orderID(t, again.body) != orderID(t, first.body) {
		t.Errorf("replay while the lock is held: %d %s, want 200 and order %s", again.status, again.body, orderID(t, first.body))
	}
	wantError(t, s.do(call{method: "POST", path: path, token: buyer, body: `{"quantity":1}`,
		header: map[string]string{"Idempotency-Key": "tap-2"}}), 429, "busy")
}

func errorCode(body string) string {
	i := strings.Index(body, `"code":"`)
	if i < 0 {
		return ""
	}
	rest := body[i+8:]
	return rest[:strings.Index(rest, `"`)]
}

// What the standards the contract names allow is taken: the scheme of an Authorization
// header in any case (RFC 9110), and an RFC 3339 time with a lower-case t and z.
func TestStandardSpellings(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	open := s.sale(10, 3, now.Add(-time.Minute), now.Add(time.Hour))
	buyer := testutil.Token(t, 42, false)
	for _, scheme := range []string{"bearer", "BEARER", "beaRer"} {
		a := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", open), body: `{"quantity":1}`,
			header: map[string]string{"Authorization": scheme + " " + buyer, "Idempotency-Key": "k-" + scheme}})
		if a.status != http.StatusAccepted && a.status != http.StatusOK {
			t.Errorf("a purchase with the scheme %q: %d %s, want 202", scheme, a.status, a.body)
		}
	}
	wantError(t, s.do(call{method: "GET", path: "/api/v1/orders", header: map[string]string{"Authorization": "Basic " + buyer}}),
		http.StatusUnauthorized, "unauthorized")
	body := fmt.Sprintf(`{"name":"n","product_name":"p","price_cents":100,"stock":10,"per_user_limit":1,"starts_at":%q,"ends_at":%q}`,
		strings.ToLower(now.UTC().Format(time.RFC3339)), strings.ToLower(now.Add(time.Hour).UTC().Format(time.RFC3339)))
	if a := s.do(call{method: "POST", path: "/api/v1/admin/activities", token: testutil.Token(t, 1, true), body: body}); a.status != http.StatusCreated {
		t.Errorf("a sale with times in lower case (%s): %d %s, want 201", body, a.status, a.body)
	}
}

package handler_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"seckill/internal/altcha"
	"seckill/internal/auth"
	"seckill/internal/handler"
	"seckill/internal/testutil"
	"seckill/internal/waitingroom"
)

// The waiting room through the HTTP handlers, against real Redis and MySQL: every code
// of the contract's section, the ticket's answers, and the pass at the purchase.
func TestWaitingRoomContract(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	admin := testutil.Token(t, 1, true)
	buyer, other := testutil.Token(t, 42, false), testutil.Token(t, 43, false)
	create := func(body map[string]any) (int64, answer) {
		full := map[string]any{"name": "n", "product_name": "p", "price_cents": 100, "stock": 3,
			"per_user_limit": 1, "starts_at": now.Add(-time.Minute).Format(time.RFC3339),
			"ends_at": now.Add(time.Hour).Format(time.RFC3339)}
		for k, v := range body {
			full[k] = v
		}
		b, _ := json.Marshal(full)
		a := s.do(call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: string(b)})
		var act struct {
			ID          int64 `json:"id"`
			WaitingRoom bool  `json:"waiting_room"`
		}
		_ = json.Unmarshal([]byte(a.body), &act)
		return act.ID, a
	}
	room, a := create(map[string]any{"waiting_room": true, "admit_per_second": 100, "pass_ttl_seconds": 30})
	if a.status != http.StatusCreated {
		t.Fatalf("create a waiting-room sale: %d %s", a.status, a.body)
	}
	var echoed map[string]any
	_ = json.Unmarshal([]byte(a.body), &echoed)
	for k, v := range map[string]any{"waiting_room": true, "admit_per_second": 100.0, "pass_ttl_seconds": 30.0,
		"prequeue_seconds": 600.0, "challenge": false} {
		if echoed[k] != v {
			t.Errorf("the activity echoes %s = %v, want %v", k, echoed[k], v)
		}
	}
	plain, a := create(nil)
	if echoed = nil; json.Unmarshal([]byte(a.body), &echoed) != nil || echoed["admit_per_second"] != 0.0 || echoed["waiting_room"] != false {
		t.Errorf("a sale without a room echoes admit_per_second 0 and waiting_room false: %s", a.body)
	}
	later, _ := create(map[string]any{"waiting_room": true, "admit_per_second": 5,
		"starts_at": now.Add(time.Hour).Format(time.RFC3339), "ends_at": now.Add(2 * time.Hour).Format(time.RFC3339),
		"prequeue_seconds": 60})
	chal, _ := create(map[string]any{"waiting_room": true, "admit_per_second": 5, "challenge": true, "challenge_cost": 1000})
	ended, _ := create(map[string]any{"waiting_room": true, "admit_per_second": 5,
		"starts_at": now.Add(-2 * time.Hour).Format(time.RFC3339), "ends_at": now.Add(-time.Hour).Format(time.RFC3339)})
	lineOf := func(id int64) string { return fmt.Sprintf("/api/v1/activities/%d/line", id) }
	buy := func(id int64) string { return fmt.Sprintf("/api/v1/activities/%d/orders", id) }

	challenge := func(id int64) string {
		a := s.do(call{method: "GET", path: lineOf(id) + "/challenge"})
		var c altcha.Challenge
		if a.status != http.StatusOK || json.Unmarshal([]byte(a.body), &c) != nil || c.Algorithm != "SHA-256" {
			t.Fatalf("challenge: %d %s", a.status, a.body)
		}
		sol, err := altcha.Solve(c)
		if err != nil {
			t.Fatal(err)
		}
		return sol
	}
	solved := challenge(chal)
	withSolution := func(sol string) string { b, _ := json.Marshal(map[string]string{"altcha": sol}); return string(b) }

	for _, tt := range []struct {
		name   string
		c      call
		status int
		code   string
	}{
		{"admin: room without a rate", call{method: "POST", path: "/api/v1/admin/activities", token: admin,
			body: fmt.Sprintf(`{"name":"n","product_name":"p","price_cents":1,"stock":1,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"waiting_room":true}`,
				now.Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))}, 400, "invalid_request"},
		{"admin: pass TTL too short", call{method: "PATCH", path: fmt.Sprintf("/api/v1/admin/activities/%d", room), token: admin, body: `{"pass_ttl_seconds":29}`}, 400, "invalid_request"},
		{"admin: rate not a number", call{method: "PATCH", path: fmt.Sprintf("/api/v1/admin/activities/%d", room), token: admin, body: `{"admit_per_second":"fast"}`}, 400, "invalid_request"},
		{"join without a token", call{method: "POST", path: lineOf(room), body: `{}`}, 401, "unauthorized"},
		{"join without a body", call{method: "POST", path: lineOf(room), token: buyer}, 400, "invalid_request"},
		{"join with a solution of the wrong type", call{method: "POST", path: lineOf(chal), token: buyer, body: `{"altcha":1}`}, 400, "invalid_request"},
		{"join a sale without a room", call{method: "POST", path: lineOf(plain), token: buyer, body: `{}`}, 409, "no_waiting_room"},
		{"challenge of a sale without a room", call{method: "GET", path: lineOf(plain) + "/challenge"}, 409, "no_waiting_room"},
		{"join no such sale", call{method: "POST", path: lineOf(999999), token: buyer, body: `{}`}, 404, "not_found"},
		{"join before the line opens", call{method: "POST", path: lineOf(later), token: buyer, body: `{}`}, 409, "line_not_open"},
		{"join an ended sale", call{method: "POST", path: lineOf(ended), token: buyer, body: `{}`}, 409, "sale_ended"},
		{"join an ended sale with a garbled solution", call{method: "POST", path: lineOf(ended), token: buyer, body: `{"altcha":"bm90IGpzb24="}`}, 409, "sale_ended"},
		{"join without the challenge", call{method: "POST", path: lineOf(chal), token: buyer, body: `{}`}, 400, "challenge_required"},
		{"join with a garbled solution", call{method: "POST", path: lineOf(chal), token: buyer, body: `{"altcha":"bm90IGpzb24="}`}, 403, "challenge_failed"},
		{"join with another sale's solution", call{method: "POST", path: lineOf(room), token: other, body: withSolution(solved)}, 403, "challenge_failed"},
		{"ticket of a buyer who never joined", call{method: "GET", path: lineOf(room), token: buyer}, 404, "not_found"},
		{"join with a service token", call{method: "POST", path: lineOf(room), token: testutil.ServiceToken(t, 900), body: `{}`}, 403, "forbidden"},
		{"ticket with a service token", call{method: "GET", path: lineOf(room), token: testutil.ServiceToken(t, 900)}, 403, "forbidden"},
		{"buy without a pass", call{method: "POST", path: buy(room), token: buyer, body: `{"quantity":1}`}, 409, "not_admitted"},
		{"buy with a forged pass", call{method: "POST", path: buy(room), token: buyer, body: `{"quantity":1}`,
			header: map[string]string{handler.PassHeader: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0MiJ9.c2lnbmF0dXJl"}}, 409, "not_admitted"},
	} {
		t.Run(tt.name, func(t *testing.T) { wantError(t, s.do(tt.c), tt.status, tt.code) })
	}

	// The challenge: solved once, joins; replayed by another buyer, refused.
	if a := s.do(call{method: "POST", path: lineOf(chal), token: buyer, body: withSolution(solved)}); a.status != http.StatusCreated {
		t.Fatalf("join with a solution: %d %s", a.status, a.body)
	}
	wantError(t, s.do(call{method: "POST", path: lineOf(chal), token: other, body: withSolution(solved)}), 403, "challenge_failed")
	if a := s.do(call{method: "POST", path: lineOf(chal), token: buyer, body: withSolution(solved)}); a.status != http.StatusOK {
		t.Errorf("the joined buyer sends its used solution again: %d %s, want 200 and the ticket", a.status, a.body)
	}

	// Join: 201, then 200 with the same ticket; admitted by the line, the pass buys.
	first := s.do(call{method: "POST", path: lineOf(room), token: buyer, body: `{}`})
	second := s.do(call{method: "POST", path: lineOf(room), token: buyer, body: `{}`})
	if first.status != http.StatusCreated || second.status != http.StatusOK || first.body != second.body {
		t.Fatalf("join twice: %d %s then %d %s", first.status, first.body, second.status, second.body)
	}
	s.do(call{method: "POST", path: lineOf(room), token: other, body: `{}`})
	if _, err := s.line.Admit(t.Context(), room); err != nil {
		t.Fatal(err)
	}
	ticket := func(token string) waitingroom.Ticket {
		a := s.do(call{method: "GET", path: lineOf(room), token: token})
		var tk waitingroom.Ticket
		if a.status != http.StatusOK || json.Unmarshal([]byte(a.body), &tk) != nil {
			t.Fatalf("ticket: %d %s", a.status, a.body)
		}
		return tk
	}
	mine, theirs := ticket(buyer), ticket(other)
	if mine.Status != waitingroom.Admitted || mine.Pass == "" || mine.AdmittedAt == nil || mine.PassExpiresAt == nil {
		t.Fatalf("admitted ticket: %+v", mine)
	}
	otherSale, err := auth.NewPasses(testutil.JWTSecret).Sign("42", plain, mine.PassExpiresAt.Time)
	if err != nil {
		t.Fatal(err)
	}
	withPass := func(p string) map[string]string { return map[string]string{handler.PassHeader: p} }
	wantError(t, s.do(call{method: "POST", path: buy(room), token: buyer, body: `{"quantity":1}`, header: withPass(theirs.Pass)}), 409, "not_admitted")
	wantError(t, s.do(call{method: "POST", path: buy(room), token: buyer, body: `{"quantity":1}`, header: withPass(otherSale)}), 409, "not_admitted")
	if a := s.do(call{method: "POST", path: buy(room), token: buyer, body: `{"quantity":1}`, header: withPass(mine.Pass)}); a.status != http.StatusAccepted {
		t.Fatalf("buy with the pass: %d %s", a.status, a.body)
	}
	// Past its TTL (30 s, by the clock the service judges with) the pass buys nothing.
	s.clock.Advance(31 * time.Second)
	defer s.clock.Advance(-31 * time.Second)
	wantError(t, s.do(call{method: "POST", path: buy(room), token: other, body: `{"quantity":1}`, header: withPass(theirs.Pass)}), 409, "not_admitted")
	if tk := ticket(other); tk.Status != waitingroom.Expired || tk.Pass != "" {
		t.Errorf("an unused pass past its TTL: %+v", tk)
	}
	var figures waitingroom.Figures
	a = s.do(call{method: "GET", path: fmt.Sprintf("/api/v1/admin/activities/%d/line", room), token: admin})
	if a.status != http.StatusOK || json.Unmarshal([]byte(a.body), &figures) != nil || figures.Admitted != 2 || figures.Used != 1 {
		t.Errorf("admin line figures: %d %s", a.status, a.body)
	}
	wantError(t, s.do(call{method: "GET", path: fmt.Sprintf("/api/v1/admin/activities/%d/line", room), token: buyer}), 403, "forbidden")
}

// A line whose sale Redis lost answers as a purchase does: 503 while the sale is
// rebuilt from MySQL (the room's settings with it), then the join goes through.
func TestLineOfALostSale(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	a := s.do(call{method: "POST", path: "/api/v1/admin/activities", token: testutil.Token(t, 1, true),
		body: fmt.Sprintf(`{"name":"n","product_name":"p","price_cents":1,"stock":5,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"waiting_room":true,"admit_per_second":10}`,
			now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))})
	var act struct {
		ID int64 `json:"id"`
	}
	if a.status != http.StatusCreated || json.Unmarshal([]byte(a.body), &act) != nil {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	if err := s.rdb.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	path, buyer := fmt.Sprintf("/api/v1/activities/%d/line", act.ID), testutil.Token(t, 42, false)
	wantError(t, s.do(call{method: "POST", path: path, token: buyer, body: `{}`}), 503, "unavailable")
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := s.do(call{method: "POST", path: path, token: buyer, body: `{}`})
		if a.status == http.StatusCreated {
			break
		}
		if a.status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("join while the sale is rebuilt: %d %s, want 503 then 201", a.status, a.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantError(t, s.do(call{method: "POST", path: "/api/v1/activities/999999/line", token: buyer, body: `{}`}), 404, "not_found")
}

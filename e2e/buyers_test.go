package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seckill/internal/buyer"
	"seckill/internal/testutil"
)

// subjects are buyers an identity provider names: a UUID (Okta, Keycloak, Cognito), an
// Auth0 subject, a Google subject of 21 digits (past int64), and a decimal user id.
var subjects = []string{"8f14e45f-ceea-467f-a0e7-5ad1c4b1c0c2", "auth0|64f1c2a9e0b7d3f1a2c4e6b8",
	"109876543210987654321", "4242"}

// buyerNamed fails the test unless the object names the buyer as the contract says:
// "buyer" the subject, "user_id" only for a decimal one.
func buyerNamed(t *testing.T, what string, body []byte, subject string) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v in %s", what, err, body)
	}
	userID, has := v["user_id"]
	n, decimal := buyer.ID(subject).UserID()
	if v["buyer"] != subject || has != decimal || decimal && userID != float64(n) {
		t.Errorf("%s names buyer %v, user %v; want %q (user_id only for a decimal subject): %s",
			what, v["buyer"], userID, subject, body)
	}
}

// Buyers of any subject, signed by a shop's identity provider (a JWKS), through real
// API and worker processes: each buys under the limit and is refused past it, replays
// its Idempotency-Key, lists its own orders (and not another's), takes a seat in a
// group, waits in a sale's line and buys with its pass (and not with another's); after
// Redis loses the sale and an admin rebuilds it from MySQL, each still holds what it
// held (the limit holds), its key still replays, and the ledger balances.
func TestAnySubjectIsABuyer(t *testing.T) {
	p := testutil.StartIdP(t)
	p.AddKey("rsa-1", "RS256")
	s := testutil.StartStack(t, "SECKILL_JWT_JWKS_URL="+p.URL, "SECKILL_JWT_ISSUER=https://idp.example",
		"SECKILL_JWT_AUDIENCE=seckill")
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	tokens := map[string]string{}
	for _, sub := range subjects {
		tokens[sub] = p.Sign("rsa-1", jwt.MapClaims{"sub": sub, "role": "user", "iss": "https://idp.example",
			"aud": "seckill", "exp": time.Now().Add(time.Hour).Unix()})
	}
	for _, bad := range []string{"", string(make([]byte, 256)), "auth0|4\x012"} {
		r := c.must("GET", "/api/v1/orders", p.Sign("rsa-1", jwt.MapClaims{"sub": bad, "role": "user",
			"iss": "https://idp.example", "aud": "seckill", "exp": time.Now().Add(time.Hour).Unix()}), nil)
		if r.Status != http.StatusUnauthorized || r.errorCode() != "unauthorized" {
			t.Errorf("a token whose subject is %q: %d %s, want 401 unauthorized", bad, r.Status, r.Body)
		}
	}

	a := c.createSale(admin, 100, 2)
	path := fmt.Sprintf("/api/v1/activities/%d/orders", a.ID)
	first := map[string]order{}
	for _, sub := range subjects {
		r := c.must("POST", path, tokens[sub], map[string]int{"quantity": 1}, "Idempotency-Key", "first")
		if r.Status != http.StatusAccepted {
			t.Fatalf("%q's first purchase: %d %s", sub, r.Status, r.Body)
		}
		buyerNamed(t, sub+"'s order", r.Body, sub)
		var o order
		r.decode(t, &o)
		first[sub] = o
		again := c.must("POST", path, tokens[sub], map[string]int{"quantity": 1}, "Idempotency-Key", "first")
		var replayed order
		if again.Status == http.StatusOK {
			again.decode(t, &replayed)
		}
		if replayed.ID != o.ID {
			t.Errorf("%q's replay: %d %s, want 200 with order %s", sub, again.Status, again.Body, o.ID)
		}
		if r := c.must("POST", path, tokens[sub], map[string]int{"quantity": 1}); r.Status != http.StatusAccepted {
			t.Fatalf("%q's second purchase: %d %s", sub, r.Status, r.Body)
		}
		if r := c.must("POST", path, tokens[sub], map[string]int{"quantity": 1}); r.Status != http.StatusConflict || r.errorCode() != "limit_exceeded" {
			t.Errorf("%q's purchase past the limit: %d %s, want 409 limit_exceeded", sub, r.Status, r.Body)
		}
	}
	for i, sub := range subjects {
		r := c.must("GET", "/api/v1/orders", tokens[sub], nil)
		var list struct{ Orders []json.RawMessage }
		r.decode(t, &list)
		if len(list.Orders) != 2 {
			t.Errorf("%q's orders: %s, want its two", sub, r.Body)
		}
		for _, o := range list.Orders {
			buyerNamed(t, sub+"'s listed order", o, sub)
		}
		other := subjects[(i+1)%len(subjects)]
		if r := c.must("GET", "/api/v1/orders/"+first[sub].ID, tokens[other], nil); r.Status != http.StatusNotFound {
			t.Errorf("%q reads %q's order: %d %s, want 404", other, sub, r.Status, r.Body)
		}
	}

	// A group of the four.
	gs := createGroupSale(t, singleRedis(t, s), c, admin, 20, 1, len(subjects), 1, time.Minute)
	r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/groups", gs.ID), tokens[subjects[0]], map[string]int{"quantity": 1})
	var opened seatAnswer
	if r.Status != http.StatusAccepted {
		t.Fatalf("%q opens a group: %d %s", subjects[0], r.Status, r.Body)
	}
	r.decode(t, &opened)
	for _, sub := range subjects[1:] {
		r := c.must("POST", "/api/v1/groups/"+opened.Group.ID+"/join", tokens[sub], map[string]int{"quantity": 1})
		if r.Status != http.StatusAccepted {
			t.Fatalf("%q joins: %d %s", sub, r.Status, r.Body)
		}
		var seat struct{ Order json.RawMessage }
		r.decode(t, &seat)
		buyerNamed(t, sub+"'s seat", seat.Order, sub)
	}
	if r := c.must("POST", "/api/v1/groups/"+opened.Group.ID+"/join", tokens[subjects[1]], map[string]int{"quantity": 1}); r.Status != http.StatusConflict {
		t.Errorf("a second seat of %q: %d %s, want 409", subjects[1], r.Status, r.Body)
	}
	c.waitDrained(admin, gs.ID, 30*time.Second)
	var listed struct {
		Groups []struct {
			ID           string
			Status       string
			MemberBuyers []struct{ Buyer string } `json:"member_buyers"`
			MemberIDs    []int64                  `json:"member_ids"`
		}
	}
	c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/groups", gs.ID), admin, nil).decode(t, &listed)
	if len(listed.Groups) != 1 || listed.Groups[0].Status != "complete" || len(listed.Groups[0].MemberBuyers) != len(subjects) ||
		!slices.Equal(listed.Groups[0].MemberIDs, []int64{4242}) {
		t.Errorf("the admin's groups: %+v, want one complete of the four, user 4242 among them", listed.Groups)
	}
	for _, m := range listed.Groups[0].MemberBuyers {
		if !slices.Contains(subjects, m.Buyer) {
			t.Errorf("group member %q is none of the buyers", m.Buyer)
		}
	}

	// A waiting room: each joins the line, is admitted, and buys with its own pass.
	rs := c.createRoomSale(admin, 20, 100, time.Now(), nil)
	line := fmt.Sprintf("/api/v1/activities/%d/line", rs.ID)
	for _, sub := range subjects {
		r := c.must("POST", line, tokens[sub], map[string]any{})
		if r.Status != http.StatusCreated {
			t.Fatalf("%q joins the line: %d %s", sub, r.Status, r.Body)
		}
		buyerNamed(t, sub+"'s ticket", r.Body, sub)
	}
	passes := map[string]string{}
	for _, sub := range subjects {
		for deadline := time.Now().Add(30 * time.Second); passes[sub] == ""; time.Sleep(50 * time.Millisecond) {
			var tk ticket
			c.must("GET", line, tokens[sub], nil).decode(t, &tk)
			if tk.Buyer != sub {
				t.Fatalf("%q's ticket names %q", sub, tk.Buyer)
			}
			passes[sub] = tk.Pass
			if time.Now().After(deadline) {
				t.Fatalf("%q not admitted within 30 s: %+v", sub, tk)
			}
		}
	}
	roomPath := fmt.Sprintf("/api/v1/activities/%d/orders", rs.ID)
	for i, sub := range subjects {
		other := subjects[(i+1)%len(subjects)]
		if r := c.must("POST", roomPath, tokens[sub], map[string]int{"quantity": 1}, "X-Sale-Pass", passes[other]); r.Status != http.StatusConflict || r.errorCode() != "not_admitted" {
			t.Errorf("%q buys with %q's pass: %d %s, want 409 not_admitted", sub, other, r.Status, r.Body)
		}
		r := c.must("POST", roomPath, tokens[sub], map[string]int{"quantity": 1}, "X-Sale-Pass", passes[sub])
		if r.Status != http.StatusAccepted {
			t.Fatalf("%q buys with its pass: %d %s", sub, r.Status, r.Body)
		}
		buyerNamed(t, sub+"'s order with a pass", r.Body, sub)
	}

	// Redis loses the plain sale; an admin rebuilds it from MySQL.
	c.waitDrained(admin, a.ID, 30*time.Second)
	rdb := s.Redis.Client(t)
	keys, err := rdb.Keys(context.Background(), fmt.Sprintf("seckill:{act:%d}:*", a.ID)).Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("sale %d's keys: %v, %v", a.ID, keys, err)
	}
	if err := rdb.Del(context.Background(), keys...).Err(); err != nil {
		t.Fatal(err)
	}
	if r := c.must("POST", fmt.Sprintf("/api/v1/admin/activities/%d/rebuild", a.ID), admin, nil); r.Status != http.StatusOK {
		t.Fatalf("rebuild: %d %s", r.Status, r.Body)
	}
	for _, sub := range subjects {
		if r := c.must("POST", path, tokens[sub], map[string]int{"quantity": 1}); r.Status != http.StatusConflict || r.errorCode() != "limit_exceeded" {
			t.Errorf("%q's purchase past the limit after the rebuild: %d %s, want 409 limit_exceeded", sub, r.Status, r.Body)
		}
		r := c.must("POST", path, tokens[sub], map[string]int{"quantity": 1}, "Idempotency-Key", "first")
		var o order
		if r.Status == http.StatusOK {
			r.decode(t, &o)
		}
		if o.ID != first[sub].ID {
			t.Errorf("%q's replay after the rebuild: %d %s, want 200 with order %s", sub, r.Status, r.Body, first[sub].ID)
		}
	}
	var ledger struct {
		Balanced        bool
		UserDifferences []json.RawMessage `json:"user_differences"`
	}
	c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/ledger", a.ID), admin, nil).decode(t, &ledger)
	if !ledger.Balanced || len(ledger.UserDifferences) != 0 {
		t.Errorf("ledger after the rebuild: %+v, want balanced", ledger)
	}
}

// The same buyers buy on a Redis Cluster, in a sale of three buckets whose buyers' home
// buckets sit on three masters: under the limit, refused past it, replays answered.
func TestAnySubjectIsABuyerOnACluster(t *testing.T) {
	cl := sharedCluster(t)
	s := testutil.StartStackOnRedis(t, testutil.MySQL(t), cl.Env(), 1, 1, "SECKILL_REDIS_MIN_REPLICAS=1")
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	for _, k := range []int{1, 3} {
		a := c.createBucketSale(admin, 100, 2, k)
		path := fmt.Sprintf("/api/v1/activities/%d/orders", a.ID)
		for _, sub := range subjects {
			token := testutil.TokenOf(t, buyer.ID(sub), false)
			r := c.must("POST", path, token, map[string]int{"quantity": 2}, "Idempotency-Key", "k")
			if r.Status != http.StatusAccepted {
				t.Fatalf("buckets=%d: %q buys: %d %s", k, sub, r.Status, r.Body)
			}
			buyerNamed(t, sub+"'s order", r.Body, sub)
			if again := c.must("POST", path, token, map[string]int{"quantity": 2}, "Idempotency-Key", "k"); again.Status != http.StatusOK {
				t.Errorf("buckets=%d: %q's replay: %d %s, want 200", k, sub, again.Status, again.Body)
			}
			if r := c.must("POST", path, token, map[string]int{"quantity": 1}); r.Status != http.StatusConflict || r.errorCode() != "limit_exceeded" {
				t.Errorf("buckets=%d: %q past the limit: %d %s, want 409 limit_exceeded", k, sub, r.Status, r.Body)
			}
		}
		c.waitDrained(admin, a.ID, 30*time.Second)
		var ledger struct{ Balanced bool }
		c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/ledger", a.ID), admin, nil).decode(t, &ledger)
		if !ledger.Balanced {
			t.Errorf("buckets=%d: the ledger is not balanced", k)
		}
	}
}

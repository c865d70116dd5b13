package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seckill/internal/testutil"
)

// createSaleWith creates an active sale with the given fields added to a plain one (a
// nil value drops the field).
func (c *client) createSaleWith(admin string, stock int64, limit int, extra map[string]any) activity {
	c.t.Helper()
	now := time.Now().UTC()
	body := map[string]any{"name": "e2e sale", "product_name": "widget", "price_cents": 1500, "stock": stock,
		"per_user_limit": limit, "starts_at": now.Add(-time.Minute).Format(time.RFC3339),
		"ends_at": now.Add(time.Hour).Format(time.RFC3339)}
	for k, v := range extra {
		if v == nil {
			delete(body, k)
		} else {
			body[k] = v
		}
	}
	r := c.must("POST", "/api/v1/admin/activities", admin, body)
	if r.Status != http.StatusCreated {
		c.t.Fatalf("create sale: %d %s", r.Status, r.Body)
	}
	var a activity
	r.decode(c.t, &a)
	return a
}

// buyOne buys one unit of a sale as user and returns the order's id, or "" after
// failing the test (it may run in goroutines of the test).
func (c *client) buyOne(activityID, user int64) string {
	c.t.Helper()
	r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", activityID), testutil.Token(c.t, user, false), map[string]int{"quantity": 1})
	if r.Status != http.StatusAccepted {
		c.t.Errorf("buy as user %d: %d %s", user, r.Status, r.Body)
		return ""
	}
	var o order
	r.decode(c.t, &o)
	return o.ID
}

// buyEach buys one unit for each of n users from firstUser on, one after the other,
// waits until MySQL has every order, and returns their ids.
func (c *client) buyEach(admin string, activityID, firstUser int64, n int) []string {
	c.t.Helper()
	ids := make([]string, n)
	for i := range n {
		if ids[i] = c.buyOne(activityID, firstUser+int64(i)); ids[i] == "" {
			c.t.FailNow()
		}
	}
	c.waitDrained(admin, activityID, time.Minute)
	return ids
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
	ids := c.buyEach(admin, a.ID, 2000, n)
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
	g := testutil.NewGoroutines(t)
	for i := range n {
		wg.Go(func() {
			// The confirmation's own instant, against the window's end, is what is tested.
			time.Sleep(time.Until(expires[i].Add(time.Duration(i-25) * 10 * time.Millisecond)))
			answers[i] = c.on(g).must("POST", "/api/v1/orders/"+ids[i]+"/pay", shop, nil)
		})
	}
	wg.Wait()
	g.Report()

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
	c.wantBalanced(admin, a.ID)
}

// Tokens of a shop's identity provider through the real API: RS256 and ES256 keys of a
// local JWKS server, iss and aud, alg confusion, rotation limited to one fetch per 10 s,
// and the provider stopped: the keys fetched last keep working, unknown ones get 401
// (never a 500), and readiness does not depend on it, even for an API started meanwhile.
func TestIdentityProviderTokens(t *testing.T) {
	p := testutil.StartIdP(t)
	p.AddKey("rsa-1", "RS256")
	p.AddKey("ec-1", "ES256")
	s := testutil.StartStack(t, "SECKILL_JWT_JWKS_URL="+p.URL, "SECKILL_JWT_ISSUER=https://idp.example",
		"SECKILL_JWT_AUDIENCE=seckill", "SECKILL_JWT_ADMIN_ROLES=admin", "SECKILL_JWT_SERVICE_ROLES=service")
	c := newClient(t, s.URL)
	token := func(kid string, sub int, role string, replace ...any) string {
		claims := jwt.MapClaims{"sub": fmt.Sprint(sub), "role": role, "iss": "https://idp.example", "aud": "seckill",
			"exp": time.Now().Add(time.Hour).Unix()}
		for i := 0; i+1 < len(replace); i += 2 {
			claims[replace[i].(string)] = replace[i+1]
		}
		return p.Sign(kid, claims)
	}
	status := func(r response, want int, code string) {
		t.Helper()
		if r.Status != want || code != "" && r.errorCode() != code {
			t.Errorf("got %d %s, want %d %s", r.Status, r.Body, want, code)
		}
	}

	a := c.createSale(token("ec-1", 1, "admin"), 10, 2) // an ES256 admin token
	status(c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), token("rsa-1", 5001, "user"), map[string]int{"quantity": 1}), http.StatusAccepted, "")
	status(c.must("GET", "/api/v1/orders", testutil.Token(t, 5001, false), nil), http.StatusOK, "") // HS256 beside them
	status(c.must("GET", "/api/v1/orders", token("rsa-1", 5001, "user", "iss", "https://evil.example"), nil), http.StatusUnauthorized, "unauthorized")
	status(c.must("GET", "/api/v1/orders", token("rsa-1", 5001, "user", "aud", "other"), nil), http.StatusUnauthorized, "unauthorized")
	status(c.must("GET", "/api/v1/admin/activities", token("rsa-1", 5001, "user"), nil), http.StatusForbidden, "forbidden")
	// Alg confusion: an HS256 token keyed with the RSA key's public half, and an ES256
	// token naming the RSA key, are refused.
	der, err := x509.MarshalPKIXPublicKey(p.PublicKey("rsa-1"))
	if err != nil {
		t.Fatal(err)
	}
	public := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	confused := jwt.MapClaims{"sub": "5001", "role": "admin", "iss": "https://idp.example", "aud": "seckill",
		"exp": time.Now().Add(time.Hour).Unix()}
	for _, tok := range []string{p.SignWith("rsa-1", jwt.SigningMethodHS256, public, confused),
		p.SignWith("rsa-1", jwt.SigningMethodES256, ec, confused)} {
		status(c.must("GET", "/api/v1/admin/activities", tok, nil), http.StatusUnauthorized, "unauthorized")
	}

	// Rotation: a new key is fetched on its first token; a second one within 10 s is not.
	fetches := p.Fetches()
	p.AddKey("rsa-2", "RS256")
	status(c.must("GET", "/api/v1/orders", token("rsa-2", 5002, "user"), nil), http.StatusOK, "")
	rotated := time.Now()
	p.AddKey("rsa-3", "RS256")
	for time.Since(rotated) < 7*time.Second {
		status(c.must("GET", "/api/v1/orders", token("rsa-3", 5003, "user"), nil), http.StatusUnauthorized, "unauthorized")
		// Every 500 ms within the fetch limit's 10 s: the behaviour under test.
		time.Sleep(500 * time.Millisecond)
	}
	if got := p.Fetches() - fetches; got != 1 {
		t.Errorf("%d fetches of the key set for two new keys within 7 s, want 1", got)
	}
	// The fetch limit's 10 s pass: the behaviour under test.
	time.Sleep(time.Until(rotated.Add(10 * time.Second)))
	status(c.must("GET", "/api/v1/orders", token("rsa-3", 5003, "user"), nil), http.StatusOK, "")

	// The provider stops.
	p.Stop()
	p.AddKey("rsa-4", "RS256")
	// The fetch limit's 10 s pass, so a fetch is allowed again, and fails: the behaviour under
	// test.
	time.Sleep(10 * time.Second)
	status(c.must("GET", "/api/v1/orders", token("rsa-1", 5011, "user"), nil), http.StatusOK, "")
	status(c.must("GET", "/api/v1/orders", token("ec-1", 5012, "user"), nil), http.StatusOK, "")
	status(c.must("GET", "/api/v1/orders", token("rsa-4", 5014, "user"), nil), http.StatusUnauthorized, "unauthorized")
	status(c.must("GET", "/readyz", "", nil), http.StatusOK, "")
	// An API started while the provider is down becomes ready, refuses its tokens, and
	// takes them once the provider is back.
	_, url := s.StartAPI(t)
	late := newClient(t, url)
	status(late.must("GET", "/api/v1/orders", token("rsa-1", 5021, "user"), nil), http.StatusUnauthorized, "unauthorized")
	status(late.must("GET", "/api/v1/orders", testutil.Token(t, 5021, false), nil), http.StatusOK, "")
	p.Start()
	// The fetch limit's 10 s pass with the provider back: the behaviour under test.
	time.Sleep(10 * time.Second)
	status(late.must("GET", "/api/v1/orders", token("rsa-4", 5024, "user"), nil), http.StatusOK, "")
	status(late.must("GET", "/api/v1/orders", token("rsa-1", 5025, "user"), nil), http.StatusOK, "")
}

// wantBalanced checks that the sale's ledger balances.
func (c *client) wantBalanced(admin string, activityID int64) {
	c.t.Helper()
	r := c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/ledger", activityID), admin, nil)
	var l struct {
		Balanced bool `json:"balanced"`
	}
	r.decode(c.t, &l)
	if r.Status != http.StatusOK || !l.Balanced {
		c.t.Errorf("ledger: %d %s", r.Status, r.Body)
	}
}

// shopCall POSTs as the shop's back end does (docs/integration.md, the payment flow): a
// 503 or a 429 is no answer, and the same call is sent again after Retry-After, for up
// to 30 s.
func (c *client) shopCall(path, token string, body any) response {
	for deadline := time.Now().Add(30 * time.Second); ; {
		r := c.must("POST", path, token, body)
		if r.Status != http.StatusServiceUnavailable && r.Status != http.StatusTooManyRequests || time.Now().After(deadline) {
			return r
		}
		time.Sleep(time.Second)
	}
}

// refundAnswer is an order as a refund answered it.
type refundAnswer struct {
	Status     string     `json:"status"`
	RefundedAt *time.Time `json:"refunded_at"`
	Restock    *bool      `json:"restock"`
}

// The shop confirms and refunds orders around the instant their pay windows end, while
// the worker's expiry job cancels the unpaid ones and gives their units back on its
// own: per order, a confirmation and three refunds at once (restock on for even orders),
// from 2 s before its window's end to 1 s after, and for every fourth order refunds
// alone, never a confirmation. Each order ends
// refunded (its confirmation 200, every refund 200 with one refunded_at and restock) or
// cancelled (refunds 409 order_not_refundable), its events say so once each, every unit
// comes back once (to stock, or off sale), the refunded buyers buy again, and the ledger
// balances. Every event carries the sale's external_ref.
func TestShopRefundsRaceTheWorker(t *testing.T) {
	s := testutil.StartStack(t, "SECKILL_WEBHOOK_ALLOW_PRIVATE=true")
	c := newClient(t, s.URL)
	admin, shop := testutil.Token(t, 1, true), testutil.ServiceToken(t, 900)
	hooks := testutil.StartReceiver(t)
	c.subscribe(admin, hooks)
	const n, refunders = 40, 3
	a := c.createSaleWith(admin, n, 1, map[string]any{"pay_window_seconds": 10, "external_ref": "SKU-RACE"})
	ids := c.buyEach(admin, a.ID, 3000, n)
	// Outside dev mode the buyer cannot mark the order paid; it is the shop's to confirm.
	if r := c.must("POST", "/api/v1/orders/"+ids[0]+"/pay", testutil.Token(t, 3000, false), nil); r.Status != http.StatusForbidden ||
		r.errorCode() != "payment_by_shop" {
		t.Errorf("the buyer's own payment: %d %s, want 403 payment_by_shop", r.Status, r.Body)
	}
	expires := make([]time.Time, n)
	for i, id := range ids {
		var o struct {
			ExpiresAt time.Time `json:"expires_at"`
		}
		c.must("GET", "/api/v1/orders/"+id, shop, nil).decode(t, &o)
		expires[i] = o.ExpiresAt
	}

	confirmations := make([]response, n)
	refunds := make([][]response, n)
	var wg sync.WaitGroup
	for i := range n {
		refunds[i] = make([]response, refunders)
		confirmed := i%4 != 3
		at := expires[i].Add(time.Duration(i-n/2)*75*time.Millisecond - 500*time.Millisecond)
		if confirmed {
			wg.Go(func() {
				time.Sleep(time.Until(at))
				confirmations[i] = c.shopCall("/api/v1/orders/"+ids[i]+"/pay", shop, nil)
			})
		}
		for r := range refunders {
			wg.Go(func() {
				time.Sleep(time.Until(at))
				body := map[string]bool{"restock": i%2 == 0}
				// A refund refused while the confirmation is on its way is sent again
				// until the order is cancelled, or the refund answers 200.
				for deadline := time.Now().Add(20 * time.Second); ; {
					refunds[i][r] = c.shopCall("/api/v1/orders/"+ids[i]+"/refund", shop, body)
					if refunds[i][r].errorCode() != "order_not_refundable" || time.Now().After(deadline) {
						return
					}
					var o order
					c.must("GET", "/api/v1/orders/"+ids[i], shop, nil).decode(t, &o)
					if o.Status == "cancelled" {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			})
		}
	}
	wg.Wait()

	want := map[string][]string{}
	var refunded, cancelled, restocked []int
	for i, id := range ids {
		var o refundAnswer
		c.must("GET", "/api/v1/orders/"+id, shop, nil).decode(t, &o)
		ok := 0
		for _, r := range refunds[i] {
			var got refundAnswer
			if r.Status == http.StatusOK {
				ok++
				r.decode(t, &got)
				if got.Status != "refunded" || o.RefundedAt == nil || !got.RefundedAt.Equal(*o.RefundedAt) || *got.Restock != *o.Restock {
					t.Errorf("order %s: a refund answered %s, the order reads %s", id, r.Body, o.Status)
				}
			} else if r.errorCode() != "order_not_refundable" {
				t.Errorf("order %s: a refund answered %d %s", id, r.Status, r.Body)
			}
		}
		paid := confirmations[i].Status == http.StatusOK
		switch {
		case o.Status == "refunded" && paid && ok == refunders:
			refunded = append(refunded, i)
			want[id] = []string{"order.created", "order.paid", "order.refunded"}
			if *o.Restock {
				restocked = append(restocked, i)
			}
		case o.Status == "cancelled" && !paid && ok == 0:
			cancelled = append(cancelled, i)
			want[id] = []string{"order.created", "order.cancelled"}
		default:
			t.Errorf("order %s is %s: the confirmation answered %d %s, %d refunds 200", id, o.Status,
				confirmations[i].Status, confirmations[i].Body, ok)
		}
	}
	t.Logf("%d refunded (%d restocked), %d cancelled", len(refunded), len(restocked), len(cancelled))
	if len(refunded) == 0 || len(cancelled) == 0 {
		t.Errorf("refunded %d, cancelled %d: the refunds did not straddle the windows' ends", len(refunded), len(cancelled))
	}

	waitUntil(t, "the events of every order", time.Minute, func() bool {
		got, _ := eventsBySubject(t, hooks)
		for id, types := range want {
			if len(got[id]) < len(types) {
				return false
			}
		}
		return true
	})
	got, _ := eventsBySubject(t, hooks)
	for id, types := range want {
		if fmt.Sprint(got[id]) != fmt.Sprint(types) {
			t.Errorf("order %s: events %v, want %v", id, got[id], types)
		}
	}
	for _, d := range hooks.Accepted() {
		var ev struct {
			Data struct {
				Order struct {
					ID      string `json:"id"`
					Restock *bool  `json:"restock"`
				} `json:"order"`
				ExternalRef string `json:"external_ref"`
			} `json:"data"`
		}
		switch {
		case json.Unmarshal(d.Body, &ev) != nil || ev.Data.ExternalRef != "SKU-RACE":
			t.Errorf("an order event without the sale's external_ref: %s", d.Body)
		case d.Type == "order.refunded" && ev.Data.Order.Restock == nil:
			t.Errorf("order.refunded without restock: %s", d.Body)
		}
	}

	// Every unit back once: to stock (cancelled, refunded with restock) or off sale.
	wantAvailable, wantOff := int64(len(cancelled)+len(restocked)), int64(len(refunded)-len(restocked))
	waitUntil(t, "the units back", 30*time.Second, func() bool {
		st := c.stats(admin, a.ID)
		return st.StockAvailable == wantAvailable && st.OffSale == wantOff && st.Sold == 0 &&
			st.Orders.Refunded == int64(len(refunded)) && st.Orders.Cancelled == int64(len(cancelled))
	})
	c.wantBalanced(admin, a.ID)
	// A refunded buyer is under the limit of 1 again, and buys.
	if id := c.buyOne(a.ID, 3000+int64(restocked[0])); id == "" {
		t.Error("a refunded buyer could not buy again")
	}
}

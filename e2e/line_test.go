package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/auth"
	"seckill/internal/buyer"
	"seckill/internal/testutil"
)

type ticket struct {
	Buyer         string     `json:"buyer"`
	Status        string     `json:"status"`
	Position      int64      `json:"position"`
	Ahead         int64      `json:"ahead"`
	UnitsLeft     int64      `json:"units_left"`
	EstimatedWait int64      `json:"estimated_wait_seconds"`
	AdmittedAt    *time.Time `json:"admitted_at"`
	Pass          string     `json:"pass"`
	PassExpiresAt *time.Time `json:"pass_expires_at"`
}

// createRoomSale creates a sale with a waiting room that starts at start.
func (c *client) createRoomSale(admin string, stock int64, rate int, start time.Time, extra map[string]any) activity {
	c.t.Helper()
	body := map[string]any{"name": "room sale", "product_name": "widget", "price_cents": 1500, "stock": stock,
		"per_user_limit": 1, "starts_at": start.UTC().Format(time.RFC3339Nano),
		"ends_at": start.Add(time.Hour).UTC().Format(time.RFC3339Nano), "waiting_room": true, "admit_per_second": rate}
	for k, v := range extra {
		body[k] = v
	}
	r := c.must("POST", "/api/v1/admin/activities", admin, body)
	if r.Status != http.StatusCreated {
		c.t.Fatalf("create room sale: %d %s", r.Status, r.Body)
	}
	var a activity
	r.decode(c.t, &a)
	return a
}

func (c *client) ticket(activityID, user int64) ticket {
	c.t.Helper()
	r := c.must("GET", fmt.Sprintf("/api/v1/activities/%d/line", activityID), testutil.Token(c.t, user, false), nil)
	if r.Status != http.StatusOK {
		c.t.Fatalf("ticket of user %d: %d %s", user, r.Status, r.Body)
	}
	var tk ticket
	r.decode(c.t, &tk)
	return tk
}

// joinAll has users join the sale's line over the clients, 100 at a time, and returns
// the users in the order their joins were answered.
func joinAll(t *testing.T, clients []*client, activityID int64, users []int64) []int64 {
	t.Helper()
	var mu sync.Mutex
	var order []int64
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for w := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%len(clients)]
			for i := next.Add(1) - 1; i < int64(len(users)); i = next.Add(1) - 1 {
				u := users[i]
				r, err := c.do("POST", fmt.Sprintf("/api/v1/activities/%d/line", activityID), testutil.Token(t, u, false), map[string]any{})
				if err != nil || r.Status != http.StatusCreated {
					t.Errorf("user %d joins: %v %d %s", u, err, r.Status, r.Body)
					return
				}
				mu.Lock()
				order = append(order, u)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return order
}

// 2,000 buyers join before the start over two API processes, 200 more after it: the
// first are admitted in a uniformly random order (the first half admitted is spread over
// the whole join order), the late ones behind them in the order they joined; no 10 s
// window holds more than 10 x admit_per_second admissions; nobody is admitted before the
// start; the buyer's own pass buys, through either API, and no pass, another user's, an
// expired one, another sale's, a forged or an altered one does not (409 not_admitted);
// nothing is oversold.
func TestLineLotteryOverTwoAPIs(t *testing.T) {
	s := testutil.StartStackOnRedis(t, testutil.MySQL(t), testutil.StartRedis(t, "--appendonly", "yes").Topology(), 2, 1)
	clients := []*client{newClient(t, s.URLs[0]), newClient(t, s.URLs[1])}
	admin := testutil.Token(t, 1, true)
	const early, late, rate = 2000, 200, 150
	start := time.Now().Add(20 * time.Second)
	a := clients[0].createRoomSale(admin, 100_000, rate, start, nil)
	start = a.StartsAt // the instant the sale keeps, to the millisecond
	users := make([]int64, early)
	for i := range users {
		users[i] = int64(1000 + i)
	}
	joined := joinAll(t, clients, a.ID, users)
	if time.Now().After(start) {
		t.Fatalf("the early joins took until after the start; give them more time")
	}
	t.Logf("%d joins answered with %v to go before the start", len(joined), time.Until(start).Round(time.Millisecond))
	joinIndex := map[int64]int{}
	for i, u := range joined {
		joinIndex[u] = i
	}
	if tk := clients[1].ticket(a.ID, joined[0]); tk.Status != "waiting" || tk.EstimatedWait < 1 {
		t.Errorf("a ticket before the start: %+v", tk)
	}
	// The sale's start, when the lottery's order is fixed: the behaviour under test.
	time.Sleep(time.Until(start) + 100*time.Millisecond)
	var lateUsers []int64
	for i := range late { // one at a time: their arrival order is known
		u := int64(5000 + i)
		lateUsers = append(lateUsers, u)
		if r := clients[i%2].must("POST", fmt.Sprintf("/api/v1/activities/%d/line", a.ID), testutil.Token(t, u, false), map[string]any{}); r.Status != http.StatusCreated {
			t.Fatalf("late join: %d %s", r.Status, r.Body)
		}
	}
	// Wait until the last late joiner is admitted.
	deadline := time.Now().Add(60 * time.Second)
	for clients[0].ticket(a.ID, lateUsers[late-1]).Status != "admitted" {
		if time.Now().After(deadline) {
			t.Fatal("the line was not through after a minute")
		}
		time.Sleep(500 * time.Millisecond)
	}
	type adm struct {
		user int64
		pos  int64
		at   time.Time
	}
	all := append(append([]int64{}, joined...), lateUsers...)
	admitted := make([]adm, 0, len(all))
	for i, u := range all {
		tk := clients[i%2].ticket(a.ID, u)
		if tk.Status != "admitted" || tk.AdmittedAt == nil || tk.Pass == "" {
			t.Fatalf("user %d: %+v, want admitted with a pass", u, tk)
		}
		admitted = append(admitted, adm{u, tk.Position, *tk.AdmittedAt})
	}
	sort.Slice(admitted, func(i, j int) bool { return admitted[i].pos < admitted[j].pos })
	for i, x := range admitted {
		if x.pos != int64(i+1) {
			t.Fatalf("positions are not 1..N: %d at index %d", x.pos, i)
		}
		if x.at.Before(start) {
			t.Errorf("user %d admitted at %v, before the start %v", x.user, x.at, start)
		}
		if i >= early && x.user != lateUsers[i-early] {
			t.Fatalf("position %d is user %d, want late joiner %d (arrival order)", i+1, x.user, lateUsers[i-early])
		}
	}
	// The first half admitted, by its join order: a uniform lottery puts its mean join
	// index at (n-1)/2 with a standard deviation of about sqrt((n^2-1)/12/k x (n-k)/(n-1)).
	n, k := float64(early), float64(early/2)
	var sum float64
	for _, x := range admitted[:early/2] {
		sum += float64(joinIndex[x.user])
	}
	mean, sd := sum/k, math.Sqrt((n*n-1)/12/k*(n-k)/(n-1))
	if math.Abs(mean-(n-1)/2) > 5*sd {
		t.Errorf("mean join index of the first half admitted: %.1f, want %.1f ± %.1f", mean, (n-1)/2, 5*sd)
	}
	// The admission rate over any 10 s window, by the admission instants the line set.
	worst := 0
	for i := range admitted {
		j := sort.Search(len(admitted), func(j int) bool { return !admitted[j].at.Before(admitted[i].at.Add(10 * time.Second)) })
		worst = max(worst, j-i)
	}
	span := admitted[len(admitted)-1].at.Sub(admitted[0].at).Seconds()
	if worst > 10*rate {
		t.Errorf("%d admissions in one 10 s window, want at most %d", worst, 10*rate)
	}
	if got := float64(len(admitted)-1) / span; got < 0.8*rate || got > rate {
		t.Errorf("admitted %.1f per second, want close to %d", got, rate)
	}
	t.Logf("admitted %d in %.1f s (%.1f/s), at most %d in a 10 s window; first-half mean join index %.0f (sd %.0f)",
		len(admitted), span, float64(len(admitted)-1)/span, worst, mean, sd)

	// The pass at the purchase, through both APIs.
	buy := func(c *client, user int64, pass string) response {
		return c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, user, false),
			map[string]any{"quantity": 1}, "X-Sale-Pass", pass)
	}
	first, second := admitted[0].user, admitted[1].user
	own := clients[0].ticket(a.ID, first)
	// Passes signed with the stacks' key as the APIs sign them, but expired or made out
	// to another sale; one signed with another key; one whose claims were altered.
	signer := auth.NewPasses(testutil.JWTSecret)
	expired, err := signer.Sign(buyer.Of(first), a.ID, time.Now().Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	otherSale, err := signer.Sign(buyer.Of(first), a.ID+1, own.PassExpiresAt.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := auth.NewPasses("another-secret-0123456789abcdef-0123").Sign(buyer.Of(first), a.ID, own.PassExpiresAt.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(otherSale, ".")
	altered := strings.Join([]string{parts[0], strings.Split(own.Pass, ".")[1], parts[2]}, ".") // own claims, another's signature
	for i, p := range []struct{ name, pass string }{{"no pass", ""}, {"another user's pass", clients[0].ticket(a.ID, second).Pass},
		{"an expired pass", expired}, {"another sale's pass", otherSale}, {"a pass signed with another key", foreign},
		{"a pass whose claims were altered", altered}, {"a pass that is not a JWT", "not-a-pass"}} {
		if r := buy(clients[i%2], first, p.pass); r.Status != http.StatusConflict || r.errorCode() != "not_admitted" {
			t.Errorf("%s: %d %s, want 409 not_admitted", p.name, r.Status, r.Body)
		}
	}
	if r := buy(clients[1], first, own.Pass); r.Status != http.StatusAccepted {
		t.Errorf("own pass: %d %s", r.Status, r.Body)
	}
	st := clients[0].waitDrained(admin, a.ID, 30*time.Second)
	if st.Sold != 1 {
		t.Errorf("sold %d units, want 1 (the refused purchases took nothing)", st.Sold)
	}
}

// A sale of 40 units with 3,000 buyers in line, admitting 1,000 a second: the admitted
// buyers among the 400 who watch their tickets buy it out; every
// waiting ticket reads sold_out within 2 s, new joins are refused, nothing is oversold
// and the ledger balances; a cancelled order's unit reopens the line, which admits again.
func TestLineSellsOutWithThousandsInLine(t *testing.T) {
	s := testutil.StartStack(t)
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	const units, buyers = 40, 3000
	start := time.Now().Add(12 * time.Second)
	// Passes of 30 s (the shortest): under a loaded machine the line may admit its cap of
	// passes (the rate, 1,000) before the sell-out, and the returned unit's buyer is
	// admitted only once some of them expire.
	a := c.createRoomSale(admin, units, 1000, start, map[string]any{"pass_ttl_seconds": 30})
	users := make([]int64, buyers)
	for i := range users {
		users[i] = int64(10_000 + i)
	}
	joinAll(t, []*client{c}, a.ID, users)
	// The sale's start: the behaviour under test.
	time.Sleep(time.Until(start))

	// Buyers poll their tickets and buy once admitted, until they see sold out.
	var bought, refused atomic.Int64
	var soldOutAt atomic.Int64 // unix ms when the last unit went
	var orders sync.Map
	var wg sync.WaitGroup
	var stop atomic.Bool
	for w := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []int64 // the first 400 in join order watch their tickets, 10 per goroutine
			for i := w; i < 400; i += 40 {
				mine = append(mine, users[i])
			}
			for len(mine) > 0 && !stop.Load() {
				left := mine[:0]
				for _, u := range mine {
					r, err := c.do("GET", fmt.Sprintf("/api/v1/activities/%d/line", a.ID), testutil.Token(t, u, false), nil)
					if err != nil || r.Status != http.StatusOK {
						t.Errorf("user %d reads the ticket: %v %d %s", u, err, r.Status, r.Body)
						return
					}
					var tk ticket
					if err := json.Unmarshal(r.Body, &tk); err != nil { // not decode: this is not the test's goroutine
						t.Errorf("user %d's ticket %s: %v", u, r.Body, err)
						return
					}
					switch tk.Status {
					case "sold_out", "expired":
						continue
					case "waiting":
						left = append(left, u)
						continue
					}
					r, err = c.do("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, u, false),
						map[string]any{"quantity": 1}, "X-Sale-Pass", tk.Pass)
					switch {
					case err != nil:
						t.Errorf("user %d buys: %v", u, err)
						return
					case r.Status == http.StatusAccepted:
						var o order
						if err := json.Unmarshal(r.Body, &o); err != nil || o.ID == "" {
							t.Errorf("user %d's order %s: %v", u, r.Body, err)
							return
						}
						orders.Store(o.ID, u)
						if bought.Add(1) == units {
							soldOutAt.Store(time.Now().UnixMilli())
						}
					case r.errorCode() == "sold_out":
						refused.Add(1)
					default:
						t.Errorf("user %d buys: %d %s", u, r.Status, r.Body)
					}
				}
				mine = left
				// A buyer's page reads its ticket every 200 ms: the crowd under test.
				time.Sleep(200 * time.Millisecond)
			}
		}()
	}
	deadline := time.Now().Add(90 * time.Second)
	for bought.Load() < units && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if bought.Load() != units {
		stop.Store(true)
		wg.Wait()
		t.Fatalf("bought %d of %d units in 90 s", bought.Load(), units)
	}
	// Within 2 s of the last unit every waiting ticket reads sold_out: read a sample
	// spread over the whole line, from the back too.
	// 2 s after the last unit: the bound within which every waiting ticket reads sold_out,
	// under test.
	time.Sleep(time.Until(time.UnixMilli(soldOutAt.Load()).Add(2 * time.Second)))
	waitingSeen := 0
	for i := 0; i < buyers; i += 17 {
		tk := c.ticket(a.ID, users[i])
		switch tk.Status {
		case "sold_out":
			waitingSeen++
		case "waiting":
			t.Errorf("user %d still reads waiting 2 s after the sale sold out", users[i])
		}
	}
	if waitingSeen < 50 {
		t.Errorf("only %d sampled tickets were waiting in line when it sold out; the test needs a long line", waitingSeen)
	}
	if r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/line", a.ID), testutil.Token(t, 99_999, false), map[string]any{}); r.errorCode() != "sold_out" {
		t.Errorf("a join after the sell-out: %d %s, want 409 sold_out", r.Status, r.Body)
	}
	wg.Wait()
	st := c.waitDrained(admin, a.ID, 30*time.Second)
	if st.Sold != units || st.StockAvailable != 0 {
		t.Errorf("stats after the sell-out: %+v", st)
	}
	r := c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/ledger", a.ID), admin, nil)
	var ledger struct{ Balanced bool }
	r.decode(t, &ledger)
	if !ledger.Balanced {
		t.Errorf("ledger: %s", r.Body)
	}

	// A cancel brings a unit back: the waiting tickets read waiting again, and the line
	// admits the next buyer.
	var one string
	var owner int64
	orders.Range(func(k, v any) bool { one, owner = k.(string), v.(int64); return false })
	if r := c.must("POST", "/api/v1/orders/"+one+"/cancel", testutil.Token(t, owner, false), nil); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	before := lineFigures(t, c, admin, a.ID).Admitted
	deadline = time.Now().Add(45 * time.Second) // the passes' 30 s, and room for a slow machine
	for lineFigures(t, c, admin, a.ID).Admitted == before {
		if time.Now().After(deadline) {
			t.Fatalf("a unit came back and the line admitted nobody in 45 s: %+v", lineFigures(t, c, admin, a.ID))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type figures struct {
	Joined, Waiting, Admitted int64
	Outstanding               int64 `json:"passes_outstanding"`
	Used                      int64 `json:"passes_used"`
}

func lineFigures(t *testing.T, c *client, admin string, id int64) figures {
	t.Helper()
	r := c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/line", id), admin, nil)
	var f figures
	r.decode(t, &f)
	return f
}

// An API whose clock runs ten minutes ahead neither sells a plain sale nor lets a
// waiting room admit before the start: both are judged by Redis' clock. After the start
// it sells, with a pass where the sale has a room.
func TestClockAheadNeitherSellsNorAdmitsEarly(t *testing.T) {
	s := testutil.StartStack(t, "SECKILL_CLOCK_OFFSET=10m")
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	start := time.Now().Add(6 * time.Second)
	plain := c.createRoomSale(admin, 10, 5, start, map[string]any{"waiting_room": false})
	room := c.createRoomSale(admin, 10, 5, start, nil)
	buyer := testutil.Token(t, 42, false)
	if r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/line", room.ID), buyer, map[string]any{}); r.Status != http.StatusCreated {
		t.Fatalf("join: %d %s", r.Status, r.Body)
	}
	checks := 0
	for ; time.Until(start) > 300*time.Millisecond; checks++ {
		if r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", plain.ID), buyer, map[string]any{"quantity": 1}); r.errorCode() != "sale_not_started" {
			t.Fatalf("%v before the start, the API ten minutes ahead answered %d %s", time.Until(start), r.Status, r.Body)
		}
		if tk := c.ticket(room.ID, 42); tk.Status != "waiting" {
			t.Fatalf("%v before the start the ticket reads %+v", time.Until(start), tk)
		}
		// Checks every 200 ms until shortly before the start: the window under test.
		time.Sleep(200 * time.Millisecond)
	}
	if checks == 0 {
		t.Fatal("the set-up took past the start: nothing was checked before it")
	}
	// Half a second past the start by the test's clock (the API's is ten minutes ahead): the
	// behaviour under test.
	time.Sleep(time.Until(start) + 500*time.Millisecond)
	if r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", plain.ID), buyer, map[string]any{"quantity": 1}); r.Status != http.StatusAccepted {
		t.Errorf("after the start: %d %s", r.Status, r.Body)
	}
	tk := c.ticket(room.ID, 42)
	if tk.Status != "admitted" || tk.AdmittedAt.Before(room.StartsAt) {
		t.Fatalf("after the start the ticket reads %+v (start %v)", tk, room.StartsAt)
	}
	if r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", room.ID), buyer, map[string]any{"quantity": 1}, "X-Sale-Pass", tk.Pass); r.Status != http.StatusAccepted {
		t.Errorf("with the pass after the start: %d %s", r.Status, r.Body)
	}
}

package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// createEarlySale creates a sale of stock units, limit per buyer, that starts at start
// and opens early seconds before it to the holders of its codes, with the fields of
// extra.
func (c *client) createEarlySale(admin string, stock int64, limit int, start time.Time, early int, extra map[string]any) activity {
	c.t.Helper()
	body := map[string]any{"name": "members first", "product_name": "widget", "price_cents": 1500, "stock": stock,
		"per_user_limit": limit, "starts_at": start.UTC().Format(time.RFC3339Nano),
		"ends_at": start.Add(time.Hour).UTC().Format(time.RFC3339Nano), "early_access_seconds": early}
	for k, v := range extra {
		body[k] = v
	}
	r := c.must("POST", "/api/v1/admin/activities", admin, body)
	if r.Status != http.StatusCreated {
		c.t.Fatalf("create early sale: %d %s", r.Status, r.Body)
	}
	var a activity
	r.decode(c.t, &a)
	return a
}

// importCodes imports codes to the sale.
func (c *client) importCodes(admin string, activityID int64, codes []string) {
	c.t.Helper()
	r := c.must("POST", fmt.Sprintf("/api/v1/admin/activities/%d/access-codes", activityID), admin, map[string]any{"codes": codes})
	if r.Status != http.StatusCreated {
		c.t.Fatalf("import codes: %d %s", r.Status, r.Body)
	}
}

// buyWith buys qty units of the sale as user, with an Idempotency-Key when key is not
// "", and the headers of more (name, value, ...).
func (c *client) buyWith(activityID, user int64, qty int, key string, more ...string) (response, error) {
	header := more
	if key != "" {
		header = append([]string{"Idempotency-Key", key}, more...)
	}
	return c.do("POST", fmt.Sprintf("/api/v1/activities/%d/orders", activityID), testutil.Token(c.t, user, false),
		map[string]any{"quantity": qty}, header...)
}

// earlyCrowd is what a crowd of an early window saw.
type earlyCrowd struct {
	mu    sync.Mutex
	codes map[string]int  // answers by status and error code
	early map[string]bool // ids of the orders accepted (202) in the window
	late  map[string]bool // ids of the orders accepted from the start on
	owner map[string]int64
	errs  []string
}

func (e *earlyCrowd) record(t *testing.T, user int64, inWindow bool, r response, err error) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("user %d: %v", user, err))
		return ""
	}
	label := fmt.Sprint(r.Status)
	if code := r.errorCode(); code != "" {
		label += " " + code
	}
	e.codes[label]++
	if r.Status != http.StatusAccepted && r.Status != http.StatusOK {
		return r.errorCode()
	}
	var o struct {
		ID          string `json:"id"`
		UserID      int64  `json:"user_id"`
		EarlyAccess bool   `json:"early_access"`
	}
	if err := jsonUnmarshal(r.Body, &o); err != nil || o.UserID != user {
		e.errs = append(e.errs, fmt.Sprintf("user %d: order %s", user, r.Body))
		return ""
	}
	if r.Status == http.StatusAccepted {
		if o.EarlyAccess != inWindow {
			e.errs = append(e.errs, fmt.Sprintf("order %s accepted in the window %v says early_access %v", o.ID, inWindow, o.EarlyAccess))
		}
		if inWindow {
			e.early[o.ID] = true
		} else {
			e.late[o.ID] = true
		}
		e.owner[o.ID] = user
	}
	return "ok"
}

// A crowd in a sale's early window, over two APIs: 200 members each buy with their own
// code (a double click: two requests with one Idempotency-Key), 200 buyers without a
// code are refused until the start, 30 codes are shared by two buyers at once (one of
// each pair buys, the other is refused access_code_taken; the members' codes hold a space), unknown codes are refused,
// and a code revoked mid-window serves nobody. From the start everyone buys, a code
// changes nothing, and the limit counts the window's units: a member who bought one may
// buy one more, not two. Then MySQL: nothing oversold, nobody past the limit, every
// order of the window marked early_access and no other (in MySQL and in its
// order.created event), the stats counting them, every code's owner recorded, the
// ledger balanced.
func TestEarlyAccessCrowd(t *testing.T) {
	s := testutil.StartStackOnRedis(t, testutil.MySQL(t), testutil.StartRedis(t, "--appendonly", "yes").Topology(), 2, 1,
		"SECKILL_WEBHOOK_ALLOW_PRIVATE=true") // the events of its orders go to a receiver on this machine
	clients := []*client{newClient(t, s.URLs[0]), newClient(t, s.URLs[1])}
	admin := testutil.Token(t, 1, true)
	start := time.Now().Add(30 * time.Second)
	a := clients[0].createEarlySale(admin, 1000, 2, start, 3600, nil)
	start = a.StartsAt
	hooks := testutil.StartReceiver(t)
	clients[0].subscribe(admin, hooks, "order.created")
	const members, public, pairs = 200, 200, 30
	var codes []string
	for u := int64(1000); u < 1000+members; u++ {
		codes = append(codes, fmt.Sprintf("MEMBER %d", u))
	}
	for i := range pairs {
		codes = append(codes, fmt.Sprintf("SHARED-%d", i))
	}
	clients[1].importCodes(admin, a.ID, codes)
	clients[0].importCodes(admin, a.ID, codes) // again: nothing changes

	e := &earlyCrowd{codes: map[string]int{}, early: map[string]bool{}, late: map[string]bool{}, owner: map[string]int64{}}
	var wg sync.WaitGroup
	var n int
	// At most 128 requests in flight, below the APIs' bounds of a sale's purchases in
	// flight (a request past them is answered 429 at once, which a buyer's app retries).
	slots := make(chan struct{}, 128)
	fire := func(user int64, f func(c *client) (response, error), inWindow bool) {
		n++
		c := clients[n%2]
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			r, err := f(c)
			e.record(t, user, inWindow, r, err)
		})
	}
	for u := int64(1000); u < 1000+members; u++ {
		code := fmt.Sprintf("MEMBER %d", u)
		key := fmt.Sprintf("m%d", u)
		for range 2 { // a double click
			fire(u, func(c *client) (response, error) { return c.buyWith(a.ID, u, 1, key, "X-Access-Code", code) }, true)
		}
	}
	for u := int64(2000); u < 2000+public; u++ {
		fire(u, func(c *client) (response, error) { return c.buyWith(a.ID, u, 1, "") }, true)
	}
	sharedWinners := make([]int64, pairs)
	for i := range pairs {
		code := fmt.Sprintf("SHARED-%d", i)
		for _, u := range []int64{int64(3000 + i), int64(3100 + i)} {
			wg.Go(func() {
				slots <- struct{}{}
				defer func() { <-slots }()
				r, err := clients[u%2].buyWith(a.ID, u, 1, "", "X-Access-Code", code)
				if e.record(t, u, true, r, err) == "ok" {
					e.mu.Lock()
					if sharedWinners[i] != 0 {
						e.errs = append(e.errs, fmt.Sprintf("%s bought for %d and %d", code, sharedWinners[i], u))
					}
					sharedWinners[i] = u
					e.mu.Unlock()
				}
			})
		}
	}
	for u := int64(4000); u < 4010; u++ {
		fire(u, func(c *client) (response, error) { return c.buyWith(a.ID, u, 1, "", "X-Access-Code", "NOT-A-CODE") }, true)
	}
	wg.Wait()
	if time.Now().After(start) {
		t.Fatalf("the window's crowd took until after the start; give it more time")
	}
	for i, w := range sharedWinners {
		if w == 0 {
			t.Errorf("SHARED-%d: neither buyer bought", i)
		}
	}
	if e.codes["202"] != members+pairs || e.codes["200"] != members || e.codes["409 sale_not_started"] != public ||
		e.codes["403 access_code_taken"] != pairs || e.codes["403 access_code_invalid"] != 10 {
		t.Errorf("the window's answers %v; want 202 %d (members, and one of each pair), 200 %d (the double clicks), "+
			"409 sale_not_started %d, 403 access_code_taken %d, 403 access_code_invalid 10", e.codes, members+pairs, members,
			public, pairs)
	}

	// A member's code revoked in the window serves them no more; their order stays.
	r := clients[0].must("DELETE", fmt.Sprintf("/api/v1/admin/activities/%d/access-codes/%s", a.ID, url.PathEscape("MEMBER 1000")), admin, nil)
	if r.Status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	if r, _ := clients[1].buyWith(a.ID, 1000, 1, "", "X-Access-Code", "MEMBER 1000"); r.errorCode() != "access_code_invalid" {
		t.Errorf("a revoked code in the window: %d %s, want 403 access_code_invalid", r.Status, r.Body)
	}

	time.Sleep(time.Until(start) + 200*time.Millisecond)
	e.codes = map[string]int{}
	for u := int64(2000); u < 2000+public; u++ { // the public, one of them with a code of nobody's
		var more []string
		if u == 2000 {
			more = []string{"X-Access-Code", "NOT-A-CODE"}
		}
		fire(u, func(c *client) (response, error) { return c.buyWith(a.ID, u, 1, "", more...) }, false)
	}
	for u := int64(1001); u < 1000+members; u++ { // members past the limit, then within it
		fire(u, func(c *client) (response, error) {
			return c.buyWith(a.ID, u, 2, "", "X-Access-Code", fmt.Sprintf("MEMBER %d", u))
		}, false)
	}
	wg.Wait()
	if e.codes["202"] != public || e.codes["409 limit_exceeded"] != members-1 {
		t.Errorf("after the start: %v; want %d 202 (the public) and %d limit_exceeded (members asking 2 more)",
			e.codes, public, members-1)
	}
	for u := int64(1001); u < 1000+members; u++ {
		fire(u, func(c *client) (response, error) { return c.buyWith(a.ID, u, 1, "") }, false)
	}
	wg.Wait()
	if len(e.errs) > 0 {
		t.Fatalf("%d errors, the first: %s", len(e.errs), e.errs[0])
	}

	st := clients[0].waitDrained(admin, a.ID, time.Minute)
	var rows []struct {
		ID          string
		UserID      int64
		Quantity    int
		Status      string
		EarlyAccess bool
	}
	if err := s.MySQL.Gorm.Raw("SELECT id, user_id, quantity, status, early_access FROM orders WHERE activity_id = ?", a.ID).
		Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	perUser := map[int64]int{}
	units, early := 0, 0
	for _, o := range rows {
		if o.Status != "created" {
			t.Errorf("order %s is %s", o.ID, o.Status)
		}
		units += o.Quantity
		perUser[o.UserID] += o.Quantity
		if o.EarlyAccess != e.early[o.ID] || !e.early[o.ID] && !e.late[o.ID] {
			t.Errorf("order %s: early_access %v in MySQL, accepted in the window %v, after %v", o.ID, o.EarlyAccess, e.early[o.ID], e.late[o.ID])
		}
		if o.EarlyAccess {
			early++
		}
	}
	for u, n := range perUser {
		if n > a.PerUserLimit {
			t.Errorf("user %d holds %d, over the limit %d", u, n, a.PerUserLimit)
		}
	}
	if wantUnits := members + pairs + public + members - 1; units != wantUnits || int64(units)+st.StockAvailable != a.StockTotal {
		t.Errorf("%d units in MySQL, %d available of %d; want %d sold", units, st.StockAvailable, a.StockTotal, wantUnits)
	}
	if early != members+pairs || len(e.early) != members+pairs {
		t.Errorf("%d orders marked early in MySQL, %d accepted in the window; want %d", early, len(e.early), members+pairs)
	}
	var full struct {
		Orders struct {
			EarlyAccess int64 `json:"early_access"`
		} `json:"orders"`
		AccessCodes struct{ Issued, Used, Revoked int64 } `json:"access_codes"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for { // the worker records the codes' owners within a second
		r := clients[1].must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/stats", a.ID), admin, nil)
		r.decode(t, &full)
		if full.AccessCodes.Used == members+pairs-1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if full.Orders.EarlyAccess != int64(members+pairs) || full.AccessCodes.Issued != members+pairs-1 ||
		full.AccessCodes.Used != members+pairs-1 || full.AccessCodes.Revoked != 1 {
		t.Errorf("stats: %+v; want %d early orders, %d codes issued and used, 1 revoked", full, members+pairs, members+pairs-1)
	}
	var funnel struct {
		Purchases struct {
			Accepted      int64 `json:"accepted"`
			AcceptedEarly int64 `json:"accepted_early"`
		} `json:"purchases"`
		Orders struct {
			EarlyAccess int64 `json:"early_access"`
		} `json:"orders"`
	}
	r = clients[0].must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/funnel", a.ID), admin, nil)
	if r.decode(t, &funnel); funnel.Purchases.AcceptedEarly != members+pairs || funnel.Orders.EarlyAccess != members+pairs ||
		funnel.Purchases.Accepted != int64(len(rows)) {
		t.Errorf("funnel: %s; want %d accepted, %d of them early", r.Body, len(rows), members+pairs)
	}
	var owners []struct {
		Code  string
		Buyer string
	}
	s.MySQL.Gorm.Raw("SELECT code, buyer FROM access_codes WHERE activity_id = ? AND code LIKE 'SHARED-%'", a.ID).Scan(&owners)
	for _, o := range owners {
		var i int
		fmt.Sscanf(o.Code, "SHARED-%d", &i)
		if o.Buyer != fmt.Sprint(sharedWinners[i]) {
			t.Errorf("%s recorded as %q's, bought by %d", o.Code, o.Buyer, sharedWinners[i])
		}
	}
	checkEarlyEvents(t, hooks, e.early, len(rows))
	r = clients[0].must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/ledger", a.ID), admin, nil)
	var l struct{ Balanced bool }
	if r.decode(t, &l); r.Status != http.StatusOK || !l.Balanced {
		t.Errorf("ledger: %d %s", r.Status, r.Body)
	}
}

// checkEarlyEvents waits for the order.created events of the sale's orders (want of
// them) and checks that each says early_access exactly when its order was bought in the
// window (early, by order id).
func checkEarlyEvents(t *testing.T, hooks *testutil.Receiver, early map[string]bool, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, _ := eventsBySubject(t, hooks)
		if len(got) >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	seen, marked := map[string]bool{}, 0
	for _, d := range hooks.Accepted() {
		if d.Type != "order.created" || seen[d.Subject] {
			continue
		}
		seen[d.Subject] = true
		var ev struct {
			Data struct {
				Order struct {
					EarlyAccess bool `json:"early_access"`
				} `json:"order"`
			} `json:"data"`
		}
		if err := jsonUnmarshal(d.Body, &ev); err != nil || ev.Data.Order.EarlyAccess != early[d.Subject] {
			t.Errorf("order.created of %s: %s; want early_access %v", d.Subject, d.Body, early[d.Subject])
		}
		if early[d.Subject] {
			marked++
		}
	}
	if len(seen) != want || marked != len(early) {
		t.Errorf("%d order.created events, %d of them early; want %d, %d early", len(seen), marked, want, len(early))
	}
}

// placed is a ticket's place and status.
type placed struct {
	Place  int64  `json:"place"`
	Status string `json:"status"`
	Pass   string `json:"pass"`
}

// A waiting-room sale with an early window admits its code holders first: 40 of them
// join with their codes before the window and 80 buyers without a code join too; every
// code holder's place is below every other's. In the window a join without a code is
// refused, 10 more code holders join behind the first 40, and the line admits the 50
// (and nobody else) while its status reads before; each buys with the pass and the code
// (without the code the pass buys nothing before the start). From the start everyone
// else is admitted and buys, and nothing is oversold.
func TestEarlyAccessLine(t *testing.T) {
	s := testutil.StartStackOnRedis(t, testutil.MySQL(t), testutil.StartRedis(t, "--appendonly", "yes").Topology(), 2, 1)
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	const members, late, public = 40, 10, 80
	window := time.Now().Add(8 * time.Second)
	start := window.Add(12 * time.Second)
	a := c.createEarlySale(admin, 1000, 1, start, 12, map[string]any{"waiting_room": true, "admit_per_second": 100,
		"pass_ttl_seconds": 300})
	start = a.StartsAt
	window = start.Add(-12 * time.Second)
	var codes []string
	for u := int64(1000); u < 1000+members+late; u++ {
		codes = append(codes, fmt.Sprintf("M-%d", u))
	}
	c.importCodes(admin, a.ID, codes)
	join := func(user int64, code string) (response, placed) {
		var header []string
		if code != "" {
			header = []string{"X-Access-Code", code}
		}
		r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/line", a.ID), testutil.Token(t, user, false), map[string]any{}, header...)
		var p placed
		if r.Status == http.StatusCreated {
			r.decode(t, &p)
		}
		return r, p
	}
	places := map[int64]int64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for u := int64(1000); u < 1000+members; u++ {
		wg.Go(func() {
			r, p := join(u, fmt.Sprintf("M-%d", u))
			mu.Lock()
			defer mu.Unlock()
			if r.Status != http.StatusCreated {
				t.Errorf("code holder %d joins: %d %s", u, r.Status, r.Body)
			}
			places[u] = p.Place
		})
	}
	for u := int64(2000); u < 2000+public; u++ {
		wg.Go(func() {
			r, p := join(u, "")
			mu.Lock()
			defer mu.Unlock()
			if r.Status != http.StatusCreated {
				t.Errorf("buyer %d joins: %d %s", u, r.Status, r.Body)
			}
			places[u] = p.Place
		})
	}
	wg.Wait()
	if time.Now().After(window) {
		t.Fatal("the joins took until the window; give them more time")
	}
	var highestMember, lowestPublic int64 = 0, 1 << 53
	for u, p := range places {
		if u < 2000 {
			highestMember = max(highestMember, p)
		} else {
			lowestPublic = min(lowestPublic, p)
		}
	}
	if highestMember >= lowestPublic {
		t.Fatalf("a code holder's place %d is not below every other's (lowest %d)", highestMember, lowestPublic)
	}

	time.Sleep(time.Until(window) + 100*time.Millisecond) // the early window
	if r, _ := join(2500, ""); r.errorCode() != "sale_not_started" {
		t.Errorf("a join without a code in the window: %d %s, want 409 sale_not_started", r.Status, r.Body)
	}
	for u := int64(1000 + members); u < 1000+members+late; u++ {
		r, p := join(u, fmt.Sprintf("M-%d", u))
		if r.Status != http.StatusCreated || p.Place <= highestMember || p.Place >= lowestPublic {
			t.Errorf("code holder %d joins in the window: %d at place %d; want one between %d and %d", u, r.Status, p.Place,
				highestMember, lowestPublic)
		}
		highestMember = max(highestMember, p.Place)
	}
	status := func() (st struct {
		State           string `json:"state"`
		AdmittedThrough int64  `json:"admitted_through"`
		Admitted        int64  `json:"admitted"`
	}) {
		r := c.must("GET", fmt.Sprintf("/api/v1/activities/%d/line/status", a.ID), "", nil)
		r.decode(t, &st)
		return st
	}
	for st := status(); st.Admitted < members+late; st = status() {
		if st.State != "before" || st.AdmittedThrough >= lowestPublic {
			t.Fatalf("the line's status in the window: %+v; want before, admitted through the code holders only", st)
		}
		if time.Now().After(start.Add(-2 * time.Second)) {
			t.Fatalf("the window nearly over and %d code holders admitted of %d", st.Admitted, members+late)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st := status(); st.State != "before" || st.Admitted != members+late || st.AdmittedThrough != highestMember {
		t.Errorf("every code holder admitted: %+v; want before, %d admitted through %d", st, members+late, highestMember)
	}
	for u := int64(1000); u < 1000+members+late; u++ {
		wg.Go(func() {
			var tk placed
			c.must("GET", fmt.Sprintf("/api/v1/activities/%d/line", a.ID), testutil.Token(t, u, false), nil).decode(t, &tk)
			if tk.Status != "admitted" || tk.Pass == "" {
				t.Errorf("code holder %d in the window: %+v, want admitted with a pass", u, tk)
				return
			}
			if u == 1000 { // the pass alone, before the start, buys nothing
				if r, _ := c.buyWith(a.ID, u, 1, "", "X-Sale-Pass", tk.Pass); r.errorCode() != "sale_not_started" {
					t.Errorf("a pass without the code in the window: %d %s, want 409 sale_not_started", r.Status, r.Body)
				}
			}
			r, err := c.buyWith(a.ID, u, 1, "", "X-Sale-Pass", tk.Pass, "X-Access-Code", fmt.Sprintf("M-%d", u))
			if err != nil || r.Status != http.StatusAccepted || !jsonHasEarly(r.Body) {
				t.Errorf("code holder %d buys in the window: %v %d %s", u, err, r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	if tk := c.ticket(a.ID, 2000); tk.Status != "waiting" {
		t.Errorf("a buyer without a code in the window: %+v, want waiting", tk)
	}

	time.Sleep(time.Until(start) + 100*time.Millisecond)
	for st := status(); st.Admitted < members+late+public; st = status() {
		if time.Now().After(start.Add(20 * time.Second)) {
			t.Fatalf("after the start: %+v, want everyone admitted", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for u := int64(2000); u < 2000+public; u++ {
		wg.Go(func() {
			var tk placed
			c.must("GET", fmt.Sprintf("/api/v1/activities/%d/line", a.ID), testutil.Token(t, u, false), nil).decode(t, &tk)
			if r, err := c.buyWith(a.ID, u, 1, "", "X-Sale-Pass", tk.Pass); err != nil || r.Status != http.StatusAccepted || jsonHasEarly(r.Body) {
				t.Errorf("buyer %d after the start: %v %d %s", u, err, r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	st := c.waitDrained(admin, a.ID, time.Minute)
	if sold := a.StockTotal - st.StockAvailable; sold != members+late+public || st.Orders.Created != members+late+public {
		t.Errorf("%d units sold, %d orders created; want %d", sold, st.Orders.Created, members+late+public)
	}
}

// jsonHasEarly reports whether an order's JSON says early_access: true.
func jsonHasEarly(b []byte) bool {
	var o struct {
		EarlyAccess bool `json:"early_access"`
	}
	return jsonUnmarshal(b, &o) == nil && o.EarlyAccess
}

// Early access in a group-buy sale (opening a group and joining one take the code), in
// a sale of variants (a size bought early counts against its size's stock), and not in
// a sale of several stock buckets (400 naming early_access_seconds, and no codes).
func TestEarlyAccessKinds(t *testing.T) {
	s := testutil.StartStack(t)
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	start := time.Now().Add(time.Hour)

	g := c.createEarlySale(admin, 10, 1, start, 7200, map[string]any{"kind": "group", "group_size": 2, "group_window_seconds": 600})
	c.importCodes(admin, g.ID, []string{"GRP-1", "GRP-2"})
	seat := func(path string, user int64, code string) response {
		var header []string
		if code != "" {
			header = []string{"X-Access-Code", code}
		}
		return c.must("POST", path, testutil.Token(t, user, false), map[string]any{"quantity": 1}, header...)
	}
	open := fmt.Sprintf("/api/v1/activities/%d/groups", g.ID)
	if r := seat(open, 10, ""); r.errorCode() != "sale_not_started" {
		t.Errorf("a group opened without a code in the window: %d %s", r.Status, r.Body)
	}
	r := seat(open, 10, "GRP-1")
	var opened struct {
		Group struct{ ID string } `json:"group"`
		Order struct {
			EarlyAccess bool `json:"early_access"`
		} `json:"order"`
	}
	if r.decode(t, &opened); r.Status != http.StatusAccepted || !opened.Order.EarlyAccess {
		t.Fatalf("a group opened with a code in the window: %d %s", r.Status, r.Body)
	}
	join := fmt.Sprintf("/api/v1/groups/%s/join", opened.Group.ID)
	if r := seat(join, 11, "GRP-1"); r.errorCode() != "access_code_taken" {
		t.Errorf("a seat with another buyer's code: %d %s", r.Status, r.Body)
	}
	if r := seat(join, 11, "GRP-2"); r.Status != http.StatusAccepted || !jsonHas(r.Body, `"status":"complete"`) {
		t.Errorf("a seat with a code in the window: %d %s, want the group complete", r.Status, r.Body)
	}

	r = c.must("POST", "/api/v1/admin/activities", admin, map[string]any{"name": "sizes", "product_name": "shoe",
		"price_cents": 100, "variants": []any{map[string]any{"name": "S", "stock": 1}, map[string]any{"name": "M", "stock": 5}},
		"per_user_limit": 2, "early_access_seconds": 7200, "starts_at": start.Format(time.RFC3339),
		"ends_at": start.Add(time.Hour).Format(time.RFC3339)})
	var v activity
	r.decode(t, &v)
	c.importCodes(admin, v.ID, []string{"VAR-1", "VAR-2"})
	buy := func(user int64, variant, code string) response {
		return c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", v.ID), testutil.Token(t, user, false),
			map[string]any{"quantity": 1, "variant": variant}, "X-Access-Code", code)
	}
	if r := buy(20, "S", "VAR-1"); r.Status != http.StatusAccepted || !jsonHasEarly(r.Body) || !jsonHas(r.Body, `"variant":"S"`) {
		t.Errorf("size S with a code in the window: %d %s", r.Status, r.Body)
	}
	if r := buy(21, "S", "VAR-2"); r.errorCode() != "sold_out" || !jsonHas(r.Body, `S`) {
		t.Errorf("size S sold out in the window: %d %s, want 409 sold_out naming it", r.Status, r.Body)
	}
	if r := buy(21, "M", "VAR-2"); r.Status != http.StatusAccepted {
		t.Errorf("size M with the same code, now the buyer's: %d %s", r.Status, r.Body)
	}

	r = c.must("POST", "/api/v1/admin/activities", admin, map[string]any{"name": "hot", "product_name": "p",
		"price_cents": 100, "stock": 10, "per_user_limit": 1, "stock_buckets": 3, "early_access_seconds": 60,
		"starts_at": start.Format(time.RFC3339), "ends_at": start.Add(time.Hour).Format(time.RFC3339)})
	if r.errorCode() != "invalid_request" || !jsonHas(r.Body, "early_access_seconds") {
		t.Errorf("early access on a sale of 3 buckets: %d %s, want 400 naming early_access_seconds", r.Status, r.Body)
	}
	b := c.must("POST", "/api/v1/admin/activities", admin, map[string]any{"name": "hot", "product_name": "p",
		"price_cents": 100, "stock": 10, "per_user_limit": 1, "stock_buckets": 3,
		"starts_at": start.Format(time.RFC3339), "ends_at": start.Add(time.Hour).Format(time.RFC3339)})
	var hot activity
	b.decode(t, &hot)
	r = c.must("POST", fmt.Sprintf("/api/v1/admin/activities/%d/access-codes", hot.ID), admin, map[string]any{"count": 1})
	if r.errorCode() != "invalid_request" {
		t.Errorf("codes for a sale of 3 buckets: %d %s, want 400", r.Status, r.Body)
	}
	r = c.must("PATCH", fmt.Sprintf("/api/v1/admin/activities/%d", hot.ID), admin, map[string]any{"early_access_seconds": 60})
	if r.errorCode() != "invalid_request" || !jsonHas(r.Body, "early_access_seconds") {
		t.Errorf("a PATCH of early access on a sale of 3 buckets: %d %s", r.Status, r.Body)
	}
}

// jsonHas reports whether the body holds s.
func jsonHas(b []byte, s string) bool { return strings.Contains(string(b), s) }

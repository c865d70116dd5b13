package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/testutil"
)

type group struct {
	ID         string    `json:"id"`
	ActivityID int64     `json:"activity_id"`
	Size       int       `json:"size"`
	Members    int       `json:"members"`
	Status     string    `json:"status"`
	ExpiresAt  time.Time `json:"expires_at"`
}

type seatAnswer struct {
	Group group `json:"group"`
	Order order `json:"order"`
}

// createGroupSale creates an active group-buy sale, then shortens its group window in
// Redis (on the server rdb gives for the sale) to window: the contract's shortest is a
// minute, and Redis is what decides when a group's window ends (the orders carry the
// end it gave them).
func createGroupSale(t *testing.T, rdb func(activityID int64) redis.Cmdable, c *client, admin string, stock int64, limit, size, parts int, window time.Duration) activity {
	t.Helper()
	now := time.Now().UTC()
	r := c.must("POST", "/api/v1/admin/activities", admin, map[string]any{
		"name": "e2e group sale", "product_name": "widget", "price_cents": 900, "stock": stock,
		"per_user_limit": limit, "starts_at": now.Add(-time.Minute).Format(time.RFC3339),
		"ends_at": now.Add(time.Hour).Format(time.RFC3339), "kind": "group", "group_size": size,
		"group_window_seconds": 60, "per_user_participations": parts})
	if r.Status != http.StatusCreated {
		t.Fatalf("create group sale: %d %s", r.Status, r.Body)
	}
	var a activity
	r.decode(t, &a)
	key := fmt.Sprintf("seckill:{act:%d}:sale", a.ID)
	if err := rdb(a.ID).HSet(context.Background(), key, "gwin", int(window/time.Second)).Err(); err != nil {
		t.Fatal(err)
	}
	return a
}

// groupCrowd records the answers of seats taken by many buyers at once.
type groupCrowd struct {
	mu       sync.Mutex
	accepted map[string]seatAnswer // by order id
	codes    map[string]int
}

func (gc *groupCrowd) record(t testing.TB, r response, err error) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if err != nil {
		gc.codes["no answer"]++
		return
	}
	code := fmt.Sprint(r.Status)
	if r.Status >= 400 {
		code += " " + r.errorCode()
	}
	gc.codes[code]++
	switch r.Status {
	case http.StatusAccepted, http.StatusOK:
		var a seatAnswer
		if err := json.Unmarshal(r.Body, &a); err != nil || a.Order.ID == "" || a.Group.ID == "" {
			t.Errorf("seat answer without order or group (%v): %s", err, r.Body)
		}
		gc.accepted[a.Order.ID] = a
	case http.StatusConflict, http.StatusTooManyRequests, http.StatusServiceUnavailable:
	default:
		t.Errorf("unexpected answer %d %s", r.Status, r.Body)
	}
}

// singleRedis is createGroupSale's Redis on a single-server stack.
func singleRedis(t *testing.T, s *testutil.Stack) func(int64) redis.Cmdable {
	return func(int64) redis.Cmdable { return s.Redis.Client(t) }
}

// TestGroupBuyCrowd: buyers open groups and take seats on two API instances at once,
// with double clicks (one Idempotency-Key) and two devices (no key), fifty of them race
// for the last seat of a group, and windows close mid-crowd. Then the audit: every
// complete group has exactly size members whose orders are created (payable); every
// failed group's orders are cancelled and their units back; no group has more members
// than its size or a user twice; stock never oversold; no user past either limit; every
// 202 in MySQL and every order in MySQL had one; the ledger balances.
func TestGroupBuyCrowd(t *testing.T) {
	s := testutil.StartStack(t)
	_, url2 := s.StartAPI(t)
	urls := []string{s.URL, url2}
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	a := createGroupSale(t, singleRedis(t, s), c, admin, 400, 3, 3, 2, 4*time.Second)
	if r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, 7, false),
		map[string]int{"quantity": 1}); r.Status != http.StatusConflict || r.errorCode() != "group_sale" {
		t.Errorf("a plain purchase in a group sale: %d %s, want 409 group_sale", r.Status, r.Body)
	}
	gc := runGroupCrowd(t, urls, a, 60, 60, true)
	for _, want := range []string{"202", "200", "409 already_in_group", "409 group_full", "409 group_closed"} {
		if gc.codes[want] == 0 {
			t.Errorf("no %q answer: the crowd did not exercise it (%v)", want, gc.codes)
		}
	}
	waitGroupsSettled(t, c, a)
	auditGroups(t, s, a, gc)

	// An order of a complete group can be paid (the shop confirms it); one of a failed
	// group cannot.
	var paid, refused bool
	shop := testutil.ServiceToken(t, 900)
	for _, ans := range gc.accepted {
		var o order
		r := c.must("GET", "/api/v1/orders/"+ans.Order.ID, testutil.Token(t, ans.Order.UserID, false), nil)
		r.decode(t, &o)
		p := c.must("POST", "/api/v1/orders/"+o.ID+"/pay", shop, nil)
		switch {
		case o.Status == "created" && !paid:
			paid = p.Status == http.StatusOK
			if !paid {
				t.Errorf("pay an order of a complete group: %d %s", p.Status, p.Body)
			}
		case o.Status == "cancelled" && !refused:
			refused = true
			if p.Status != http.StatusConflict {
				t.Errorf("pay an order of a failed group: %d %s, want 409", p.Status, p.Body)
			}
		}
	}
	if !paid || !refused {
		t.Errorf("the crowd left no complete group (%v) or no failed one (%v) to pay", paid, refused)
	}
	noGORMErrors(t, append(s.APIs, s.Workers...)...)
}

// noGORMErrors fails the test when a process logged a model GORM could not parse (a
// field of a type with no column, such as a slice, in a struct given to GORM).
func noGORMErrors(t *testing.T, procs ...*testutil.Process) {
	t.Helper()
	for _, p := range procs {
		for _, line := range strings.Split(p.Output(), "\n") {
			if strings.Contains(line, "failed to parse field") {
				t.Errorf("a process logged a GORM error: %s", line)
			}
		}
	}
}

// runGroupCrowd: openers buyers each open a group, double-clicking (one key: one
// group); with race, fifty buyers race for the two seats left of the fullest group; then
// joiners buyers, ten a second so the windows close mid-crowd, each join one random
// group from two devices at once (no key) and another with a key. Requests go round
// robin over urls.
func runGroupCrowd(t testing.TB, urls []string, a activity, openers, joiners int, race bool) *groupCrowd {
	t.Helper()
	c := newClient(t, urls[0])
	gc := &groupCrowd{accepted: map[string]seatAnswer{}, codes: map[string]int{}}
	call := func(i int, path string, user int64, qty int, key string) {
		var hdr []string
		if key != "" {
			hdr = []string{"Idempotency-Key", key}
		}
		r, err := newClient(t, urls[i%len(urls)]).do("POST", path, testutil.Token(t, user, false), map[string]int{"quantity": qty}, hdr...)
		gc.record(t, r, err)
	}
	var wg sync.WaitGroup
	for u := int64(1000); u < 1000+int64(openers); u++ {
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				call(i, fmt.Sprintf("/api/v1/activities/%d/groups", a.ID), u, 1, fmt.Sprintf("open-%d", u))
			}()
		}
	}
	wg.Wait()
	var open struct{ Groups []group }
	c.must("GET", fmt.Sprintf("/api/v1/activities/%d/groups?limit=500", a.ID), "", nil).decode(t, &open)
	if len(open.Groups) != openers {
		t.Fatalf("%d open groups after %d openers (answers %v)", len(open.Groups), openers, gc.codes)
	}
	if race {
		id := open.Groups[0].ID
		for u := int64(5000); u < 5050; u++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				call(int(u), "/api/v1/groups/"+id+"/join", u, 1, "")
			}()
		}
		wg.Wait()
		var raced group
		c.must("GET", "/api/v1/groups/"+id, "", nil).decode(t, &raced)
		if raced.Members != raced.Size || raced.Status != "complete" {
			t.Errorf("the raced group: %+v, want complete with %d members", raced, raced.Size)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for u := int64(2000); u < 2000+int64(joiners); u++ {
		g1, g2 := open.Groups[rng.IntN(len(open.Groups))].ID, open.Groups[rng.IntN(len(open.Groups))].ID
		qty := 1 + rng.IntN(2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				call(i, "/api/v1/groups/"+g1+"/join", u, qty, "")
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			call(int(u), "/api/v1/groups/"+g2+"/join", u, 1, fmt.Sprintf("join-%d", u))
		}()
		if u%10 == 9 {
			wg.Wait()
			// Joiners come in tens, a second apart, while groups fill and their windows run: the
			// scenario under test.
			time.Sleep(time.Second)
		}
	}
	wg.Wait()
	t.Logf("sale %d answers: %v", a.ID, gc.codes)
	return gc
}

// waitGroupsSettled waits until every group of the sale has its outcome in MySQL (none
// open, no order grouping or queued).
func waitGroupsSettled(t *testing.T, c *client, a activity) {
	t.Helper()
	admin := testutil.Token(t, 1, true)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var open struct{ Groups []group }
		c.must("GET", fmt.Sprintf("/api/v1/activities/%d/groups?limit=500", a.ID), "", nil).decode(t, &open)
		st := c.waitDrained(admin, a.ID, time.Minute)
		if len(open.Groups) == 0 && st.Orders.Grouping == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("groups still open or grouping 30 s after their windows: %d open, %+v", len(open.Groups), st)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// auditGroups checks MySQL after a group-buy crowd has settled.
func auditGroups(t *testing.T, s *testutil.Stack, a activity, gc *groupCrowd) {
	t.Helper()
	db := s.MySQL.Gorm
	var groups []struct {
		ID            string
		Size, Members int
		Status        string
	}
	if err := db.Raw("SELECT id, size, members, status FROM sale_groups WHERE activity_id = ?", a.ID).Scan(&groups).Error; err != nil {
		t.Fatal(err)
	}
	var orders []struct {
		ID, Status, GroupID string
		UserID              int64
		Quantity            int
	}
	if err := db.Raw("SELECT id, status, group_id, user_id, quantity FROM orders WHERE activity_id = ?", a.ID).Scan(&orders).Error; err != nil {
		t.Fatal(err)
	}
	byGroup := map[string][]int{}
	seats := map[string]int{} // group/user -> seats held
	units, parts := map[int64]int{}, map[int64]int{}
	held := 0
	for i, o := range orders {
		if _, ok := gc.accepted[o.ID]; !ok {
			t.Errorf("order %s in MySQL without a 202", o.ID)
		}
		switch o.Status {
		case "created", "paid":
			byGroup[o.GroupID] = append(byGroup[o.GroupID], i)
			seats[o.GroupID+"/"+fmt.Sprint(o.UserID)]++
			units[o.UserID] += o.Quantity
			parts[o.UserID]++
			held += o.Quantity
		case "cancelled":
			byGroup[o.GroupID] = append(byGroup[o.GroupID], i)
		default:
			t.Errorf("order %s is %s after every window passed", o.ID, o.Status)
		}
	}
	for id := range gc.accepted {
		found := false
		for _, o := range orders {
			found = found || o.ID == id
		}
		if !found {
			t.Errorf("acknowledged order %s missing in MySQL", id)
		}
	}
	complete, failed := 0, 0
	for _, g := range groups {
		members := byGroup[g.ID]
		switch g.Status {
		case "complete":
			complete++
			if g.Members != g.Size || len(members) != g.Size {
				t.Errorf("complete group %s: %d members recorded, %d orders, size %d", g.ID, g.Members, len(members), g.Size)
			}
			for _, i := range members {
				if orders[i].Status != "created" && orders[i].Status != "paid" {
					t.Errorf("complete group %s has a %s order", g.ID, orders[i].Status)
				}
			}
		case "failed":
			failed++
			for _, i := range members {
				if orders[i].Status != "cancelled" {
					t.Errorf("failed group %s has a %s order", g.ID, orders[i].Status)
				}
			}
		default:
			t.Errorf("group %s is %s after its window", g.ID, g.Status)
		}
	}
	for k, n := range seats {
		if n > 1 {
			t.Errorf("%s holds %d seats in one group", k, n)
		}
	}
	for u, n := range units {
		if n > a.PerUserLimit {
			t.Errorf("user %d holds %d units, limit %d", u, n, a.PerUserLimit)
		}
		if parts[u] > 2 {
			t.Errorf("user %d takes part %d times, cap 2", u, parts[u])
		}
	}
	if int64(held) > a.StockTotal {
		t.Errorf("oversold: %d of %d", held, a.StockTotal)
	}
	var sold int64
	db.Raw("SELECT sold FROM activities WHERE id = ?", a.ID).Scan(&sold)
	st := newClient(t, s.URL).stats(testutil.Token(t, 1, true), a.ID)
	if sold != int64(held) || st.StockAvailable+int64(held) != a.StockTotal {
		t.Errorf("sold column %d, units held %d, available %d of %d: not balanced", sold, held, st.StockAvailable, a.StockTotal)
	}
	r := newClient(t, s.URL).must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/ledger", a.ID), testutil.Token(t, 1, true), nil)
	if !strings.Contains(string(r.Body), `"balanced":true`) {
		t.Errorf("ledger: %s", r.Body)
	}
	if complete == 0 || failed == 0 {
		t.Errorf("%d complete and %d failed groups: the crowd should leave both", complete, failed)
	}
	t.Logf("audit: %d groups (%d complete, %d failed), %d orders, %d units held of %d", len(groups), complete, failed,
		len(orders), held, a.StockTotal)
}

// TestGroupsFailWithWorkerKilled: many groups' windows pass unfilled while the worker
// is killed (SIGKILL) and started again, twice. Every group fails exactly once: every
// unit and participation is back in Redis, every order cancelled in MySQL, nothing
// counted as sold.
func TestGroupsFailWithWorkerKilled(t *testing.T) {
	s := testutil.StartStack(t)
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	a := createGroupSale(t, singleRedis(t, s), c, admin, 500, 2, 5, 1, 2*time.Second)
	for u := int64(1000); u < 1060; u++ {
		path := fmt.Sprintf("/api/v1/activities/%d/groups", a.ID)
		if r := c.must("POST", path, testutil.Token(t, u, false), map[string]int{"quantity": 2}); r.Status != http.StatusAccepted {
			t.Fatalf("open a group: %d %s", r.Status, r.Body)
		}
	}
	c.waitDrained(admin, a.ID, time.Minute)
	for range 2 {
		// The worker is killed twice, 1.5 s apart, while the groups' windows run: the scenario
		// under test.
		time.Sleep(1500 * time.Millisecond)
		s.Worker.Signal(syscall.SIGKILL)
		s.Worker.Start()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := c.stats(admin, a.ID)
		if st.Orders.Grouping == 0 && st.StockAvailable == a.StockTotal {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the windows: %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var cancelled, sold, participations int64
	db := s.MySQL.Gorm
	db.Raw("SELECT COUNT(*) FROM orders WHERE activity_id = ? AND status = 'cancelled'", a.ID).Scan(&cancelled)
	db.Raw("SELECT sold FROM activities WHERE id = ?", a.ID).Scan(&sold)
	db.Raw("SELECT COALESCE(SUM(participations), 0) + COALESCE(SUM(units), 0) FROM user_purchases WHERE activity_id = ?", a.ID).Scan(&participations)
	if cancelled != 60 || sold != 0 || participations != 0 {
		t.Errorf("after the failures: %d orders cancelled (want 60), sold %d, users' units and participations %d (want 0)",
			cancelled, sold, participations)
	}
	// Each buyer's participation is back: the cap of 1 lets them open a group again.
	r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/groups", a.ID), testutil.Token(t, 1000, false), map[string]int{"quantity": 2})
	if r.Status != http.StatusAccepted {
		t.Errorf("a buyer whose group failed opens another: %d %s", r.Status, r.Body)
	}
	r = c.must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/ledger", a.ID), admin, nil)
	if !strings.Contains(string(r.Body), `"balanced":true`) {
		t.Errorf("ledger: %s", r.Body)
	}
}

// TestGroupSaleRebuiltAfterFlush: Redis loses everything (FLUSHALL) while groups wait
// for members. The sale is rebuilt from MySQL with its groups: a group with two of three
// seats stored fills when a buyer joins it again, the others fail when their window
// passes, and the audit is clean.
func TestGroupSaleRebuiltAfterFlush(t *testing.T) {
	s := testutil.StartStack(t)
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	a := createGroupSale(t, singleRedis(t, s), c, admin, 100, 2, 3, 2, 6*time.Second)
	gc := &groupCrowd{accepted: map[string]seatAnswer{}, codes: map[string]int{}}
	var groups []string
	for u := int64(1000); u < 1005; u++ {
		r, err := c.do("POST", fmt.Sprintf("/api/v1/activities/%d/groups", a.ID), testutil.Token(t, u, false), map[string]int{"quantity": 1})
		gc.record(t, r, err)
		var ans seatAnswer
		r.decode(t, &ans)
		groups = append(groups, ans.Group.ID)
	}
	r, err := c.do("POST", "/api/v1/groups/"+groups[0]+"/join", testutil.Token(t, 2000, false), map[string]int{"quantity": 2})
	gc.record(t, r, err)
	c.waitDrained(admin, a.ID, time.Minute)

	if err := s.Redis.Client(t).FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	flushed := time.Now()
	for {
		r, err := c.do("POST", "/api/v1/groups/"+groups[0]+"/join", testutil.Token(t, 2001, false),
			map[string]int{"quantity": 1}, "Idempotency-Key", "after-flush")
		if err == nil && r.Status == http.StatusAccepted {
			gc.record(t, r, err)
			var ans seatAnswer
			r.decode(t, &ans)
			if ans.Group.Members != 3 || ans.Group.Status != "complete" {
				t.Errorf("the rebuilt group after the third seat: %+v, want complete", ans.Group)
			}
			break
		}
		if err == nil && r.Status != http.StatusServiceUnavailable && r.Status != http.StatusNotFound {
			t.Fatalf("join after the flush: %d %s", r.Status, r.Body)
		}
		if time.Since(flushed) > 10*time.Second {
			t.Fatalf("no seat 10 s after the flush: %d %s", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("a seat again %v after the flush", time.Since(flushed).Round(10*time.Millisecond))
	var open struct{ Groups []group }
	c.must("GET", fmt.Sprintf("/api/v1/activities/%d/groups?limit=500", a.ID), "", nil).decode(t, &open)
	if len(open.Groups) != 4 {
		t.Errorf("%d open groups after the rebuild, want the other 4", len(open.Groups))
	}
	waitGroupsSettled(t, c, a)
	auditGroups(t, s, a, gc)
}

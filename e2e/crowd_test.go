package e2e

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"seckill/internal/testutil"
	"seckill/internal/worker"
)

// crowd is a flash crowd's outcome as its clients saw it.
type crowd struct {
	mu       sync.Mutex
	accepted map[string]order    // order id -> order, from 202 answers
	byKey    map[string][]string // "user/key" -> order ids of its 200 and 202 answers
	codes    map[string]int      // answers by status and error code
	attempts atomic.Int64
	failed   atomic.Int64 // no answer (transport error)
	// dropped counts requests cut off after they reached a server (not refused at connect).
	dropped atomic.Int64
	elapsed time.Duration
	// slowest is the longest a request waited for its answer (or its failure), in ns.
	slowest atomic.Int64
	errs    []string
}

func (cr *crowd) record(user int64, key string, r response, err error) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if err != nil {
		cr.failed.Add(1)
		cr.codes["no answer"]++
		if !errors.Is(err, syscall.ECONNREFUSED) { // refused: nothing listened
			cr.dropped.Add(1)
			cr.codes["cut off: "+err.Error()]++
		}
		return
	}
	label := fmt.Sprint(r.Status)
	if code := r.errorCode(); code != "" {
		label += " " + code
	}
	cr.codes[label]++
	switch r.Status {
	case http.StatusAccepted, http.StatusOK:
		var o order
		if err := jsonUnmarshal(r.Body, &o); err != nil || o.ID == "" {
			cr.errs = append(cr.errs, fmt.Sprintf("undecodable order %s", r.Body))
			return
		}
		if o.UserID != user {
			cr.errs = append(cr.errs, fmt.Sprintf("user %d got an order of user %d", user, o.UserID))
		}
		if r.Status == http.StatusAccepted {
			if o.Status != "queued" {
				cr.errs = append(cr.errs, fmt.Sprintf("202 with status %q", o.Status))
			}
			if _, dup := cr.accepted[o.ID]; dup {
				cr.errs = append(cr.errs, fmt.Sprintf("order %s accepted twice", o.ID))
			}
			cr.accepted[o.ID] = o
		} else if key == "" {
			cr.errs = append(cr.errs, "200 for a purchase without Idempotency-Key")
		}
		if key != "" {
			k := fmt.Sprintf("%d/%s", user, key)
			cr.byKey[k] = append(cr.byKey[k], o.ID)
		}
	case http.StatusConflict, http.StatusTooManyRequests, http.StatusServiceUnavailable:
	default:
		cr.errs = append(cr.errs, fmt.Sprintf("unexpected answer %d %s", r.Status, r.Body))
	}
}

// crowdPlan says who buys how.
type crowdPlan struct {
	users     int   // user ids firstUser..firstUser+users-1
	firstUser int64 // 1000 when 0
	// who, if set, picks the users: the first users ids from firstUser on it accepts
	// (for example the buyers of one home bucket of a sale of several).
	who         func(user int64) bool
	concurrency int
	// endpoints are API base URLs; requests go round robin.
	endpoints []string
	// during, if set, runs while the crowd is buying (to inject a fault); faultCrowdWith
	// tells it the sale through onSale first, when set.
	during func()
	onSale func(activity)
	// pace spreads the crowd: a pause after each user's attempts are sent.
	pace time.Duration
	// variants, if set, are a sale of variants' names: each attempt names one of them at
	// random (a double click the same one).
	variants []string
}

// runCrowd fires, for each user: two concurrent requests with the same
// Idempotency-Key (a double click), two concurrent requests without a key (two
// devices), and one more keyed request: five attempts per user, quantities 1 or 2.
func runCrowd(t *testing.T, activityID int64, p crowdPlan) *crowd {
	t.Helper()
	cr := &crowd{accepted: map[string]order{}, byKey: map[string][]string{}, codes: map[string]int{}}
	clients := make([]*client, len(p.endpoints))
	for i, e := range p.endpoints {
		clients[i] = newClient(t, e)
	}
	var next atomic.Int64
	pick := func() *client { return clients[int(next.Add(1))%len(clients)] }
	if p.firstUser == 0 {
		p.firstUser = 1000
	}
	ids := make([]int64, 0, p.users)
	for u := p.firstUser; len(ids) < p.users; u++ {
		if p.who == nil || p.who(u) {
			ids = append(ids, u)
		}
	}
	tokens := make([]string, p.users)
	for i := range tokens {
		tokens[i] = testutil.Token(t, ids[i], false)
	}
	type attempt struct {
		user    int64
		token   string
		qty     int
		key     string
		variant string
	}
	var groups [][]attempt // attempts in a group are sent at once
	rng := rand.New(rand.NewPCG(1, 2))
	variant := func() string {
		if len(p.variants) == 0 {
			return ""
		}
		return p.variants[rng.IntN(len(p.variants))]
	}
	for i := 0; i < p.users; i++ {
		u, tok := ids[i], tokens[i]
		k1, v1 := fmt.Sprintf("click-%d", u), variant()
		groups = append(groups,
			[]attempt{{u, tok, 1, k1, v1}, {u, tok, 1, k1, v1}},
			[]attempt{{u, tok, 1 + rng.IntN(2), "", variant()}, {u, tok, 1 + rng.IntN(2), "", variant()}},
			[]attempt{{u, tok, 1, fmt.Sprintf("later-%d", u), variant()}})
	}
	rng.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })

	sem := make(chan struct{}, p.concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	var faultDone chan struct{}
	if p.during != nil {
		faultDone = make(chan struct{})
		go func() { defer close(faultDone); p.during() }()
	}
	for _, g := range groups {
		if p.pace > 0 {
			// The plan's pace spreads the crowd over time: the load under test.
			time.Sleep(p.pace / 3)
		}
		for _, a := range g {
			sem <- struct{}{}
			wg.Add(1)
			go func(a attempt) {
				defer func() { <-sem; wg.Done() }()
				cr.attempts.Add(1)
				var hdr []string
				if a.key != "" {
					hdr = []string{"Idempotency-Key", a.key}
				}
				var body any = map[string]int{"quantity": a.qty}
				if a.variant != "" {
					body = map[string]any{"quantity": a.qty, "variant": a.variant}
				}
				began := time.Now()
				r, err := pick().do("POST", fmt.Sprintf("/api/v1/activities/%d/orders", activityID), a.token, body, hdr...)
				for took := int64(time.Since(began)); ; {
					if old := cr.slowest.Load(); took <= old || cr.slowest.CompareAndSwap(old, took) {
						break
					}
				}
				cr.record(a.user, a.key, r, err)
			}(a)
		}
	}
	wg.Wait()
	cr.elapsed = time.Since(start)
	if faultDone != nil {
		<-faultDone
	}
	for _, e := range cr.errs {
		t.Error(e)
	}
	return cr
}

// merge adds the outcome of another crowd on the same sale to cr.
func (cr *crowd) merge(o *crowd) {
	for id, a := range o.accepted {
		cr.accepted[id] = a
	}
	for k, ids := range o.byKey {
		cr.byKey[k] = append(cr.byKey[k], ids...)
	}
	for c, n := range o.codes {
		cr.codes[c] += n
	}
	cr.attempts.Add(o.attempts.Load())
	cr.failed.Add(o.failed.Load())
	cr.dropped.Add(o.dropped.Load())
}

// checkReplays: every answer for one Idempotency-Key names the same order.
func (cr *crowd) checkReplays(t *testing.T) (replayed int) {
	t.Helper()
	for k, ids := range cr.byKey {
		for _, id := range ids[1:] {
			if id != ids[0] {
				t.Errorf("key %s answered with orders %v", k, ids)
				break
			}
		}
		replayed += len(ids) - 1
	}
	return replayed
}

// auditMode says what a fault the test injected may have cost.
type auditMode int

const (
	// auditStrict: nothing; every order in MySQL had a 202 and every 202 is in MySQL.
	auditStrict auditMode = iota
	// auditFaults: requests left without an answer, or answered 503, may have orders.
	auditFaults
	// auditRedisLost: as auditFaults, and Redis lost its data, so the acknowledged
	// orders only it held (queued, not yet in MySQL) may be gone, and those whose task
	// survived may be stored failed when they cannot be adopted; both are counted.
	auditRedisLost
)

// audit waits until the queue has drained, then checks MySQL: no order stored twice or
// failed, none oversold, no user past the limit, activities.sold and the ledger
// balanced, and the crowd's 202s against MySQL's orders as mode allows.
func audit(t *testing.T, s *testutil.Stack, a activity, cr *crowd, mode auditMode) {
	t.Helper()
	st := newClient(t, s.URL).waitDrained(testutil.Token(t, 1, true), a.ID, 2*time.Minute)
	db := s.MySQL.Gorm
	var rows []struct {
		ID            string
		UserID        int64
		Quantity      int
		Status        string
		FailureReason string
	}
	if err := db.Raw("SELECT id, user_id, quantity, status, COALESCE(failure_reason, '') AS failure_reason FROM orders WHERE activity_id = ?", a.ID).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	inMySQL := map[string]bool{}
	units := int64(0)
	perUser := map[int64]int{}
	orphansFailed := 0 // acknowledged orders Redis lost that could not be adopted again
	for _, r := range rows {
		if inMySQL[r.ID] {
			t.Errorf("order %s stored twice", r.ID)
		}
		inMySQL[r.ID] = true
		if r.Status == "created" || r.Status == "paid" {
			units += int64(r.Quantity)
			perUser[r.UserID] += r.Quantity
		}
		if r.Status == "failed" && mode == auditRedisLost && strings.HasPrefix(r.FailureReason, worker.OrphanReasonPrefix) {
			orphansFailed++
		} else if r.Status == "failed" {
			t.Errorf("order %s failed in MySQL: %s", r.ID, r.FailureReason)
		}
		if acc, ok := cr.accepted[r.ID]; ok && (acc.Quantity != r.Quantity || acc.UserID != r.UserID) {
			t.Errorf("order %s: MySQL has %d x user %d, the 202 said %d x user %d", r.ID, r.Quantity, r.UserID, acc.Quantity, acc.UserID)
		}
	}
	lost := 0
	for id := range cr.accepted {
		if !inMySQL[id] {
			lost++
		}
	}
	unacknowledged := 0
	for id := range inMySQL {
		if _, ok := cr.accepted[id]; !ok {
			unacknowledged++
		}
	}
	over := 0
	for u, n := range perUser {
		if n > a.PerUserLimit {
			over++
			t.Errorf("user %d holds %d > limit %d", u, n, a.PerUserLimit)
		}
	}
	if lost != 0 && mode != auditRedisLost {
		t.Errorf("%d acknowledged orders missing in MySQL", lost)
	}
	if units > a.StockTotal {
		t.Errorf("oversold: %d units of %d", units, a.StockTotal)
	}
	if mode == auditStrict && unacknowledged != 0 {
		t.Errorf("%d orders in MySQL without a 202", unacknowledged)
	}
	if mode != auditStrict && unacknowledged > int(cr.failed.Load())+cr.codes["503 unavailable"] {
		t.Errorf("%d orders without a 202, more than the %d requests left without an answer or with 503",
			unacknowledged, cr.failed.Load()+int64(cr.codes["503 unavailable"]))
	}
	var sold int64
	db.Raw("SELECT sold FROM activities WHERE id = ?", a.ID).Scan(&sold)
	if sold != units {
		t.Errorf("activities.sold = %d, units in created and paid orders = %d", sold, units)
	}
	if st.StockAvailable+units != a.StockTotal {
		t.Errorf("ledger: available %d + sold %d != total %d", st.StockAvailable, units, a.StockTotal)
	}
	r := newClient(t, s.URL).must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/ledger", a.ID), testutil.Token(t, 1, true), nil)
	var l struct {
		Balanced   bool  `json:"balanced"`
		Difference int64 `json:"difference"`
	}
	r.decode(t, &l)
	if r.Status != http.StatusOK || !l.Balanced {
		t.Errorf("ledger route: %d %s", r.Status, r.Body)
	}
	t.Logf("audit: %d orders in MySQL, %d units of %d sold, %d lost, %d stored failed after Redis lost them, %d without a 202, %d users over the limit",
		len(rows), units, a.StockTotal, lost, orphansFailed, unacknowledged, over)
}

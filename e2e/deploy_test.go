package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"seckill/internal/buyer"
	"seckill/internal/config"
	"seckill/internal/stock/stocktest"
	"seckill/internal/task"
	"seckill/internal/testutil"
)

// rollCrowd buys through the front until it is stopped: each buyer makes purchases of
// one unit, each with an Idempotency-Key that it sends again after a 429 or 503 or no
// answer (what the API asks of a client), until the sale answers 409 (the limit, or
// sold out); a buyer in seven sends no key and never asks again. Every fourth buyer
// pays its orders once they are created.
type rollCrowd struct {
	t     *testing.T
	c     *client
	sales []activity // a buyer's sale: sales[user % len]
	crowd map[int64]*crowd
	// failures are answers no client may get: no answer at all, 502 or 504.
	failed  atomic.Int64
	mu      sync.Mutex
	answers map[string]int // by request kind and answer
	errs    []string
}

func (rc *rollCrowd) note(kind string, r response, err error) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	label := kind + " "
	switch {
	case err != nil:
		label += "no answer"
		if len(rc.errs) < 20 {
			rc.errs = append(rc.errs, fmt.Sprintf("%s: %v", kind, err))
		}
	default:
		label += fmt.Sprint(r.Status)
		if code := r.errorCode(); code != "" {
			label += " " + code
		}
		if r.Status == http.StatusBadGateway || r.Status == http.StatusGatewayTimeout {
			if len(rc.errs) < 20 {
				rc.errs = append(rc.errs, fmt.Sprintf("%s: %d %.200s", kind, r.Status, r.Body))
			}
			err = errors.New("gateway error")
		}
	}
	rc.answers[label]++
	if err != nil {
		rc.failed.Add(1)
		return false
	}
	return true
}

// buy makes user's purchases until the sale refuses them or ctx ends (a purchase
// under way is still asked again until it has an answer). Orders of every fourth
// buyer go to pay.
func (rc *rollCrowd) buy(ctx context.Context, user int64, pay chan<- order) {
	a := rc.sales[int(user)%len(rc.sales)]
	cr := rc.crowd[a.ID]
	token := testutil.Token(rc.t, user, false)
	path := fmt.Sprintf("/api/v1/activities/%d/orders", a.ID)
	for n := 0; ctx.Err() == nil; n++ {
		key := fmt.Sprintf("roll-%d-%d", user, n)
		if user%7 == 0 { // a client that sends no key, and does not ask again
			r, err := rc.c.do("POST", path, token, map[string]int{"quantity": 1})
			rc.note("purchase without a key", r, err)
			cr.record(user, "", r, err)
			if err != nil || r.Status == http.StatusConflict {
				return
			}
			continue
		}
		var r response
		for try := 0; ; try++ {
			var err error
			r, err = rc.c.do("POST", path, token, map[string]int{"quantity": 1}, "Idempotency-Key", key)
			rc.note("purchase", r, err)
			cr.record(user, key, r, err)
			if err == nil && r.Status != http.StatusTooManyRequests && r.Status != http.StatusServiceUnavailable {
				break
			}
			if try == 100 {
				rc.t.Errorf("user %d key %s: no final answer after %d tries", user, key, try)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		if r.Status == http.StatusConflict {
			return
		}
		if r.Status == http.StatusAccepted && user%4 == 0 {
			var o order
			if jsonUnmarshal(r.Body, &o) == nil {
				select {
				case pay <- o:
				default: // the payers are behind: this one stays unpaid
				}
			}
		}
	}
}

// pay waits until o is created and confirms its payment as the shop's back end does.
func (rc *rollCrowd) pay(o order) {
	token, shop := testutil.Token(rc.t, o.UserID, false), testutil.ServiceToken(rc.t, 900)
	for deadline := time.Now().Add(30 * time.Second); ; {
		r, err := rc.c.do("GET", "/api/v1/orders/"+o.ID, token, nil)
		if rc.note("get order", r, err) && r.Status == http.StatusOK {
			var got order
			if jsonUnmarshal(r.Body, &got) == nil && got.Status == "created" {
				break
			}
		}
		if time.Now().After(deadline) {
			rc.t.Errorf("order %s not created 30 s after its 202", o.ID)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	for try := 0; try < 100; try++ {
		r, err := rc.c.do("POST", "/api/v1/orders/"+o.ID+"/pay", shop, nil)
		if !rc.note("pay", r, err) || r.Status == http.StatusServiceUnavailable || r.Status == http.StatusTooManyRequests {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if r.Status != http.StatusOK {
			rc.t.Errorf("pay %s: %d %s", o.ID, r.Status, r.Body)
		}
		return
	}
	rc.t.Errorf("pay %s: no final answer", o.ID)
}

// nginxLog counts the lines of nginx's error log by what happened: what the front met
// at the backends and dealt with itself (a request tried on another API). It returns
// the lines of requests that failed after they were sent, for the log.
func nginxLog(t *testing.T, path string) (map[string]int, []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{"no live upstreams", "upstream prematurely closed connection", "reset by peer",
		"Connection refused", "timed out", "upstream server temporarily disabled"}
	out := map[string]int{}
	var sent []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, k := range kinds {
			if strings.Contains(line, k) {
				out[k]++
				if k == "upstream prematurely closed connection" || k == "reset by peer" {
					sent = append(sent, line)
				}
			}
		}
	}
	return out, sent
}

// TestRollingDeployBehindNginx: three APIs and two workers behind the project's nginx
// front, a crowd buying (and paying) with retries by Idempotency-Key for about 40 s,
// and meanwhile each API, then each worker, replaced one at a time as a deploy does:
// SIGTERM, wait for it to exit, start it again on the same address. No client gets a
// 502, a 504 or a broken connection; every order answered 202 (or 200, when nginx
// sent a purchase to a second API after the first had made it) is in MySQL once; no
// sale is oversold and no buyer is past the limit.
func TestRollingDeployBehindNginx(t *testing.T) {
	redis := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	s := testutil.StartStackOnTopology(t, testutil.MySQL(t), redis.Topology(), 3, 2, "SECKILL_TRUSTED_PROXIES=127.0.0.1/32")
	s.Redis = redis
	front := testutil.StartNginxLogged(t, hostPorts(s.URLs), testutil.NoLimits)
	c := newClient(t, front.URL)
	admin := testutil.Token(t, 1, true)
	// A sale that lasts the whole roll, and a small one that sells out during it.
	rc := &rollCrowd{t: t, c: c, sales: []activity{c.createSale(admin, 1_000_000, 3), c.createSale(admin, 1_500, 2)},
		crowd: map[int64]*crowd{}, answers: map[string]int{}}
	for _, a := range rc.sales {
		rc.crowd[a.ID] = &crowd{accepted: map[string]order{}, byKey: map[string][]string{}, codes: map[string]int{}}
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	pay := make(chan order, 64)
	var buyers, payers sync.WaitGroup
	var next atomic.Int64
	for range 32 {
		buyers.Add(1)
		go func() {
			defer buyers.Done()
			for ctx.Err() == nil {
				rc.buy(ctx, 1000+next.Add(1), pay)
			}
		}()
	}
	for range 2 {
		payers.Add(1)
		go func() {
			defer payers.Done()
			for o := range pay {
				if ctx.Err() == nil { // once the crowd stops, the orders left stay unpaid
					rc.pay(o)
				}
			}
		}()
	}

	began := time.Now()
	p := newProbeWatch(t)
	const up = `{"ready":true,"redis":"ok","mysql":"ok"}`
	replace := func(name string, proc *testutil.Process, readyz string, atLeast, atMost time.Duration) {
		t.Helper()
		start := time.Now()
		proc.Signal(syscall.SIGTERM) // returns once it has exited
		took := time.Since(start)
		if exited, code := proc.Exited(); !exited || code != 0 {
			t.Errorf("%s after SIGTERM: exited %v with %d, want a clean exit", name, exited, code)
		}
		if took < atLeast || took > atMost {
			t.Errorf("%s exited %v after SIGTERM, want between %v and %v", name, took, atLeast, atMost)
		}
		proc.Start()
		ready := p.wait(readyz, 200, up, time.Now(), 60*time.Second)
		t.Logf("%s at %v: exited %v after SIGTERM, ready again %v after its start", name,
			start.Sub(began).Round(100*time.Millisecond), took.Round(10*time.Millisecond), ready.Round(10*time.Millisecond))
		// A second between one process's return and the next one's stop: the roll's pace, under
		// test.
		time.Sleep(time.Second)
	}
	// The crowd runs 3 s before the roll begins: the scenario under test.
	time.Sleep(3 * time.Second)
	// SECKILL_SHUTDOWN_DELAY and _TIMEOUT as shipped: 5 s and 20 s.
	for i, api := range s.APIs {
		replace(fmt.Sprintf("API %d", i+1), api, s.URLs[i]+"/readyz", 5*time.Second, 25*time.Second)
	}
	for i, w := range s.Workers {
		replace(fmt.Sprintf("worker %d", i+1), w, s.WorkerURLs[i]+"/readyz", 0, 20*time.Second)
	}
	// The crowd runs 3 s more after the roll: the scenario under test.
	time.Sleep(3 * time.Second)
	stop()
	buyers.Wait()
	close(pay)
	payers.Wait()
	t.Logf("the crowd bought for %v", time.Since(began).Round(100*time.Millisecond))

	labels := make([]string, 0, len(rc.answers))
	for l := range rc.answers {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		t.Logf("  %-40s %d", l, rc.answers[l])
	}
	met, sent := nginxLog(t, front.ErrorLog)
	t.Logf("nginx met, and dealt with: %v", met)
	for _, l := range sent {
		t.Logf("  %s", l)
	}
	if n := rc.failed.Load(); n != 0 {
		t.Errorf("%d requests got no answer, or 502 or 504; the first: %s", n, strings.Join(rc.errs, "; "))
	}
	if rc.answers["purchase 202"] == 0 || rc.answers["pay 200"] == 0 {
		t.Errorf("the crowd made no purchase or no pay: %v", rc.answers)
	}
	for _, a := range rc.sales {
		cr := rc.crowd[a.ID]
		for _, e := range cr.errs {
			t.Error(e)
		}
		cr.checkReplays(t)
		// A purchase nginx sent to a second API after the first had made it is answered
		// 200 with its order: acknowledged all the same.
		replayed := 0
		for _, ids := range cr.byKey {
			if _, ok := cr.accepted[ids[0]]; !ok {
				cr.accepted[ids[0]] = order{ID: ids[0]}
				replayed++
			}
		}
		st := c.stats(admin, a.ID)
		t.Logf("sale %d (stock %d): %d acknowledged orders (%d of them first answered by a replay), %d units left",
			a.ID, a.StockTotal, len(cr.accepted), replayed, st.StockAvailable)
		audit(t, s, a, cr, auditStrict)
	}
}

// TestAPIShutdownSequence: on SIGTERM an API answers /readyz 503 at once and keeps
// answering every request for SECKILL_SHUTDOWN_DELAY, connections kept alive; then it
// refuses new connections, answers a request on a connection still open (closing the
// connection after the answer) and the request in flight, hands every order it
// acknowledged to the queue, and exits within DELAY + TIMEOUT.
func TestAPIShutdownSequence(t *testing.T) {
	// A timeout of 12 s gives the connections still open the full 3 s after the delay,
	// room for the steps below on a slow machine.
	const delay, timeout = 4 * time.Second, 12 * time.Second
	s := testutil.StartStack(t, "SECKILL_SHUTDOWN_DELAY=4s", "SECKILL_SHUTDOWN_TIMEOUT=12s", "SECKILL_LOCK_WAIT=5s")
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	a := c.createSale(admin, 1000, 3)
	path := fmt.Sprintf("/api/v1/activities/%d/orders", a.ID)
	// The worker stops first: the orders the API hands on stay in the queue, where the
	// test finds them.
	s.Worker.Signal(syscall.SIGTERM)

	cr := &crowd{accepted: map[string]order{}, byKey: map[string][]string{}, codes: map[string]int{}}
	keep := &http.Client{Timeout: 10 * time.Second} // one connection, kept alive
	user := int64(100)
	buy := func(when string) (int, bool) { // status, and whether the answer closes its connection
		t.Helper()
		user++
		key := fmt.Sprintf("seq-%d", user)
		req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(`{"quantity":1}`))
		req.Header.Set("Authorization", "Bearer "+testutil.Token(t, user, false))
		req.Header.Set("Idempotency-Key", key)
		resp, err := keep.Do(req)
		if err != nil {
			t.Fatalf("purchase %s: %v", when, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		cr.record(user, key, response{Status: resp.StatusCode, Body: body}, err)
		return resp.StatusCode, resp.Close
	}
	if status, closes := buy("before SIGTERM"); status != 202 || closes {
		t.Fatalf("purchase before SIGTERM: %d, closes its connection %v; want 202 kept alive", status, closes)
	}

	s.API.Send(syscall.SIGTERM)
	term := time.Now()
	p := newProbeWatch(t)
	took := p.wait(s.URL+"/readyz", 503, `{"ready":false,"redis":"ok","mysql":"ok"}`, term, 2*time.Second)
	t.Logf("readyz 503 %v after SIGTERM", took.Round(time.Millisecond))

	// Every request is answered for the whole delay, on new connections and kept ones.
	served := 0
	for time.Since(term) < delay-2*time.Second {
		if status, closes := buy("during the delay"); status != 202 || closes {
			t.Errorf("purchase %v after SIGTERM: %d, closes its connection %v; want 202 kept alive", time.Since(term), status, closes)
		}
		if r := c.must("GET", fmt.Sprintf("/api/v1/activities/%d", a.ID), "", nil); r.Status != 200 {
			t.Errorf("GET the sale %v after SIGTERM: %d", time.Since(term), r.Status)
		}
		served++
		// Requests every 100 ms through the delay: the behaviour under test.
		time.Sleep(100 * time.Millisecond)
	}

	// A request in flight across the end of the delay: its buyer's lock is held until
	// 1 s past it, so it waits inside the API (sent up to 2 s before the end) while the
	// listener closes.
	rdb := config.Config{RedisAddrs: []string{s.Redis.Addr}}.Redis()
	defer rdb.Close()
	const held = 77
	hold := time.Until(term.Add(delay + time.Second))
	if err := stocktest.New(rdb).HoldUserLock(context.Background(), a.ID, buyer.Of(held), "held-by-a-test", hold); err != nil {
		t.Fatal(err)
	}
	inFlight := make(chan response, 1)
	go func() {
		r, err := newClient(t, s.URL).do("POST", path, testutil.Token(t, held, false), map[string]int{"quantity": 1}, "Idempotency-Key", "in-flight")
		if err != nil {
			t.Errorf("the purchase in flight at the end of the delay: %v", err)
		}
		inFlight <- r
	}()
	// Just past the end of the shutdown delay: the moment under test.
	time.Sleep(time.Until(term.Add(delay + 300*time.Millisecond)))
	// A new connection is refused; a request on a connection kept open is answered, and
	// its connection closed after the answer.
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if _, err := fresh.Get(s.URL + "/healthz"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a new connection after the delay: %v, want it refused", err)
	}
	if status, closes := buy("on a kept connection after the delay"); status != 202 || !closes {
		t.Errorf("purchase on a kept connection after the delay: %d, closes its connection %v; want 202 and closed", status, closes)
	}
	r := <-inFlight
	cr.record(held, "in-flight", r, nil)
	if r.Status != http.StatusAccepted {
		t.Errorf("the purchase in flight at the end of the delay: %d %s, want 202", r.Status, r.Body)
	}
	t.Logf("%d purchases answered during the delay; the one in flight at its end answered %d after %v",
		served, r.Status, time.Since(term).Round(10*time.Millisecond))

	if !s.API.WaitExit(delay + timeout - time.Since(term)) {
		t.Fatalf("the API still runs %v after SIGTERM", delay+timeout)
	}
	exitedAfter := time.Since(term)
	if _, code := s.API.Exited(); code != 0 {
		t.Errorf("the API exited with %d", code)
	}
	t.Logf("the API exited %v after SIGTERM", exitedAfter.Round(10*time.Millisecond))

	// Every acknowledged order is in a task on the queue: none is left to the repair pass.
	tasks, err := asynq.NewInspector(asynq.RedisClientOpt{Addr: s.Redis.Addr}).ListPendingTasks(task.Queue, asynq.PageSize(1000))
	if err != nil {
		t.Fatal(err)
	}
	queued := map[string]bool{}
	for _, info := range tasks {
		orders, err := task.ParseOrders(info.Type, info.Payload)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range orders {
			queued[o.OrderID] = true
		}
	}
	for id := range cr.accepted {
		if !queued[id] {
			t.Errorf("acknowledged order %s is not on the queue after the API exited", id)
		}
	}
	t.Logf("%d acknowledged orders, all on the queue", len(cr.accepted))

	s.API.Start()
	s.WaitReady(t)
	s.Worker.Start()
	audit(t, s, a, cr, auditStrict)
}

// TestWorkerShutdownGivesBackTasks: a worker whose tasks cannot finish in time (MariaDB
// frozen under them, each of its statements waiting its 2 s bound) exits within
// SECKILL_SHUTDOWN_TIMEOUT of SIGTERM and gives those tasks back to the queue, none
// left active for its lease to run out; once MariaDB answers, another worker writes
// every order once.
func TestWorkerShutdownGivesBackTasks(t *testing.T) {
	const timeout = 2 * time.Second // the tasks in hand get 1 s of it
	db := testutil.StartMariaDB(t)
	s := testutil.StartStackOn(t, testutil.MySQLOn(t, db.DSN), "SECKILL_SHUTDOWN_TIMEOUT=2s")
	c := newClient(t, s.URL)
	a := c.createSale(testutil.Token(t, 1, true), 1000, 3)
	cr := &crowd{accepted: map[string]order{}, byKey: map[string][]string{}, codes: map[string]int{}}
	newProbeWatch(t).wait(s.WorkerURLs[0]+"/readyz", 200, `{"ready":true,"redis":"ok","mysql":"ok"}`, time.Now(), 30*time.Second)
	db.Pause()
	var took time.Duration
	func() {
		defer db.Resume()
		for u := int64(1); u <= 50; u++ {
			key := fmt.Sprintf("w-%d", u)
			r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, u, false),
				map[string]int{"quantity": 1}, "Idempotency-Key", key)
			cr.record(u, key, r, nil)
		}
		// The worker has taken tasks, whose transactions wait for MariaDB.
		in := asynq.NewInspector(asynq.RedisClientOpt{Addr: s.Redis.Addr})
		defer in.Close()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if q, err := in.GetQueueInfo(task.Queue); err == nil && q.Active > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Error("the worker took no task in 30 s")
				break
			}
		}
		start := time.Now()
		s.Worker.Send(syscall.SIGTERM)
		if !s.Worker.WaitExit(timeout + 3*time.Second) {
			t.Errorf("the worker still runs %v after SIGTERM (SECKILL_SHUTDOWN_TIMEOUT=%v)", timeout+3*time.Second, timeout)
			s.Worker.Signal(syscall.SIGKILL)
		}
		took = time.Since(start)
	}()
	if _, code := s.Worker.Exited(); code != 0 {
		t.Errorf("the worker exited with %d", code)
	}
	t.Logf("the worker exited %v after SIGTERM with its tasks held by a frozen MariaDB", took.Round(10*time.Millisecond))
	// The margin covers the race detector's pause of 1 s at exit (GORACE atexit_sleep_ms).
	if took > timeout+2*time.Second {
		t.Errorf("the worker took %v to exit, want within SECKILL_SHUTDOWN_TIMEOUT (%v) and a margin", took, timeout)
	}
	if len(cr.accepted) != 50 {
		t.Fatalf("%d of 50 purchases acknowledged with MariaDB frozen: %v", len(cr.accepted), cr.codes)
	}
	in := asynq.NewInspector(asynq.RedisClientOpt{Addr: s.Redis.Addr})
	active, err := in.ListActiveTasks(task.Queue)
	if err != nil {
		t.Fatal(err)
	}
	q, err := in.GetQueueInfo(task.Queue)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the worker's exit: %d tasks pending, %d to retry, %d active", q.Pending, q.Retry, len(active))
	if len(active) != 0 || q.Pending+q.Retry == 0 {
		t.Errorf("after the worker's exit: %d tasks active, %d pending, %d to retry; want none active, the rest back on the queue",
			len(active), q.Pending, q.Retry)
	}
	s.Worker.Start()
	audit(t, s, a, cr, auditStrict)
}

// A task as the previous release's API enqueued it (type order:persist, its own line
// format) is written by this release's worker, every field of it: the task that waited
// across a rolling deploy, or was retried through a MySQL outage meanwhile. The order is
// reserved in Redis as an API reserves it; the task alone carries its Idempotency-Key
// into MySQL, and it is stored before the repair pass would enqueue it again (10 s).
func TestWorkerWritesThePreviousReleasesTask(t *testing.T) {
	u := takeWithoutTask(t, "roll-1")
	s, c, admin, a, id, now := u.s, u.c, u.admin, u.sale, u.id, u.now
	ctx := context.Background()
	payload := fmt.Sprintf("%s %d 77 2 3000 %d %d 2 0 - 0 0 roll-1 q2", id, a.ID, now.UnixMilli(),
		now.Add(15*time.Minute).UnixMilli())
	client := asynq.NewClientFromRedisClient(u.rdb)
	if _, err := client.EnqueueContext(ctx, asynq.NewTask("order:persist", []byte(payload), asynq.Queue("orders"),
		asynq.MaxRetry(10000), asynq.Timeout(2*time.Minute))); err != nil {
		t.Fatal(err)
	}
	var row struct {
		Status, IdempotencyKey, RequestFingerprint string
		Quantity                                   int
		AmountCents                                int64
	}
	for start := time.Now(); time.Since(start) < 8*time.Second && row.Status != "created"; time.Sleep(100 * time.Millisecond) {
		if err := s.MySQL.Gorm.Raw("SELECT status, idempotency_key, request_fingerprint, quantity, amount_cents FROM orders WHERE id = ?",
			id).Scan(&row).Error; err != nil {
			t.Fatal(err)
		}
	}
	if row.Status != "created" || row.IdempotencyKey != "roll-1" || row.RequestFingerprint != "q2" || row.Quantity != 2 ||
		row.AmountCents != 3000 {
		t.Fatalf("the previous release's task: order row %+v, want created within 8 s, 2 units for 3000 with key roll-1 and fingerprint q2", row)
	}
	if st := c.waitDrained(admin, a.ID, time.Minute); st.StockAvailable != 8 || st.Sold != 2 {
		t.Errorf("stats %+v, want 8 available and 2 sold", st)
	}
}

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/config"
	"seckill/internal/stock"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// faultCrowd is the crowd of every fault test: 900 users, 4,500 attempts spread over a
// few seconds, on a sale of 2,000 units with a limit of 3, so selling goes on while the
// fault happens.
func faultCrowd(t *testing.T, s *testutil.Stack, endpoints []string, fault func()) (activity, *crowd) {
	t.Helper()
	return faultCrowdWith(t, s, crowdPlan{endpoints: endpoints, during: fault})
}

// faultCrowdWith is faultCrowd with more of the plan set by the caller.
func faultCrowdWith(t *testing.T, s *testutil.Stack, p crowdPlan) (activity, *crowd) {
	t.Helper()
	a := newClient(t, s.URL).createSale(testutil.Token(t, 1, true), 2000, 3)
	if p.onSale != nil {
		p.onSale(a)
	}
	p.users, p.concurrency, p.pace = 900, 64, 5*time.Millisecond
	cr := runCrowd(t, a.ID, p)
	t.Logf("%d attempts in %v; answers %v", cr.attempts.Load(), cr.elapsed.Round(time.Millisecond), cr.codes)
	return a, cr
}

// after runs f once d has passed: when a fault lands in a crowd, the scenario under test.
func after(d time.Duration, f func()) { time.Sleep(d); f() }

func TestWorkerKilledMidCrowd(t *testing.T) {
	s := testutil.StartStack(t)
	a, cr := faultCrowd(t, s, []string{s.URL}, func() {
		after(time.Second, func() { s.Worker.Signal(syscall.SIGKILL) })
		t.Log("worker killed with SIGKILL")
		after(time.Second, s.Worker.Start)
		t.Log("worker restarted")
	})
	cr.checkReplays(t)
	audit(t, s, a, cr, auditStrict)
}

func TestOneOfTwoAPIsKilledMidCrowd(t *testing.T) {
	s := testutil.StartStack(t)
	second, url2 := s.StartAPI(t)
	a, cr := faultCrowd(t, s, []string{s.URL, url2}, func() {
		after(time.Second, func() { second.Signal(syscall.SIGKILL) })
		t.Log("second API killed with SIGKILL")
		after(time.Second, second.Start)
		t.Log("second API restarted")
	})
	cr.checkReplays(t)
	if cr.failed.Load() == 0 {
		t.Error("no request met the killed API: the fault did not land during the crowd")
	}
	// A request cut off after its units were taken may leave an order without a 202, and
	// the killed API may not have enqueued orders it had answered 202 for; the repair
	// pass enqueues both 10 s after they were taken. They are queued in Redis until
	// then, and the audit waits until no order of the sale is; it counts the first kind
	// as unanswered.
	audit(t, s, a, cr, auditFaults)
}

func TestMariaDBFrozenMidCrowd(t *testing.T) {
	db := testutil.StartMariaDB(t)
	s := testutil.StartStackOn(t, testutil.MySQLOn(t, db.DSN))
	var probe response
	var probeTook time.Duration
	var depth float64
	var sale activity // the crowd's: the probe buys from it too
	a, cr := faultCrowdWith(t, s, crowdPlan{endpoints: []string{s.URL}, onSale: func(a activity) { sale = a }, during: func() {
		// This runs beside the crowd, not in the test's goroutine: it reports with
		// t.Errorf, never t.Fatal, and MariaDB is resumed whatever happens (a frozen
		// server would hang the test's clean-up).
		after(500*time.Millisecond, db.Pause)
		defer func() {
			db.Resume()
			t.Log("MariaDB resumed with SIGCONT after 5s")
		}()
		t.Log("MariaDB frozen with SIGSTOP")
		// While MySQL answers nothing, a purchase still gets its 202 at once.
		// A second into the freeze, a purchase: the scenario under test.
		time.Sleep(time.Second)
		start := time.Now()
		var err error
		probe, err = newClient(t, s.URL).do("POST", fmt.Sprintf("/api/v1/activities/%d/orders", sale.ID), testutil.Token(t, 99999, false),
			map[string]int{"quantity": 1})
		probeTook = time.Since(start)
		if err != nil {
			t.Errorf("purchase while MySQL was frozen: %v", err)
		}
		// The orders MySQL cannot take wait in the queue, and the worker says so.
		if m, err := newClient(t, "").do("GET", s.WorkerMetricsURL, "", nil); err != nil {
			t.Errorf("worker metrics while MySQL was frozen: %v", err)
		} else {
			depth = metricValue(string(m.Body), "seckill_queue_depth")
		}
		// The freeze goes on, 5 s in all: the scenario under test.
		time.Sleep(4 * time.Second)
	}})
	t.Logf("purchase while MySQL was frozen: %d in %v; queue depth %v", probe.Status, probeTook, depth)
	if depth <= 0 {
		t.Errorf("seckill_queue_depth = %v while MySQL was frozen, want the waiting orders counted", depth)
	}
	if probe.Status != http.StatusAccepted && probe.errorCode() != "sold_out" {
		t.Errorf("purchase while MySQL was frozen: %d %s; want 202", probe.Status, probe.Body)
	}
	if probe.Status == http.StatusAccepted {
		var o order
		probe.decode(t, &o)
		cr.accepted[o.ID] = o
	}
	cr.checkReplays(t)
	audit(t, s, a, cr, auditStrict)
}

func TestRedisRestartedMidCrowd(t *testing.T) {
	s := testutil.StartStack(t)
	a, cr := faultCrowd(t, s, []string{s.URL}, func() {
		after(time.Second, s.Redis.Kill)
		t.Log("Redis killed with SIGKILL (AOF, appendfsync always)")
		after(time.Second, s.Redis.Start)
		t.Log("Redis restarted from its AOF")
	})
	cr.checkReplays(t)
	// Requests during the outage get 503 or, when go-redis's redial outlasts the
	// outage, wait and succeed; either way the outage must fall inside the crowd.
	if cr.elapsed < 2*time.Second {
		t.Errorf("the crowd lasted %v: Redis was killed at 1 s and back at 2 s, outside it", cr.elapsed)
	}
	if cr.dropped.Load() != 0 {
		t.Errorf("%d requests got no HTTP answer while Redis was down; want 503s", cr.dropped.Load())
	}
	// A reservation whose reply was lost stays queued in Redis until the repair pass
	// enqueues it; the audit waits until no order of the sale is queued.
	audit(t, s, a, cr, auditFaults)
}

// unenqueued is a stack with a sale of 10 units (two a buyer) in which 2 units were
// taken for user 77 at now, with Idempotency-Key key ("" for none), by the reserve
// script as an API runs it, and no task enqueued: an order an API took and did not
// hand on.
type unenqueued struct {
	s     *testutil.Stack
	c     *client
	admin string
	sale  activity
	rdb   redis.UniversalClient
	id    string
	now   time.Time
}

func takeWithoutTask(t *testing.T, key string) unenqueued {
	t.Helper()
	s := testutil.StartStack(t)
	u := unenqueued{s: s, c: newClient(t, s.URL), admin: testutil.Token(t, 1, true),
		rdb: config.Config{RedisAddrs: []string{s.Redis.Addr}}.Redis(), now: time.Now().Truncate(time.Millisecond)}
	t.Cleanup(func() { _ = u.rdb.Close() })
	u.sale = u.c.createSale(u.admin, 10, 2)
	u.id = "01KAAAAAAAAAAAAAAAAAAAAAAA" + fmt.Sprint(u.sale.ID)
	if _, err := stocktest.New(u.rdb).Reserve(context.Background(), reserve.Reservation{Purchase: stock.Purchase{ActivityID: u.sale.ID, Buyer: "77", Quantity: 2, IdempotencyKey: key},
		OrderID: u.id, Now: u.now, LockToken: "api", LockTTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	return u
}

// The API died between taking the units and enqueueing: the repair pass finds the
// reservation and the order reaches MySQL.
func TestRepairEnqueuesLostReservation(t *testing.T) {
	u := takeWithoutTask(t, "")
	c, admin, a, id := u.c, u.admin, u.sale, u.id
	start := time.Now()
	var o order
	for time.Since(start) < 20*time.Second {
		r := c.must("GET", "/api/v1/orders/"+id, admin, nil)
		if r.Status == http.StatusOK {
			r.decode(t, &o)
			if o.Status == "created" {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if o.Status != "created" || o.Quantity != 2 || o.UserID != 77 || o.AmountCents != 2*1500 {
		t.Fatalf("lost reservation: order = %+v after %v, want created, 2 units of user 77", o, time.Since(start))
	}
	t.Logf("the repair pass enqueued the lost reservation; created %v after it was taken", time.Since(start).Round(100*time.Millisecond))
	st := c.waitDrained(admin, a.ID, time.Minute)
	if st.StockAvailable != 8 || st.Sold != 2 {
		t.Errorf("stats %+v, want 8 available and 2 sold", st)
	}
}

// SIGTERM mid-crowd: the worker finishes or hands back its tasks, the API exits
// cleanly; after restarts nothing is lost. (A request written on a keep-alive
// connection as the server closes it fails without being read; the audit counts such
// requests as unanswered.)
// The API's shutdown delay (SECKILL_SHUTDOWN_DELAY, 5 s by default) keeps it serving
// while a load balancer takes it out of rotation; TestAPIShutdownSequence holds that.
// Here the delay is 1 s so that the API is certainly gone, and restarted, while the
// six-second crowd still runs: requests meet the stopped API and are retried.
func TestGracefulShutdown(t *testing.T) {
	s := testutil.StartStack(t, "SECKILL_SHUTDOWN_DELAY=1s")
	a, cr := faultCrowd(t, s, []string{s.URL}, func() {
		after(time.Second, func() { s.Worker.Signal(syscall.SIGTERM) })
		t.Log("worker stopped with SIGTERM")
		if exited, code := s.Worker.Exited(); !exited || code != 0 {
			t.Errorf("worker after SIGTERM: exited %v with %d, want a clean exit", exited, code)
		}
		after(200*time.Millisecond, func() { s.API.Signal(syscall.SIGTERM) })
		t.Log("API stopped with SIGTERM")
		if exited, code := s.API.Exited(); !exited || code != 0 {
			t.Errorf("API after SIGTERM: exited %v with %d, want a clean exit", exited, code)
		}
		s.API.Start()
		s.WaitReady(t)
		s.Worker.Start()
		t.Log("API and worker restarted")
	})
	if cr.failed.Load() == 0 {
		t.Error("no request met the stopped API: the fault did not land during the crowd")
	}
	cr.checkReplays(t)
	audit(t, s, a, cr, auditStrict)
}

// SIGTERM while requests are inside the API: each of them is answered before it exits.
// The requests are purchases of one user whose lock is held, so they are certainly in
// the handler, waiting, when the signal comes.
func TestAPIAnswersRequestsInFlightOnSIGTERM(t *testing.T) {
	s := testutil.StartStack(t, "SECKILL_LOCK_WAIT=5s") // a purchase waits out the held lock
	c := newClient(t, s.URL)
	a := c.createSale(testutil.Token(t, 1, true), 100, 3)
	rdb := config.Config{RedisAddrs: []string{s.Redis.Addr}}.Redis()
	defer rdb.Close()
	const user = 4242
	const held = 2 * time.Second
	if err := stocktest.New(rdb).HoldUserLock(context.Background(), a.ID, buyer.Of(user), "held-by-a-test", held); err != nil {
		t.Fatal(err)
	}
	token := testutil.Token(t, user, false)
	answers := make(chan string, 8)
	for i := 0; i < 8; i++ {
		go func() {
			r, err := c.do("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), token, map[string]int{"quantity": 1})
			if err != nil {
				answers <- "no answer: " + err.Error()
				return
			}
			answers <- fmt.Sprintf("%d %s", r.Status, r.errorCode())
		}()
	}
	waitMetric(t, s.MetricsURL, "seckill_purchases_in_flight", 8, held*3/4) // all eight wait for the lock inside the API
	s.API.Signal(syscall.SIGTERM)
	got := map[string]int{}
	for i := 0; i < 8; i++ {
		got[<-answers]++
	}
	if exited, code := s.API.Exited(); !exited || code != 0 {
		t.Errorf("API after SIGTERM: exited %v with %d, want a clean exit", exited, code)
	}
	// Up to the limit of 3 units get 202; the rest 409 limit_exceeded or 429 busy.
	if got["202 "] == 0 || got["202 "]+got["409 limit_exceeded"]+got["429 busy"] != 8 {
		t.Errorf("answers to requests in flight at SIGTERM: %v; want every one answered, some 202", got)
	}
	t.Logf("answers to the requests in flight at SIGTERM: %v", got)
}

// A Redis that stops answering (SIGSTOP) must not hang purchases: they get 503 within
// the client's timeouts, and purchases work again once Redis answers.
func TestRedisFrozenAnswers503InBoundedTime(t *testing.T) {
	s := testutil.StartStack(t)
	c := newClient(t, s.URL)
	a := c.createSale(testutil.Token(t, 1, true), 100, 3)
	path := fmt.Sprintf("/api/v1/activities/%d/orders", a.ID)
	s.Redis.Pause()
	start := time.Now()
	r := c.must("POST", path, testutil.Token(t, 501, false), map[string]int{"quantity": 1})
	took := time.Since(start)
	ready := c.must("GET", "/readyz", "", nil)
	for ready.Status == http.StatusOK && time.Since(start) < 3*time.Second { // the probe's bound
		time.Sleep(50 * time.Millisecond)
		ready = c.must("GET", "/readyz", "", nil)
	}
	readyTook := time.Since(start)
	s.Redis.Resume()
	t.Logf("purchase while Redis was frozen: %d %s after %v; readyz %d after %v", r.Status, r.errorCode(), took.Round(time.Millisecond),
		ready.Status, readyTook.Round(time.Millisecond))
	if r.Status != http.StatusServiceUnavailable || r.errorCode() != "unavailable" || took > 3*time.Second {
		t.Errorf("purchase while Redis was frozen: %d %s after %v; want 503 unavailable within 3 s", r.Status, r.Body, took)
	}
	if ready.Status != http.StatusServiceUnavailable {
		t.Errorf("readyz while Redis was frozen: %d %s 3 s on, want 503", ready.Status, ready.Body)
	}
	cr := &crowd{accepted: map[string]order{}, byKey: map[string][]string{}, codes: map[string]int{"503 unavailable": 1}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := c.must("POST", path, testutil.Token(t, 502, false), map[string]int{"quantity": 1})
		if r.Status == http.StatusAccepted {
			var o order
			r.decode(t, &o)
			cr.accepted[o.ID] = o
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Redis resumed: %d %s", r.Status, r.Body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The frozen purchase's script may have run when Redis resumed, after the API had
	// answered 503 and its roll-back had found nothing yet: that is the one 503 that can
	// take units (docs/concepts.md, Durability), and the repair pass then writes the order:
	// queued in Redis until then, which the audit waits out. The audit allows an order
	// without a 202 for that 503, and nothing else.
	audit(t, s, a, cr, auditFaults)
}

// metricValue reads one unlabelled value from Prometheus text, or -1 when absent.
func metricValue(text, name string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

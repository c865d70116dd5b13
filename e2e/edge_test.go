package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// lineStatus is a line's public status (GET /api/v1/activities/{id}/line/status).
type lineStatus struct {
	State           string    `json:"state"`
	AdmittedThrough int64     `json:"admitted_through"`
	Joined          int64     `json:"joined"`
	Admitted        int64     `json:"admitted"`
	UnitsLeft       int64     `json:"units_left"`
	AsOf            time.Time `json:"as_of"`
}

// decodeInto reads the answer into v (for a goroutine other than the test's).
func (r response) decodeInto(v any) error { return json.Unmarshal(r.Body, v) }

// readCrowd runs clients that GET the paths in turn, straight at base, until stop is
// closed, and returns the answers by status and their latencies.
type readCrowd struct {
	mu        sync.Mutex
	statuses  map[int]int
	latencies []time.Duration
	failures  []string
}

func startReadCrowd(t *testing.T, base string, paths []string, clients int, stop <-chan struct{}) (*readCrowd, *sync.WaitGroup) {
	t.Helper()
	rc := &readCrowd{statuses: map[int]int{}}
	c := newClient(t, base)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses, latencies := map[int]int{}, make([]time.Duration, 0, 1<<14)
			var failures []string
			for n := i; ; n++ {
				select {
				case <-stop:
					rc.mu.Lock()
					for k, v := range statuses {
						rc.statuses[k] += v
					}
					rc.latencies = append(rc.latencies, latencies...)
					rc.failures = append(rc.failures, failures...)
					rc.mu.Unlock()
					return
				default:
				}
				start := time.Now()
				r, err := c.do("GET", paths[n%len(paths)], "", nil)
				latencies = append(latencies, time.Since(start))
				if err != nil {
					if len(failures) < 5 {
						failures = append(failures, err.Error())
					}
					statuses[0]++
					continue
				}
				statuses[r.Status]++
			}
		}()
	}
	return rc, &wg
}

func (rc *readCrowd) total() int {
	n := 0
	for _, v := range rc.statuses {
		n += v
	}
	return n
}

func (rc *readCrowd) p99() time.Duration {
	slices.Sort(rc.latencies)
	if len(rc.latencies) == 0 {
		return 0
	}
	return rc.latencies[len(rc.latencies)*99/100]
}

// comSelect reads how many SELECTs a MariaDB server has run (SHOW GLOBAL STATUS).
func comSelect(t *testing.T, db *testutil.MySQLDB) int64 {
	t.Helper()
	var name string
	var n int64
	if err := db.Gorm.Raw("SHOW GLOBAL STATUS LIKE 'Com_select'").Row().Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A crowd of thousands of GETs a second straight at one API, of a sale, of sales that do
// not exist and of a line's status: no 5xx, p99 under a second, and neither MySQL nor
// Redis is asked per request. The API is alone on a private MariaDB and a private Redis
// (no worker), so every SELECT the server runs and every command Redis runs is the
// API's: during the crowd, what the same API asks in as long a time idle, plus a few a
// second (the snapshots' loads), where tens of thousands of requests came.
func TestPublicReadsCrowdStraightAtOneAPI(t *testing.T) {
	maria := testutil.StartMariaDB(t)
	db := maria.Database(t)
	redis := testutil.StartRedis(t, "--appendonly", "yes")
	s := testutil.StartStackOnTopology(t, db, redis.Topology(), 1, 0)
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	plain := c.createSale(admin, 100, 1)
	room := c.createRoomSale(admin, 100, 10, time.Now().Add(time.Hour), map[string]any{"prequeue_seconds": 7200})
	if r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/line", room.ID), testutil.Token(t, 42, false), map[string]any{}); r.Status != http.StatusCreated {
		t.Fatalf("join: %d %s", r.Status, r.Body)
	}
	paths := []string{
		fmt.Sprintf("/api/v1/activities/%d", plain.ID),
		fmt.Sprintf("/api/v1/activities/%d/line/status", room.ID),
		fmt.Sprintf("/api/v1/activities/%d", room.ID),
		"/api/v1/activities/987654321", // no such sale: 404 from the same snapshot
	}
	for _, p := range paths { // each snapshot loaded once before the figures are read
		c.must("GET", p, "", nil)
	}

	const span = 8 * time.Second
	selects, calls := comSelect(t, db), redis.Calls(t)
	time.Sleep(span)
	idleSelects, idleCalls := comSelect(t, db)-selects, redis.Calls(t)-calls

	selects, calls = comSelect(t, db), redis.Calls(t)
	stop := make(chan struct{})
	start := time.Now()
	const clients = 64
	crowd, wg := startReadCrowd(t, s.URL, paths, clients, stop)
	time.Sleep(span)
	close(stop)
	wg.Wait()
	elapsed := time.Since(start)
	crowdSelects, crowdCalls := comSelect(t, db)-selects, redis.Calls(t)-calls

	n := crowd.total()
	t.Logf("%d GETs in %.1fs (%.0f/s), p99 %v, answers %v; MySQL SELECTs %d (idle %d), Redis commands %d (idle %d)",
		n, elapsed.Seconds(), float64(n)/elapsed.Seconds(), crowd.p99(), crowd.statuses, crowdSelects, idleSelects,
		crowdCalls, idleCalls)
	for status, k := range crowd.statuses {
		if status == 0 || status >= 500 {
			t.Errorf("%d answers of status %d (0: no answer) %v", k, status, crowd.failures)
		}
	}
	// Each client asks the paths in turn from its own offset, so its last, unfinished
	// turn may hold one 404 more than its share: up to one per client off three in four.
	if want := 3*n/4 - clients; crowd.statuses[http.StatusOK] < want || crowd.statuses[http.StatusNotFound] < n/8 {
		t.Errorf("answers %v: want three in four 200 and one in four 404", crowd.statuses)
	}
	if p99 := crowd.p99(); p99 >= time.Second {
		t.Errorf("p99 %v, want under 1 s", p99)
	}
	seconds := int64(elapsed/time.Second) + 2
	// One load of the sales' snapshot a second is two SELECTs (the sales, their variants).
	if crowdSelects > idleSelects+2*seconds {
		t.Errorf("MySQL ran %d SELECTs during %d requests, want at most the idle API's %d plus 2 a second (%d)",
			crowdSelects, n, idleSelects, idleSelects+2*seconds)
	}
	// A second's loads: the sales' stock and the line's status, a few commands each.
	if crowdCalls > idleCalls+30*seconds {
		t.Errorf("Redis ran %d commands during %d requests, want at most the idle API's %d plus 30 a second (%d)",
			crowdCalls, n, idleCalls, idleCalls+30*seconds)
	}
}

// apiRequests reads how many requests of a route an API has answered, by its /metrics.
func apiRequests(t *testing.T, metricsURL, route string) int64 {
	t.Helper()
	r := newClient(t, "").must("GET", metricsURL, "", nil)
	var n int64
	for _, line := range strings.Split(string(r.Body), "\n") {
		if strings.HasPrefix(line, "seckill_http_requests_total{") && strings.Contains(line, `route="`+route+`"`) {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("metrics line %q: %v", line, err)
			}
			n += int64(v)
		}
	}
	return n
}

// waiter is one waiting buyer through the front, as the buyer's page waits.
type waiter struct {
	user       int64
	place      int64
	askedAt    time.Time // when it sent the status poll that first showed admitted_through >= place
	seenAt     time.Time // when that poll's answer came
	admittedAt time.Time // its ticket's admitted_at
	position   int64
	bought     int // the purchase's status
	err        string
}

// The crowd waits at the front: through the project's nginx, a crowd of thousands of
// requests a second for a sale and its line's status reaches the API at a few a second,
// while hundreds of buyers wait as the buyer's page does (the status every 1 to 1.5 s,
// the ticket once admitted) and are admitted in place order, each polling its admission
// within 3 s of its admitted_at (and all but 1 % seeing the answer within 3 s on a
// loaded machine), and each buys.
func TestCrowdWaitsAtTheFront(t *testing.T) {
	s := testutil.StartStack(t)
	api, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	front := testutil.StartNginx(t, []string{api.Host}, testutil.NoLimits)
	c := newClient(t, front)
	admin := testutil.Token(t, 1, true)
	const buyers, rate = 300, 60
	starts := time.Now().Add(8 * time.Second)
	sale := c.createRoomSale(admin, buyers, rate, starts, nil)
	statusPath := fmt.Sprintf("/api/v1/activities/%d/line/status", sale.ID)
	salePath := fmt.Sprintf("/api/v1/activities/%d", sale.ID)

	waiters := make([]*waiter, buyers)
	tokens := map[int64]string{}
	for i := range waiters {
		tokens[int64(1000+i)] = testutil.Token(t, int64(1000+i), false)
	}
	var joins sync.WaitGroup
	for i := range waiters {
		joins.Add(1)
		go func() {
			defer joins.Done()
			w := &waiter{user: int64(1000 + i)}
			waiters[i] = w
			r, err := c.do("POST", fmt.Sprintf("/api/v1/activities/%d/line", sale.ID), tokens[w.user], map[string]any{})
			var tk struct{ Place int64 }
			if err != nil || r.Status != http.StatusCreated || r.decodeInto(&tk) != nil || tk.Place <= 0 {
				w.err = fmt.Sprintf("join: %v %d %s", err, r.Status, r.Body)
				return
			}
			w.place = tk.Place
		}()
	}
	joins.Wait()
	for _, w := range waiters {
		if w.err != "" {
			t.Fatal(w.err)
		}
	}

	statusBefore, saleBefore := apiRequests(t, s.MetricsURL, "/api/v1/activities/:id/line/status"),
		apiRequests(t, s.MetricsURL, "/api/v1/activities/:id")
	stop := make(chan struct{})
	start := time.Now()
	crowd, crowdDone := startReadCrowd(t, front, []string{statusPath, salePath}, 32, stop)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.wait(ctx, c, tokens[w.user], sale.ID, statusPath)
		}()
	}
	wg.Wait()
	close(stop)
	crowdDone.Wait()
	elapsed := time.Since(start)
	statusAtAPI := apiRequests(t, s.MetricsURL, "/api/v1/activities/:id/line/status") - statusBefore
	saleAtAPI := apiRequests(t, s.MetricsURL, "/api/v1/activities/:id") - saleBefore

	n := crowd.total()
	t.Logf("through the front: %d GETs of the sale and its status in %.1fs (%.0f/s, p99 %v, %v); at the API: %d of the status, %d of the sale",
		n, elapsed.Seconds(), float64(n)/elapsed.Seconds(), crowd.p99(), crowd.statuses, statusAtAPI, saleAtAPI)
	if crowd.statuses[http.StatusOK] != n {
		t.Errorf("the crowd's answers %v, want all 200 %v", crowd.statuses, crowd.failures)
	}
	// About one request per path per second (and the waiters' polls are the crowd's too).
	most := 2 * (int64(elapsed/time.Second) + 2)
	if statusAtAPI > most || saleAtAPI > most {
		t.Errorf("%d status and %d sale requests reached the API in %.1fs, want at most %d each (a few a second)",
			statusAtAPI, saleAtAPI, elapsed.Seconds(), most)
	}

	// What the line and the caches delay is the time from admitted_at to the poll that
	// showed it (a poll's interval, 1.5 s at most, and the cached status' age, 1 s at
	// most): within 3 s for every buyer. The answer's own travel adds what the machine's
	// load adds; on a machine loaded by other work a few answers may take longer, so at
	// most 1 % of the buyers may see their admission later than 3 s.
	slices.SortFunc(waiters, func(a, b *waiter) int { return int(a.place - b.place) })
	var late, seenLate []string
	var worst time.Duration
	for i, w := range waiters {
		if w.err != "" {
			t.Errorf("buyer %d: %s", w.user, w.err)
			continue
		}
		if w.bought != http.StatusAccepted {
			t.Errorf("buyer %d bought: %d, want 202", w.user, w.bought)
		}
		if d := w.askedAt.Sub(w.admittedAt); d > 3*time.Second || w.seenAt.Sub(w.admittedAt) < -time.Second {
			late = append(late, fmt.Sprintf("buyer %d polled %v after admitted_at before it saw its admission", w.user, d))
		}
		d := w.seenAt.Sub(w.admittedAt)
		if d > 3*time.Second {
			seenLate = append(seenLate, fmt.Sprintf("buyer %d saw its admission %v after admitted_at", w.user, d))
		}
		worst = max(worst, d)
		if i > 0 && (w.admittedAt.Before(waiters[i-1].admittedAt) || w.position <= waiters[i-1].position) {
			t.Errorf("place %d admitted at %v (position %d), place %d before it at %v (position %d): not in place order",
				w.place, w.admittedAt, w.position, waiters[i-1].place, waiters[i-1].admittedAt, waiters[i-1].position)
		}
	}
	if len(late) > 0 {
		t.Errorf("%d of %d buyers were shown their admission over 3 s late: %v", len(late), buyers, late[:min(len(late), 5)])
	}
	if len(seenLate) > buyers/100 {
		t.Errorf("%d of %d buyers saw their admission over 3 s late: %v", len(seenLate), buyers, seenLate[:min(len(seenLate), 5)])
	}
	t.Logf("the latest a buyer saw its admission: %v after admitted_at; %d over 3 s %v", worst, len(seenLate), seenLate)
}

// wait polls the line's status through the front every 1 to 1.5 s until it admits the
// buyer's place, then reads its ticket once for the pass and buys with it.
func (w *waiter) wait(ctx context.Context, c *client, token string, activityID int64, statusPath string) {
	for {
		asked := time.Now()
		r, err := c.do("GET", statusPath, "", nil)
		var st lineStatus
		switch {
		case err != nil || r.Status != http.StatusOK || r.decodeInto(&st) != nil:
			w.err = fmt.Sprintf("status: %v %d %s", err, r.Status, r.Body)
			return
		case st.AdmittedThrough >= w.place:
			w.askedAt, w.seenAt = asked, time.Now()
			r, err := c.do("GET", fmt.Sprintf("/api/v1/activities/%d/line", activityID), token, nil)
			var tk struct {
				Status     string
				Position   int64
				Pass       string
				AdmittedAt time.Time `json:"admitted_at"`
			}
			if err != nil || r.Status != http.StatusOK || r.decodeInto(&tk) != nil || tk.Status != "admitted" || tk.Pass == "" {
				w.err = fmt.Sprintf("ticket once admitted_through %d >= place %d: %v %d %s", st.AdmittedThrough, w.place, err,
					r.Status, r.Body)
				return
			}
			w.admittedAt, w.position = tk.AdmittedAt, tk.Position
			buy, err := c.do("POST", fmt.Sprintf("/api/v1/activities/%d/orders", activityID), token, map[string]any{"quantity": 1},
				"X-Sale-Pass", tk.Pass, "Idempotency-Key", fmt.Sprintf("edge-%d", w.user))
			if err != nil {
				w.err = fmt.Sprintf("buy: %v", err)
				return
			}
			w.bought = buy.Status
			return
		case st.State == "sold_out" || st.State == "ended":
			w.err = fmt.Sprintf("the line is %s and place %d was never admitted", st.State, w.place)
			return
		}
		select {
		case <-ctx.Done():
			w.err = fmt.Sprintf("place %d not admitted in time (admitted through %d)", w.place, st.AdmittedThrough)
			return
		case <-time.After(time.Second + rand.N(500*time.Millisecond)):
		}
	}
}

// Through a MySQL outage (the server frozen), the public reads go on: the sale list, a
// sale and a line's status answer 200 within a second at p99, from the sales MySQL last
// listed with Redis' figures (a purchase made during the outage shows), and the outage
// is said in the API's log once per load of the list, never once per request.
func TestPublicReadsThroughAMySQLOutage(t *testing.T) {
	maria := testutil.StartMariaDB(t)
	redis := testutil.StartRedis(t, "--appendonly", "yes")
	s := testutil.StartStackOnTopology(t, testutil.MySQLOn(t, maria.DSN), redis.Topology(), 1, 0)
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	plain := c.createSale(admin, 100, 1)
	room := c.createRoomSale(admin, 100, 10, time.Now().Add(time.Hour), map[string]any{"prequeue_seconds": 7200})
	salePath := fmt.Sprintf("/api/v1/activities/%d", plain.ID)
	paths := []string{"/api/v1/activities", salePath, fmt.Sprintf("/api/v1/activities/%d/line/status", room.ID)}
	for _, p := range paths {
		if r := c.must("GET", p, "", nil); r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, r.Status, r.Body)
		}
	}

	maria.Pause()
	defer maria.Resume()
	t.Log("MariaDB frozen with SIGSTOP")
	logFrom := len(s.API.Output())
	if r := c.must("POST", salePath+"/orders", testutil.Token(t, 42, false), map[string]any{"quantity": 1}); r.Status != http.StatusAccepted {
		t.Fatalf("a purchase during the outage: %d %s", r.Status, r.Body)
	}
	stop := make(chan struct{})
	start := time.Now()
	crowd, wg := startReadCrowd(t, s.URL, paths, 32, stop)
	time.Sleep(6 * time.Second)
	close(stop)
	wg.Wait()
	elapsed := time.Since(start)
	t.Logf("%d GETs in %.1fs during the outage, p99 %v, answers %v", crowd.total(), elapsed.Seconds(), crowd.p99(), crowd.statuses)
	if crowd.statuses[http.StatusOK] != crowd.total() {
		t.Errorf("answers %v during the outage, want all 200 %v", crowd.statuses, crowd.failures)
	}
	if p99 := crowd.p99(); p99 >= time.Second {
		t.Errorf("p99 %v during the outage, want under 1 s", p99)
	}
	var a activity
	c.must("GET", salePath, "", nil).decode(t, &a)
	if a.StockAvailable != 99 {
		t.Errorf("the sale during the outage shows %d units available, want 99: Redis' figure after the purchase", a.StockAvailable)
	}
	log := s.API.Output()[logFrom:]
	said := strings.Count(log, "public sales: MySQL did not answer")
	if said < 1 || said > int(elapsed/time.Second)+2 {
		t.Errorf("the outage said %d times in %.1fs of the API's log, want once per load of the list (at most once a second)",
			said, elapsed.Seconds())
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "path=/api/v1/activities") {
			t.Errorf("a public read logged an error: %s", line)
			break
		}
	}
}

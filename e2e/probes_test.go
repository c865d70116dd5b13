package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// probeWatch reads the probes of running processes: what each answers, and the
// slowest answer any of them gave.
type probeWatch struct {
	t       *testing.T
	http    *http.Client
	slowest time.Duration
}

func newProbeWatch(t *testing.T) *probeWatch {
	return &probeWatch{t: t, http: &http.Client{Timeout: 10 * time.Second}}
}

// holds reports whether the JSON object got has every member of want, with the same
// value (byte for byte when either is not a JSON object).
func holds(got, want string) bool {
	var g, w map[string]any
	if json.Unmarshal([]byte(got), &g) != nil || json.Unmarshal([]byte(want), &w) != nil {
		return got == want
	}
	for k, v := range w {
		if g[k] != v {
			return false
		}
	}
	return true
}

// get answers one probe's status and body.
func (p *probeWatch) get(url string) (int, string) {
	p.t.Helper()
	status, body, err := p.try(url)
	if err != nil {
		p.t.Fatalf("GET %s: %v", url, err)
	}
	return status, body
}

func (p *probeWatch) try(url string) (int, string, error) {
	start := time.Now()
	resp, err := p.http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	p.slowest = max(p.slowest, time.Since(start))
	return resp.StatusCode, string(b), err
}

// wait polls url until it answers status with body (every field of body, with the same
// value: the contract allows a probe's body more fields, such as the API's "durable"),
// and returns how long that took since from; it fails the test once within has passed
// since from. Every answer on the
// way must have the status keep, when given (a probe that must not flap); a process
// that does not listen yet counts as no answer yet.
func (p *probeWatch) wait(url string, status int, body string, from time.Time, within time.Duration, keep ...int) time.Duration {
	p.t.Helper()
	for {
		got, b, err := p.try(url)
		if err != nil {
			b = err.Error()
		}
		if err == nil && got == status && holds(b, body) {
			return time.Since(from)
		}
		if len(keep) > 0 && got != keep[0] {
			p.t.Errorf("%s answered %d %s on the way, want only %d", url, got, b, keep[0])
		}
		if time.Since(from) > within {
			p.t.Fatalf("%s %v on: %d %s, want %d %s", url, within, got, b, status, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestProbesFollowRedisAndMySQL: the API's /readyz says whether it can take purchases
// (its Redis), and only reports MySQL; the worker's says whether it can write orders
// (Redis and MySQL). MariaDB frozen (SIGSTOP): the API stays ready and sells, the
// worker is not ready within 3 s. Redis frozen: both answer 503 within 3 s. Each is
// ready again within 5 s of the server's return, and no probe waits for a server.
func TestProbesFollowRedisAndMySQL(t *testing.T) {
	db := testutil.StartMariaDB(t)
	s := testutil.StartStackOn(t, testutil.MySQLOn(t, db.DSN))
	api, worker := s.URL+"/readyz", s.WorkerURLs[0]+"/readyz"
	const up = `{"ready":true,"redis":"ok","mysql":"ok"}`
	p := newProbeWatch(t)
	now := time.Now()
	p.wait(api, 200, up, now, 10*time.Second)
	p.wait(worker, 200, up, now, 10*time.Second)
	for _, u := range []string{s.URL + "/healthz", s.WorkerURLs[0] + "/healthz"} {
		if status, body := p.get(u); status != 200 || body != `{"status":"ok"}` {
			t.Errorf("%s: %d %s", u, status, body)
		}
	}
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	a := c.createSale(admin, 100, 2)
	cr := &crowd{accepted: map[string]order{}, byKey: map[string][]string{}, codes: map[string]int{}}
	buy := func(user int64) {
		t.Helper()
		r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, user, false),
			map[string]int{"quantity": 1}, "Idempotency-Key", fmt.Sprintf("probe-%d", user))
		cr.record(user, fmt.Sprintf("probe-%d", user), r, nil)
		if r.Status != http.StatusAccepted {
			t.Errorf("purchase of user %d: %d %s, want 202", user, r.Status, r.Body)
		}
	}
	buy(1)

	// MySQL frozen: the API stays ready (never a 503 on the way) and sells; the worker
	// cannot write orders and says so.
	db.Pause()
	frozen := time.Now()
	func() {
		defer db.Resume() // whatever happens: a frozen server would hang the clean-up
		took := p.wait(api, 200, `{"ready":true,"redis":"ok","mysql":"down"}`, frozen, 3*time.Second, 200)
		t.Logf("MariaDB frozen: the API reports it down after %v, still ready", took.Round(10*time.Millisecond))
		took = p.wait(worker, 503, `{"ready":false,"redis":"ok","mysql":"down"}`, frozen, 3*time.Second)
		t.Logf("MariaDB frozen: the worker is not ready after %v", took.Round(10*time.Millisecond))
		buy(2)
		for time.Since(frozen) < 5*time.Second { // and it stays so
			if status, body := p.get(api); status != 200 {
				t.Errorf("API readyz with MySQL frozen %v: %d %s, want 200", time.Since(frozen).Round(time.Millisecond), status, body)
			}
			// The probe is read every 100 ms through the freeze: the behaviour under test.
			time.Sleep(100 * time.Millisecond)
		}
	}()
	resumed := time.Now()
	took := p.wait(worker, 200, up, resumed, 5*time.Second)
	p.wait(api, 200, up, resumed, 5*time.Second, 200)
	t.Logf("MariaDB resumed: the worker ready again after %v", took.Round(10*time.Millisecond))

	// Redis frozen: neither can work; both say so within 3 s and are back within 5 s.
	s.Redis.Pause()
	frozen = time.Now()
	func() {
		defer s.Redis.Resume()
		took := p.wait(api, 503, `{"ready":false,"redis":"down","mysql":"ok"}`, frozen, 3*time.Second)
		t.Logf("Redis frozen: the API is not ready after %v", took.Round(10*time.Millisecond))
		took = p.wait(worker, 503, `{"ready":false,"redis":"down","mysql":"ok"}`, frozen, 3*time.Second)
		t.Logf("Redis frozen: the worker is not ready after %v", took.Round(10*time.Millisecond))
	}()
	resumed = time.Now()
	took = p.wait(api, 200, up, resumed, 5*time.Second)
	t.Logf("Redis resumed: the API ready again after %v", took.Round(10*time.Millisecond))
	took = p.wait(worker, 200, up, resumed, 5*time.Second)
	t.Logf("Redis resumed: the worker ready again after %v", took.Round(10*time.Millisecond))
	buy(3)

	// A probe reads the last check: it never waits for a frozen server (the client's
	// timeout is 10 s; a probe that pinged would take a second or more).
	t.Logf("slowest probe answer: %v", p.slowest.Round(time.Millisecond))
	if p.slowest > time.Second {
		t.Errorf("a probe took %v to answer: it waited for a server", p.slowest)
	}
	audit(t, s, a, cr, auditStrict)
}

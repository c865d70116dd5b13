package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// failoverTopology is a Redis with replicas the line runs on: its env for the stack,
// the master holding a sale, and how to wait for a replica to take over from a killed
// master. masters lists every master, to check where a sale's keys are.
type failoverTopology struct {
	env       []string
	masterOf  func(sale int64) *testutil.RedisServer
	masters   func() []*testutil.RedisServer
	promoted  func(old *testutil.RedisServer, sale int64) bool
	afterward func()
}

// TestLineThroughFailover: a waiting room on the Redis Cluster and on Sentinel (two
// APIs, a worker). 300 buyers join before the start; every key of the line sits on the
// master of the sale's slot and none elsewhere. Once admission has begun, that master
// is killed (SIGKILL): the buyers who keep reading their tickets get 200 or 503, never
// a 500 or a hang; after a replica takes over every ticket reads again, the line goes
// on admitting, and an admitted buyer buys with the pass.
func TestLineThroughFailover(t *testing.T) {
	t.Run("cluster", func(t *testing.T) {
		cl := sharedCluster(t)
		lineThroughFailover(t, failoverTopology{env: cl.Env(),
			masterOf: func(sale int64) *testutil.RedisServer { return cl.MasterOf(saleTag(sale)) },
			masters:  cl.Masters,
			promoted: func(old *testutil.RedisServer, sale int64) bool {
				m := cl.MasterOf(saleTag(sale))
				return m != nil && m != old
			},
			afterward: func() { cl.WaitHealthy(t, time.Minute) }})
	})
	t.Run("sentinel", func(t *testing.T) {
		ss := testutil.StartSentinel(t)
		lineThroughFailover(t, failoverTopology{env: ss.Env(),
			masterOf: func(int64) *testutil.RedisServer { return ss.Master(t) },
			masters:  func() []*testutil.RedisServer { return []*testutil.RedisServer{ss.Master(t)} },
			promoted: func(old *testutil.RedisServer, _ int64) bool {
				ss.WaitFailover(t, old, 30*time.Second)
				return true
			},
			afterward: func() {}})
	})
}

func lineThroughFailover(t *testing.T, topo failoverTopology) {
	s := testutil.StartStackOnRedis(t, testutil.MySQL(t), topo.env, 2, 1, "SECKILL_REDIS_MIN_REPLICAS=1")
	clients := []*client{newClient(t, s.URLs[0]), newClient(t, s.URLs[1])}
	c := clients[0]
	admin := testutil.Token(t, 1, true)
	a := c.createRoomSale(admin, 100, 10, time.Now().Add(4*time.Second), nil)
	users := make([]int64, 300)
	for i := range users {
		users[i] = int64(5000 + i)
	}
	joinAll(t, clients, a.ID, users)

	// Every key of the sale, its line's among them, on the master of its slot.
	master := topo.masterOf(a.ID)
	pattern := fmt.Sprintf("seckill:%s:*", saleTag(a.ID))
	for _, m := range topo.masters() {
		keys, err := m.Client(t).Keys(context.Background(), pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		lineKeys := 0
		for _, k := range keys {
			if strings.Contains(k, ":line:") {
				lineKeys++
			}
		}
		switch {
		case m == master && lineKeys < 2:
			t.Errorf("the sale's master %s holds %d line keys (%v), want the line's", m.Addr, lineKeys, keys)
		case m != master && len(keys) > 0:
			t.Errorf("master %s holds keys of the sale: %v", m.Addr, keys)
		}
	}

	figures := func() (admitted int64, ok bool) {
		r, err := c.do("GET", fmt.Sprintf("/api/v1/admin/activities/%d/line", a.ID), admin, nil)
		if err != nil || r.Status != http.StatusOK {
			return 0, false
		}
		var f struct{ Admitted int64 }
		r.decode(t, &f)
		return f.Admitted, true
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if n, ok := figures(); ok && n >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the line admitted fewer than 10 buyers in 30 s")
		}
	}

	// Buyers read their tickets every 100 ms through the failover.
	readers := users[200:220]
	stop := make(chan struct{})
	var mu sync.Mutex
	codes := map[int]int{}
	var slowest time.Duration
	var wg sync.WaitGroup
	for i, u := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				start := time.Now()
				r, err := clients[i%2].do("GET", fmt.Sprintf("/api/v1/activities/%d/line", a.ID), testutil.Token(t, u, false), nil)
				took := time.Since(start)
				mu.Lock()
				if err != nil {
					codes[0]++
				} else {
					codes[r.Status]++
				}
				slowest = max(slowest, took)
				mu.Unlock()
			}
		}()
	}
	// The crowd runs a second before the master is killed: the scenario under test.
	time.Sleep(time.Second)
	master.Kill()
	killed := time.Now()
	var promoted time.Time
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if topo.promoted(master, a.ID) {
			promoted = time.Now()
			break
		}
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatal("no replica took over in 30 s")
		}
	}
	// The crowd runs 2 s on the promoted replica: the scenario under test.
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	master.Start() // back as the new master's replica
	t.Logf("master killed; a replica took over %v later; ticket reads meanwhile: %v, slowest %v",
		promoted.Sub(killed).Round(time.Millisecond), codes, slowest.Round(time.Millisecond))
	for code, n := range codes {
		if code != http.StatusOK && code != http.StatusServiceUnavailable {
			t.Errorf("%d ticket reads answered %d (0: no answer), want 200 or 503", n, code)
		}
	}
	if slowest > hangBound {
		t.Errorf("a ticket read took %v", slowest)
	}

	// After the failover: every ticket reads, the line goes on, a pass buys.
	before, _ := figures()
	var admitted ticket
	var buyer int64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		n, ok := figures()
		if ok && n > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the line admitted nobody in 30 s after the failover (admitted %d)", before)
		}
	}
	for _, u := range users {
		tk := c.ticket(a.ID, u) // fails the test on anything but 200
		if tk.Status == "admitted" && buyer == 0 {
			admitted, buyer = tk, u
		}
	}
	if buyer == 0 {
		t.Fatal("no admitted ticket after the failover")
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r, err := c.do("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, buyer, false),
			map[string]int{"quantity": 1}, "X-Sale-Pass", admitted.Pass, "Idempotency-Key", "after-failover")
		if err == nil && r.Status == http.StatusAccepted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pass holder's purchase after the failover: %v %d %s", err, r.Status, r.Body)
		}
	}
	topo.afterward()
}

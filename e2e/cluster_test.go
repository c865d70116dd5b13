package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/testutil"
)

// The package's shared clusters: a plain one, and one locked down (TLS with
// tls-cluster yes, ACL users) for the tests under testutil.SecureRedis.
var (
	clusterOnce, secureOnce sync.Once
	cluster, secureCluster  *testutil.Cluster
	stopCluster, stopSecure func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.RemoveBinaries()
	for _, stop := range []func(){stopCluster, stopSecure} {
		if stop != nil {
			stop()
		}
	}
	os.Exit(code)
}

// sharedCluster returns the package's one Redis Cluster (3 masters, 3 replicas, AOF
// always, masters refusing writes without a replica), started on first use and emptied
// for the test. Tests that kill or move its nodes leave it healthy again. Under
// testutil.SecureRedis it is the locked-down one, whose ACL LOG must be empty at the
// test's end.
func sharedCluster(t *testing.T) *testutil.Cluster {
	t.Helper()
	o := testutil.ClusterOptions{ExtraArgs: []string{"--min-replicas-to-write", "1", "--min-replicas-max-lag", "10"}}
	cl := &cluster
	if testutil.Secured(t) {
		secureOnce.Do(func() {
			o.Secure = true
			secureCluster, stopSecure = testutil.StartClusterMain(o)
		})
		cl = &secureCluster
	} else {
		clusterOnce.Do(func() { cluster, stopCluster = testutil.StartClusterMain(o) })
	}
	(*cl).WaitHealthy(t, time.Minute)
	if testutil.Secured(t) {
		t.Cleanup(func() { (*cl).CheckACLLog(t) })
	}
	cluster := *cl
	for _, m := range cluster.Masters() {
		flushAll(t, m)
	}
	return cluster
}

// flushAll empties master m. A master counts its replica for min-replicas-to-write only
// once the replica acknowledged within the lag allowed, up to a second after a test that
// killed or moved nodes has them linked again: until then the master refuses writes
// (NOREPLICAS), and the flush is tried again.
func flushAll(t *testing.T, m *testutil.RedisServer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := m.Client(t).FlushAll(context.Background()).Err()
		if err == nil {
			return
		}
		if !strings.HasPrefix(err.Error(), "NOREPLICAS") || time.Now().After(deadline) {
			t.Fatalf("flush %s: %v", m.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// salesOnEveryMaster creates n sales and checks that their keys sit on all three
// masters; it returns them, and them by master.
func salesOnEveryMaster(t *testing.T, c *client, cl *testutil.Cluster, n int, stock int64, limit int) ([]activity, map[*testutil.RedisServer][]activity) {
	t.Helper()
	admin := testutil.Token(t, 1, true)
	var sales []activity
	byMaster := map[*testutil.RedisServer][]activity{}
	for range n {
		a := c.createSale(admin, stock, limit)
		sales = append(sales, a)
		m := cl.MasterOf(saleTag(a.ID))
		if m == nil {
			t.Fatalf("no master serves sale %d", a.ID)
		}
		byMaster[m] = append(byMaster[m], a)
	}
	if len(byMaster) != 3 {
		t.Fatalf("the %d sales sit on %d masters, want all 3", n, len(byMaster))
	}
	for m, as := range byMaster {
		t.Logf("master %s holds %d sales", m.Addr, len(as))
	}
	return sales, byMaster
}

// saleTag is the hash tag of a sale's keys (internal/stock): all of them share its slot.
func saleTag(id int64) string { return fmt.Sprintf("{act:%d}", id) }

// crowds runs a crowd on every sale at once; during runs once, meanwhile.
func crowds(t *testing.T, sales []activity, p crowdPlan, during func()) map[int64]*crowd {
	t.Helper()
	out := make(map[int64]*crowd, len(sales))
	var mu sync.Mutex
	var wg sync.WaitGroup
	if during != nil {
		wg.Add(1)
		go func() { defer wg.Done(); during() }()
	}
	for _, a := range sales {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cr := runCrowd(t, a.ID, p)
			mu.Lock()
			out[a.ID] = cr
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func hostPorts(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = strings.TrimPrefix(u, "http://")
	}
	return out
}

var purchasesServed = regexp.MustCompile(`seckill_http_requests_total\{[^}]*status="202"[^}]*\} (\d+)`)

// TestClusterCrowdThroughNginx: three APIs behind nginx and two workers on a 3+3
// cluster, purchases confirmed by a replica (MIN_REPLICAS=1), twelve sales on all three
// masters bought at once.
func TestClusterCrowdThroughNginx(t *testing.T) {
	cl := sharedCluster(t)
	s := testutil.StartStackOnRedis(t, testutil.MySQL(t), cl.Env(), 3, 2,
		"SECKILL_REDIS_MIN_REPLICAS=1", "SECKILL_TRUSTED_PROXIES=127.0.0.1/32")
	front := testutil.StartNginx(t, hostPorts(s.URLs), testutil.NoLimits)
	sales, _ := salesOnEveryMaster(t, newClient(t, front), cl, 12, 60, 3)
	results := crowds(t, sales, crowdPlan{users: 40, concurrency: 12, endpoints: []string{front}}, nil)
	for _, a := range sales {
		cr := results[a.ID]
		if cr.codes["503 unavailable"] != 0 || cr.failed.Load() != 0 {
			t.Errorf("sale %d on a healthy cluster: answers %v", a.ID, cr.codes)
		}
		cr.checkReplays(t)
		audit(t, s, a, cr, auditStrict)
	}
	// Every process is listed by its heartbeat, on the cluster too.
	waitInstances(t, newClient(t, front), 10*time.Second, "three APIs and two workers", func(l []instance) bool {
		apis, workers := countKinds(l)
		return apis == 3 && workers == 2
	})
	// nginx spread the purchases over the three instances.
	for _, u := range s.MetricsURLs {
		m := newClient(t, "").must("GET", u, "", nil)
		served := 0
		for _, g := range purchasesServed.FindAllStringSubmatch(string(m.Body), -1) {
			n, _ := strconv.Atoi(g[1])
			served += n
		}
		if served == 0 {
			t.Errorf("API %s answered no purchase with 202", u)
		}
	}
}

// hangBound is the longest a purchase caught in a failover may take and still count as
// answered, not hung. Its budget is one reserve call and one replica confirmation of up
// to 2 s each (sale.IOTimeout) and the user-lock wait (0.5 s): 4.5 s; twice that leaves
// room for the run queue of a loaded 2-core machine (a fresh-clone CI run saw 5.2 s).
// The test client itself gives up at 30 s.
const hangBound = 9 * time.Second

// TestClusterMasterKilledMidCrowd: SIGKILL of the master holding the most sales while
// twelve sales are bought; its replica takes over (cluster-node-timeout 1.5 s), and once
// the killed node is back as a replica its sales sell again. With MIN_REPLICAS=1 no
// acknowledged order is lost; the purchases caught in the failover get 503, never a
// hang or a 500.
func TestClusterMasterKilledMidCrowd(t *testing.T) {
	cl := sharedCluster(t)
	s := testutil.StartStackOnRedis(t, testutil.MySQL(t), cl.Env(), 3, 2, "SECKILL_REDIS_MIN_REPLICAS=1")
	sales, byMaster := salesOnEveryMaster(t, newClient(t, s.URL), cl, 12, 200, 3)
	var victim *testutil.RedisServer
	for m, as := range byMaster {
		if victim == nil || len(as) > len(byMaster[victim]) {
			victim = m
		}
	}
	var killed, promoted, back time.Time
	// Purchases acknowledged before the kill, replayed with their Idempotency-Key all
	// through the failover: each answer is their order (200) or 503 while Redis cannot
	// answer at all, never 429.
	made := acknowledged(t, newClient(t, s.URLs[0]), byMaster[victim], 8000, 10)
	replays := map[string]int{}
	var replayErrs []string
	during := func() {
		stop := make(chan struct{})
		var replaying sync.WaitGroup
		var mu sync.Mutex
		for _, m := range made { // one buyer's app each, retrying every 20 ms
			replaying.Go(func() {
				c := newClient(t, s.URLs[2])
				for {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					r, err := c.do("POST", fmt.Sprintf("/api/v1/activities/%d/orders", m.sale), m.token,
						map[string]int{"quantity": 1}, "Idempotency-Key", m.key)
					var o order
					var undecodable error
					if err == nil && r.Status == http.StatusOK {
						undecodable = json.Unmarshal(r.Body, &o)
					}
					mu.Lock()
					switch {
					case err != nil:
						replayErrs = append(replayErrs, fmt.Sprintf("replay of %s: %v", m.order.ID, err))
					case undecodable != nil:
						replayErrs = append(replayErrs, fmt.Sprintf("replay of %s: %v in %s", m.order.ID, undecodable, r.Body))
					case r.Status == http.StatusOK && o.ID != m.order.ID:
						replayErrs = append(replayErrs, fmt.Sprintf("replay of %s answered order %s", m.order.ID, o.ID))
					case r.Status != http.StatusOK && r.Status != http.StatusServiceUnavailable:
						replayErrs = append(replayErrs, fmt.Sprintf("replay of %s: %d %s", m.order.ID, r.Status, r.Body))
					}
					replays[fmt.Sprintf("%d %s", r.Status, r.errorCode())]++
					mu.Unlock()
				}
			})
		}
		defer func() { close(stop); replaying.Wait() }()
		// The failover lands 1.5 s into the replays: the scenario under test.
		time.Sleep(1500 * time.Millisecond)
		killed, promoted, back = failOver(t, cl, victim, saleTag(byMaster[victim][0].ID))
	}
	results := crowds(t, sales, crowdPlan{users: 60, concurrency: 8, endpoints: s.URLs,
		pace: 150 * time.Millisecond}, during)
	t.Logf("killed %s; a replica took over %v later; the node was back as a replica %v after the kill",
		victim.Addr, promoted.Sub(killed).Round(time.Millisecond), back.Sub(killed).Round(time.Millisecond))
	t.Logf("replays of %d acknowledged purchases through the failover: %v", len(made), replays)
	for _, e := range replayErrs {
		t.Error(e)
	}
	if replays["200 "] == 0 || replays["503 unavailable"] == 0 {
		t.Errorf("replays %v: want both 200 (before the kill or after the promotion) and 503 (while no master answered)", replays)
	}
	for _, m := range made { // their orders belong to their sales' audits
		results[m.sale].accepted[m.order.ID] = m.order
	}

	failedOver := map[int64]bool{}
	for _, a := range byMaster[victim] {
		failedOver[a.ID] = true
	}
	unavailable := 0
	for _, a := range sales {
		cr := results[a.ID]
		if failedOver[a.ID] {
			unavailable += cr.codes["503 unavailable"]
		}
		if cr.failed.Load() != 0 {
			t.Errorf("sale %d: %d purchases got no answer (%v)", a.ID, cr.failed.Load(), cr.codes)
		}
		if slowest := time.Duration(cr.slowest.Load()); slowest > hangBound {
			t.Errorf("sale %d: a purchase took %v", a.ID, slowest)
		}
		t.Logf("sale %d (failed over %v): %v, slowest %v", a.ID, failedOver[a.ID], cr.codes,
			time.Duration(cr.slowest.Load()).Round(time.Millisecond))
		cr.checkReplays(t)
		audit(t, s, a, cr, auditFaults)
	}
	if unavailable == 0 {
		t.Errorf("no purchase of the failed-over sales got 503: the kill came too late to test anything")
	}
	// After the failover every sale of the killed master sells again.
	c := newClient(t, s.URLs[1])
	for i, a := range byMaster[victim] {
		r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, int64(9000+i), false),
			map[string]int{"quantity": 1})
		if r.Status != http.StatusAccepted {
			t.Errorf("sale %d after the failover: %d %s", a.ID, r.Status, r.Body)
		}
	}
}

// replayed is an acknowledged purchase a test sends again.
type replayed struct {
	sale       int64
	token, key string
	order      order
}

// failOver SIGKILLs victim, a master holding tag, waits up to 30 s for a replica to take
// tag's slot over, then starts victim again (it comes back as the new master's replica)
// and waits for the cluster to be healthy. It returns when it killed, when the replica
// took over (zero if none did: the test has failed) and when the cluster was whole again.
func failOver(t *testing.T, cl *testutil.Cluster, victim *testutil.RedisServer, tag string) (killed, promoted, back time.Time) {
	t.Helper()
	victim.Kill()
	killed = time.Now()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if m := cl.MasterOf(tag); m != nil && m != victim {
			promoted = time.Now()
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("no replica took over in 30 s")
			return killed, promoted, killed
		}
	}
	// The killed node stays down a second before it comes back: the scenario under test.
	time.Sleep(time.Second)
	victim.Start()
	cl.WaitHealthy(t, time.Minute)
	return killed, promoted, time.Now()
}

// acknowledged makes n purchases of one unit with an Idempotency-Key, by users from
// firstUser on, spread over sales, and returns them; each must be answered 202.
func acknowledged(t *testing.T, c *client, sales []activity, firstUser int64, n int) []replayed {
	t.Helper()
	var out []replayed
	for i := range n {
		m := replayed{sale: sales[i%len(sales)].ID, token: testutil.Token(t, firstUser+int64(i), false), key: fmt.Sprintf("ack-%d", i)}
		r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", m.sale), m.token, map[string]int{"quantity": 1},
			"Idempotency-Key", m.key)
		if r.Status != http.StatusAccepted {
			t.Fatalf("purchase %d before the fault: %d %s", i, r.Status, r.Body)
		}
		r.decode(t, &m.order)
		out = append(out, m)
	}
	return out
}

// TestClusterSlotMigratedMidCrowd: a live sale's slot moves to another master while it
// is bought (clients meet ASK, TRYAGAIN, then MOVED); every purchase is answered as if
// nothing moved, and nothing is lost or oversold.
func TestClusterSlotMigratedMidCrowd(t *testing.T) {
	cl := sharedCluster(t)
	s := testutil.StartStackOnRedis(t, testutil.MySQL(t), cl.Env(), 2, 1, "SECKILL_REDIS_MIN_REPLICAS=1")
	a := newClient(t, s.URL).createSale(testutil.Token(t, 1, true), 300, 3)
	from := cl.MasterOf(saleTag(a.ID))
	var to *testutil.RedisServer
	for _, m := range cl.Masters() {
		if m != from {
			to = m
		}
	}
	results := crowds(t, []activity{a}, crowdPlan{users: 150, concurrency: 16, endpoints: s.URLs,
		pace: 30 * time.Millisecond}, func() {
		// The slot moves a second into the crowd: the scenario under test.
		time.Sleep(time.Second)
		cl.MigrateSlot(t, testutil.SlotOf(saleTag(a.ID)), to)
	})
	if got := cl.MasterOf(saleTag(a.ID)); got != to {
		t.Fatalf("the sale's slot is on %s, want %s", got.Addr, to.Addr)
	}
	cr := results[a.ID]
	t.Logf("slot moved from %s to %s mid-crowd: %v", from.Addr, to.Addr, cr.codes)
	if cr.failed.Load() != 0 || cr.codes["503 unavailable"] != 0 {
		t.Errorf("%d purchases got no answer, %d got 503: a migration must be followed, not surfaced",
			cr.failed.Load(), cr.codes["503 unavailable"])
	}
	cr.checkReplays(t)
	audit(t, s, a, cr, auditStrict)
	r := newClient(t, s.URL).must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID),
		testutil.Token(t, 9000, false), map[string]int{"quantity": 1})
	if r.Status != http.StatusAccepted && r.errorCode() != "sold_out" {
		t.Errorf("after the migration: %d %s", r.Status, r.Body)
	}
}

// TestSentinelMasterKilledMidCrowd: one master, one replica, three Sentinels; the master
// is killed mid-crowd and comes back as a replica. The same audit.
func TestSentinelMasterKilledMidCrowd(t *testing.T) {
	ss := testutil.StartSentinel(t)
	for _, srv := range ss.Servers() {
		if err := srv.Client(t).ConfigSet(context.Background(), "min-replicas-to-write", "1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	s := testutil.StartStackOnRedis(t, testutil.MySQL(t), ss.Env(), 2, 1, "SECKILL_REDIS_MIN_REPLICAS=1")
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	sales := []activity{c.createSale(admin, 200, 3), c.createSale(admin, 200, 3)}
	old := ss.Master(t)
	var killed, promoted time.Time
	results := crowds(t, sales, crowdPlan{users: 60, concurrency: 8, endpoints: s.URLs,
		pace: 150 * time.Millisecond}, func() {
		// The master is killed 1.5 s into the crowd: the scenario under test.
		time.Sleep(1500 * time.Millisecond)
		old.Kill()
		killed = time.Now()
		ss.WaitFailover(t, old, 30*time.Second)
		promoted = time.Now()
		// The killed master stays down a second after the failover: the scenario under test.
		time.Sleep(time.Second)
		old.Start() // the Sentinels turn it into the new master's replica
	})
	t.Logf("master killed; a replica was promoted %v later", promoted.Sub(killed).Round(time.Millisecond))
	for _, a := range sales {
		cr := results[a.ID]
		t.Logf("sale %d: %v, slowest %v", a.ID, cr.codes, time.Duration(cr.slowest.Load()).Round(time.Millisecond))
		if cr.failed.Load() != 0 {
			t.Errorf("sale %d: %d purchases got no answer", a.ID, cr.failed.Load())
		}
		if slowest := time.Duration(cr.slowest.Load()); slowest > hangBound {
			t.Errorf("sale %d: a purchase took %v", a.ID, slowest)
		}
		cr.checkReplays(t)
		audit(t, s, a, cr, auditFaults)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", sales[0].ID), testutil.Token(t, 9000, false),
			map[string]int{"quantity": 1})
		if r.Status == http.StatusAccepted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the failover purchases still get %d %s", r.Status, r.Body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestClusterWorkersKilledMidCrowd: both workers on the cluster are killed with SIGKILL
// mid-crowd, in the middle of their tasks, and started again: asynq's recoverer (tasks
// whose lease ran out) and the worker's repair pass run on the cluster, and every
// acknowledged order reaches MySQL once.
func TestClusterWorkersKilledMidCrowd(t *testing.T) {
	cl := sharedCluster(t)
	s := testutil.StartStackOnRedis(t, testutil.MySQL(t), cl.Env(), 2, 2, "SECKILL_REDIS_MIN_REPLICAS=1")
	sales, _ := salesOnEveryMaster(t, newClient(t, s.URL), cl, 6, 150, 3)
	results := crowds(t, sales, crowdPlan{users: 50, concurrency: 8, endpoints: s.URLs,
		pace: 60 * time.Millisecond}, func() {
		// The workers are killed a second into the crowd: the scenario under test.
		time.Sleep(time.Second)
		for _, w := range s.Workers {
			w.Signal(syscall.SIGKILL)
		}
		// The workers stay down a second: the scenario under test.
		time.Sleep(time.Second)
		for _, w := range s.Workers {
			w.Start()
		}
	})
	for _, a := range sales {
		cr := results[a.ID]
		if cr.failed.Load() != 0 || cr.codes["503 unavailable"] != 0 {
			t.Errorf("sale %d: %v (the workers' death must not touch purchases)", a.ID, cr.codes)
		}
		cr.checkReplays(t)
		audit(t, s, a, cr, auditStrict)
	}
	for _, w := range s.Workers {
		if strings.Contains(w.Output(), "CROSSSLOT") {
			t.Errorf("a worker met CROSSSLOT:\n%s", w.Output())
		}
	}
}

// TestClusterGroupBuy: group-buy sales on the cluster, one on each master,
// bought at once through three APIs and two workers with MIN_REPLICAS=1: seats opened
// and joined, windows closing mid-crowd, groups failed by the worker; the same audit as
// on one server, per sale.
func TestClusterGroupBuy(t *testing.T) {
	cl := sharedCluster(t)
	s := testutil.StartStackOnRedis(t, testutil.MySQL(t), cl.Env(), 3, 2, "SECKILL_REDIS_MIN_REPLICAS=1")
	c := newClient(t, s.URLs[0])
	admin := testutil.Token(t, 1, true)
	onMaster := func(id int64) redis.Cmdable { return cl.MasterOf(saleTag(id)).Client(t) }
	masters := map[*testutil.RedisServer]int{}
	var sales []activity
	for len(masters) < 3 || len(sales) < 3 {
		a := createGroupSale(t, onMaster, c, admin, 200, 3, 3, 2, 4*time.Second)
		if m := cl.MasterOf(saleTag(a.ID)); masters[m] < 1 {
			masters[m]++
			sales = append(sales, a)
		}
		if len(sales)+len(masters) > 40 {
			t.Fatal("no sale landed on one of the masters")
		}
	}
	results := make([]*groupCrowd, len(sales))
	var wg sync.WaitGroup
	g := testutil.NewGoroutines(t)
	for i, a := range sales {
		wg.Go(func() { results[i] = runGroupCrowd(g, s.URLs, a, 20, 20, i == 0) })
	}
	wg.Wait()
	g.Report()
	for i, a := range sales {
		waitGroupsSettled(t, c, a)
		auditGroups(t, s, a, results[i])
	}
}

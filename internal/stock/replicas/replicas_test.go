package replicas_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"seckill/internal/config"
	"seckill/internal/stock"
	"seckill/internal/stock/replicas"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// replicated starts a master and a replica of it, and returns a client of the master
// once the replica has finished its first sync.
func replicated(t *testing.T) (master, replica *testutil.RedisServer, rdb *redis.Client) {
	t.Helper()
	master = testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always", "--repl-diskless-sync-delay", "0")
	host, port, _ := net.SplitHostPort(master.Addr)
	replica = testutil.StartRedis(t, "--replicaof", host, port)
	rc := replica.Client(t)
	for i := 0; ; i++ {
		info, _ := rc.Info(context.Background(), "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			break
		}
		if i == 500 {
			t.Fatalf("replica never linked:\n%s", info)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return master, replica, master.Client(t)
}

func commandCalls(t *testing.T, rdb *redis.Client, cmd string) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// Purchases confirmed at the same moment share one WAIT, and each learns the outcome
// for its own reservation.
func TestReplicasConfirm(t *testing.T) {
	_, replica, rdb := replicated(t)
	s := stocktest.New(rdb)
	ctx := context.Background()
	stocktest.NewSale(t, s, 1, 1000, 1000)
	stocktest.NewSale(t, s, 2, 1000, 1000)

	const buyers = 200
	var wg sync.WaitGroup
	errs := make([]error, buyers)
	orders := make([]string, buyers)
	buckets := make([]stock.Bucket, buyers)
	// A generous WAIT: make test runs packages side by side on two cores, and a replica
	// starved of CPU for half a second is no failure of the barrier.
	reps := replicas.New(rdb, 1, 2*time.Second) // below the client's 3 s read timeout
	for i := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := stocktest.Reservation(int64(1+i%2), int64(i), 1, "", stocktest.T0)
			got, err := s.Reserve(ctx, r)
			if err != nil {
				errs[i] = err
				return
			}
			orders[i], buckets[i] = r.OrderID, got.Bucket
			errs[i] = reps.Confirm(ctx, got.Bucket, r.OrderID)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("buyer %d: %v", i, err)
		}
	}
	waits := commandCalls(t, rdb, "wait")
	if waits == 0 || waits >= buyers {
		t.Errorf("%d WAITs for %d confirmations, want at least 1 and fewer than %d", waits, buyers, buyers)
	}
	// What was confirmed is on the replica.
	rc := replica.Client(t)
	for _, act := range []int64{1, 2} {
		n, err := rc.HLen(ctx, fmt.Sprintf("seckill:{act:%d}:queued", act)).Result()
		if err != nil || n != buyers/2 {
			t.Errorf("replica holds %d queued orders of sale %d (%v), want %d", n, act, err, buyers/2)
		}
	}
	t.Logf("%d confirmations in %d WAITs", buyers, waits)

	tests := []struct {
		name    string
		reps    *replicas.Replicas
		orderID string
		want    error
	}{
		{"confirmed", reps, orders[0], nil},
		{"a replayed purchase: the master's writes so far", reps, "", nil},
		{"more replicas than there are", replicas.New(rdb, 2, 100*time.Millisecond), orders[0], replicas.ErrNotReplicated},
		{"an order the master does not hold", reps, "01NOTQUEUED1", replicas.ErrReservationLost},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.reps.Confirm(ctx, buckets[0], tc.orderID); !errors.Is(err, tc.want) {
				t.Fatalf("Confirm = %v, want %v", err, tc.want)
			}
		})
	}
}

// A replica that stops answering (frozen) leaves reservations unconfirmed: the
// purchase must not be acknowledged.
func TestReplicasFrozenReplica(t *testing.T) {
	_, replica, rdb := replicated(t)
	s := stocktest.New(rdb)
	ctx := context.Background()
	stocktest.NewSale(t, s, 1, 10, 10)
	reps := replicas.New(rdb, 1, 200*time.Millisecond)

	replica.Pause()
	defer replica.Resume()
	r := stocktest.Reservation(1, 1, 1, "", stocktest.T0)
	got, err := s.Reserve(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := reps.Confirm(ctx, got.Bucket, r.OrderID); !errors.Is(err, replicas.ErrNotReplicated) {
		t.Fatalf("Confirm with a frozen replica = %v, want ErrNotReplicated", err)
	}
	replica.Resume()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := reps.Confirm(ctx, got.Bucket, r.OrderID)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the replica resumed: %v", err)
		}
	}
}

// Connected says whether a master has the replicas purchases wait for: yes with its
// replica linked, no once the replica is gone, and no when more are asked for.
func TestReplicasConnected(t *testing.T) {
	_, replica, rdb := replicated(t)
	ctx := context.Background()
	if err := replicas.New(rdb, 1, time.Second).Connected(ctx); err != nil {
		t.Fatalf("one replica linked, one wanted: %v", err)
	}
	if err := replicas.New(rdb, 2, time.Second).Connected(ctx); err == nil || !strings.Contains(err.Error(), "1 of 2 replicas connected") {
		t.Errorf("one replica linked, two wanted: %v", err)
	}
	replica.Kill()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := replicas.New(rdb, 1, time.Second).Connected(ctx)
		if err != nil {
			t.Logf("replica killed: %v", err)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica was killed 5 s ago and the master still counts it")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The collector shows each master's connected replicas beside the number purchases
// need, and the replica's loss as soon as the master notices it.
func TestReplicasCollector(t *testing.T) {
	_, replica, rdb := replicated(t)
	r := replicas.New(rdb, 1, time.Second)
	c := r.Collector()
	want := func(connected int) string {
		return fmt.Sprintf(`
# HELP seckill_redis_connected_replicas Replicas connected to a Redis master (INFO replication), by master address ("" for one server or Sentinel's master).
# TYPE seckill_redis_connected_replicas gauge
seckill_redis_connected_replicas{master=""} %d
# HELP seckill_redis_min_replicas SECKILL_REDIS_MIN_REPLICAS: replicas that must hold a reservation before its purchase is answered 202.
# TYPE seckill_redis_min_replicas gauge
seckill_redis_min_replicas 1
`, connected)
	}
	if err := promtest.CollectAndCompare(c, strings.NewReader(want(1))); err != nil {
		t.Fatalf("one replica linked: %v", err)
	}
	replica.Kill()
	var err error
	for i := 0; i < 100; i++ {
		if err = promtest.CollectAndCompare(c, strings.NewReader(want(0))); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("replica killed: %v", err)
}

// A user whose ACL refuses INFO gets the number purchases need and no replica figure,
// readiness that does not count replicas, and one warning however many scrapes:
// nothing fails.
func TestReplicasCollectorWithoutINFO(t *testing.T) {
	sec := testutil.NewRedisSecurity(t)
	srv := testutil.StartRedisWith(t, sec)
	ctx := context.Background()
	rule := strings.Fields(strings.Replace(config.RedisACLRule(), "+info", "", 1))
	if err := srv.Client(t).Do(ctx, append([]any{"ACL", "SETUSER", "no-info", "on", ">pw"}, toAny(rule)...)...).Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "no-info", Password: "pw", TLSConfig: sec.TLS.ClientConfig()})
	defer rdb.Close()
	var log strings.Builder
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
	r := replicas.New(rdb, 1, time.Second)
	c := r.Collector()
	want := `
# HELP seckill_redis_min_replicas SECKILL_REDIS_MIN_REPLICAS: replicas that must hold a reservation before its purchase is answered 202.
# TYPE seckill_redis_min_replicas gauge
seckill_redis_min_replicas 1
`
	for range 3 {
		if err := promtest.CollectAndCompare(c, strings.NewReader(want)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Connected(ctx); err != nil {
		t.Errorf("readiness's replica count without INFO: %v, want nil (it cannot tell)", err)
	}
	if n := strings.Count(log.String(), "level=WARN"); n != 1 || !strings.Contains(log.String(), "INFO") {
		t.Errorf("%d warnings, want one naming INFO:\n%s", n, log.String())
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

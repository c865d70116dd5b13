package testutil

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestClusterServesSlotsOnThreeMasters(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	masters := c.Masters()
	if len(masters) != 3 {
		t.Fatalf("%d masters, want 3", len(masters))
	}
	for _, m := range masters {
		slots, err := m.Client(t).ClusterSlots(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		owned := 0
		for _, r := range slots {
			if r.Nodes[0].Addr == m.Addr {
				owned += int(r.End-r.Start) + 1
			}
		}
		if owned == 0 {
			t.Errorf("master %s serves no slot", m.Addr)
		}
	}
	if got := strings.Join(c.Topology(), " "); got != "SECKILL_REDIS_ADDR="+strings.Join(c.Addrs(), ",")+" SECKILL_REDIS_CLUSTER=true" {
		t.Errorf("Topology() = %s", got)
	}
	rdb := c.Client(t)
	for _, key := range []string{"a", "seckill:{act:1}:sale", "seckill:{act:42}:users", "{}x", "{user1000}.following", "x{}{y}"} {
		want, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := SlotOf(key); int64(got) != want {
			t.Errorf("SlotOf(%q) = %d, CLUSTER KEYSLOT says %d", key, got, want)
		}
	}
	seen := map[*RedisServer]bool{}
	for i := range 30 {
		key := fmt.Sprintf("serves:%d", i)
		if err := rdb.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		m := c.MasterFor(key)
		seen[m] = true
		// The key is on the master MasterFor names, not only behind the cluster client.
		if v, err := m.Client(t).Get(ctx, key).Int(); err != nil || v != i {
			t.Errorf("%s on %s: %d, %v", key, m.Addr, v, err)
		}
	}
	if len(seen) != 3 {
		t.Errorf("30 keys sit on %d masters, want 3", len(seen))
	}
}

// TestClusterMigrateSlotUnderTraffic moves a slot of 300 keys while four clients keep
// incrementing them: no error reaches them (go-redis follows ASK and MOVED), and no
// increment is lost or made twice.
func TestClusterMigrateSlotUnderTraffic(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	rdb := c.Client(t)
	var seen redirects
	rdb.OnNewNode(func(node *redis.Client) { node.AddHook(&seen) })
	const keys = 300
	key := func(i int) string { return fmt.Sprintf("{mig}:%d", i) }
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range keys {
			p.Set(ctx, key(i), 0, 0)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	from := c.MasterFor(key(0))
	var to *RedisServer
	for _, m := range c.Masters() {
		if m != from {
			to = m
			break
		}
	}

	var (
		stop    atomic.Bool
		ops     atomic.Int64
		wg      sync.WaitGroup
		counts  [keys]int64 // increments acknowledged, by key
		mu      sync.Mutex
		errs    []error
		clients = 4
	)
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; !stop.Load(); i = (i + clients) % keys {
				err := rdb.Incr(ctx, key(i)).Err()
				if err == nil {
					err = rdb.Get(ctx, key(i)).Err()
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %w", key(i), err))
					mu.Unlock()
					continue
				}
				atomic.AddInt64(&counts[i], 1)
				ops.Add(1)
			}
		}()
	}
	// Increments run before the migration: the traffic it moves under.
	time.Sleep(100 * time.Millisecond)
	before, start := ops.Load(), time.Now()
	c.MigrateSlot(t, SlotOf(key(0)), to)
	took, during := time.Since(start), ops.Load()-before
	// Increments run after the migration too.
	time.Sleep(100 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	t.Logf("slot %d (%d keys) moved from %s to %s in %v, %d increments meanwhile; the clients met %d ASK and %d MOVED",
		SlotOf(key(0)), keys, from.Addr, to.Addr, took.Round(time.Millisecond), during, seen.ask.Load(), seen.moved.Load())

	if len(errs) > 0 {
		t.Errorf("%d operations failed during the migration, first: %v", len(errs), errs[0])
	}
	if seen.ask.Load() == 0 || seen.moved.Load() == 0 {
		t.Errorf("the clients met %d ASK and %d MOVED, want both", seen.ask.Load(), seen.moved.Load())
	}
	if during < 50 {
		t.Errorf("only %d increments during the migration: it did not overlap the traffic", during)
	}
	if got := c.MasterFor(key(0)); got != to {
		t.Fatalf("after the migration MasterFor names %v, want %s", got, to.Addr)
	}
	if n, err := from.Client(t).ClusterCountKeysInSlot(ctx, SlotOf(key(0))).Result(); err != nil || n != 0 {
		t.Errorf("the source still holds %d keys of the slot (%v)", n, err)
	}
	for i := range keys {
		v, err := to.Client(t).Get(ctx, key(i)).Int64()
		if err != nil || v != counts[i] {
			t.Errorf("%s on the target: %d, %v; want the %d increments acknowledged", key(i), v, err, counts[i])
		}
	}
}

// redirects counts the ASK and MOVED answers a cluster client's node clients get.
type redirects struct{ ask, moved atomic.Int64 }

func (r *redirects) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *redirects) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && strings.HasPrefix(err.Error(), "ASK ") {
			r.ask.Add(1)
		}
		if err != nil && strings.HasPrefix(err.Error(), "MOVED ") {
			r.moved.Add(1)
		}
		return err
	}
}

func (r *redirects) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestClusterFailoverAfterMasterKilled kills a key's master with SIGKILL: its replica
// takes over with the key (written with WAIT 1), and the old master, started again,
// comes back as a replica.
func TestClusterFailoverAfterMasterKilled(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	rdb := c.Client(t)
	const key = "{failover}:k"
	old := c.MasterFor(key)
	oldMasters := c.Masters()
	conn := old.Client(t).Conn()
	defer conn.Close()
	if err := conn.Set(ctx, key, "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d, %v", n, err)
	}
	if v, err := rdb.Get(ctx, key).Result(); err != nil || v != "kept" {
		t.Fatalf("before the kill: %q, %v", v, err)
	}

	old.Kill()
	killed := time.Now()
	var now *RedisServer
	waitFor(t, 30*time.Second, "a replica serves the killed master's slot", func() bool {
		now = c.MasterFor(key)
		return now != nil && now != old
	})
	promoted := time.Since(killed)
	c.WaitHealthy(t, 30*time.Second)
	t.Logf("master %s killed: %s served its slot %v later, cluster healthy %v later",
		old.Addr, now.Addr, promoted.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	if slices.Contains(oldMasters, now) {
		t.Errorf("the new master %s was a master before, not the killed one's replica", now.Addr)
	}
	if v, err := rdb.Get(ctx, key).Result(); err != nil || v != "kept" {
		t.Fatalf("after the failover: %q, %v", v, err)
	}

	old.Start()
	restarted := time.Now()
	c.WaitHealthy(t, 60*time.Second)
	t.Logf("the old master rejoined and synced %v after its restart", time.Since(restarted).Round(time.Millisecond))
	if role := infoField(old.info("replication"), "role"); role != "slave" {
		t.Errorf("the restarted old master is a %s, want a replica", role)
	}
	if got := c.MasterFor(key); got != now {
		t.Errorf("after the restart %v serves the key, want %s", got, now.Addr)
	}
}

// TestClusterOptionsAndRestart: a cluster of three masters without replicas; SetConfig
// reaches every node and is kept by a node started again, which comes back with its
// nodes.conf and its data.
func TestClusterOptionsAndRestart(t *testing.T) {
	start := time.Now()
	c := StartCluster(t, ClusterOptions{ReplicasPerMaster: -1, NodeTimeout: time.Second})
	t.Logf("3+0 cluster started in %v", time.Since(start).Round(time.Millisecond))
	ctx := context.Background()
	if len(c.Nodes()) != 3 || len(c.Masters()) != 3 {
		t.Fatalf("%d nodes, %d masters; want 3 and 3", len(c.Nodes()), len(c.Masters()))
	}
	const key = "{opt}:k"
	m := c.MasterFor(key)
	if err := m.Client(t).Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c.SetConfig(t, "min-replicas-to-write", "1", "min-replicas-max-lag", "10")
	m.Kill()
	m.Start()
	c.WaitHealthy(t, 30*time.Second)
	if got := c.MasterFor(key); got != m {
		t.Fatalf("after the restart %v serves the key, want %s again", got, m.Addr)
	}
	cl := m.Client(t)
	if v, err := cl.Get(ctx, key).Result(); err != nil || v != "v" {
		t.Fatalf("after the restart: %q, %v", v, err)
	}
	if err := cl.Set(ctx, key, "w", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOREPLICAS") {
		t.Fatalf("a write on a master without replicas after SetConfig and a restart: %v, want NOREPLICAS", err)
	}
}

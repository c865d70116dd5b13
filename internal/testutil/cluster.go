package testutil

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of redis-server processes owned by a test (or a test
// package, see StartClusterMain): 3 masters with one replica each, AOF fsynced before
// every answer, as the service runs it.
type Cluster struct {
	t     testing.TB
	nodes []*RedisServer

	mu      sync.Mutex
	clients map[string]*redis.Client // one plain client per node, for the helpers
}

// ClusterOptions shape a cluster; the zero value is 3 masters + 3 replicas with a
// cluster-node-timeout of 1.5 s (a failover takes a few seconds).
type ClusterOptions struct {
	NodeTimeout time.Duration
	// ExtraArgs are passed to every redis-server (for example "--min-replicas-to-write", "1").
	ExtraArgs []string
}

// StartCluster starts six redis-server processes in cluster mode on free ports, joins
// them with redis-cli --cluster create, and waits until every slot is served and every
// replica has finished its first sync (a replica that has not refuses to take over).
// It fails the test when redis-server or redis-cli is missing.
func StartCluster(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli not found in PATH (make test installs redis-tools): %v", err)
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = 1500 * time.Millisecond
	}
	args := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(o.NodeTimeout.Milliseconds(), 10),
		"--appendonly", "yes", "--appendfsync", "always", "--repl-diskless-sync-delay", "0",
		// A master down stops its own slots only, not the sales on the other masters.
		"--cluster-require-full-coverage", "no"}, o.ExtraArgs...)
	c := &Cluster{t: t, clients: map[string]*redis.Client{}}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, cl := range c.clients {
			_ = cl.Close()
		}
	})
	for range 6 {
		c.nodes = append(c.nodes, StartRedis(t, args...))
	}
	create := append([]string{"--cluster", "create"}, c.Addrs()...)
	create = append(create, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", create...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitHealthy(t, 60*time.Second)
	return c
}

// StartClusterMain is StartCluster for a package's TestMain, so that the package's
// tests share one cluster. It exits the test binary with status 1 when the cluster
// cannot be had. Call stop after m.Run.
func StartClusterMain(o ClusterOptions) (c *Cluster, stop func()) {
	tb := &mainTB{}
	return StartCluster(tb, o), tb.cleanup
}

// Addrs returns the address of every node, for SECKILL_REDIS_ADDR (any one is a seed).
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// Nodes returns the redis-server processes, masters and replicas alike.
func (c *Cluster) Nodes() []*RedisServer { return c.nodes }

// Env returns the settings that put the service on this cluster.
func (c *Cluster) Env() []string {
	return []string{"SECKILL_REDIS_CLUSTER=true", "SECKILL_REDIS_ADDR=" + strings.Join(c.Addrs(), ",")}
}

// Client returns a cluster client, closed at the end of the test.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(),
		ClusterStateReloadInterval: 500 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr string
	master   bool
	failed   bool
	slots    [][2]int
}

// topology reads CLUSTER NODES from the first node that answers.
func (c *Cluster) topology() ([]clusterNode, error) {
	var lastErr error
	for _, n := range c.nodes {
		out, err := c.node(n.Addr).ClusterNodes(context.Background()).Result()
		if err != nil {
			lastErr = err
			continue
		}
		var nodes []clusterNode
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 8 {
				continue
			}
			cn := clusterNode{id: f[0], addr: strings.Split(f[1], "@")[0],
				master: strings.Contains(f[2], "master"), failed: strings.Contains(f[2], "fail")}
			for _, r := range f[8:] {
				if strings.HasPrefix(r, "[") { // a slot being migrated or imported
					continue
				}
				lo, hi, found := strings.Cut(r, "-")
				a, _ := strconv.Atoi(lo)
				b := a
				if found {
					b, _ = strconv.Atoi(hi)
				}
				cn.slots = append(cn.slots, [2]int{a, b})
			}
			nodes = append(nodes, cn)
		}
		return nodes, nil
	}
	return nil, fmt.Errorf("no cluster node answers: %v", lastErr)
}

func (c *Cluster) server(addr string) *RedisServer {
	for _, n := range c.nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// Masters returns the nodes that are masters serving slots now (none when no node answers).
func (c *Cluster) Masters() []*RedisServer {
	nodes, err := c.topology()
	if err != nil {
		return nil
	}
	var out []*RedisServer
	for _, n := range nodes {
		if n.master && !n.failed && len(n.slots) > 0 {
			out = append(out, c.server(n.addr))
		}
	}
	return out
}

// SlotOf returns the hash slot of a key.
func SlotOf(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % 16384)
}

// crc16 is the CRC16-CCITT (XMODEM) of Redis Cluster's key slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// MasterOf returns the master serving a key's slot now, or nil while none does (in a
// failover, before a replica has taken over) or no node answers.
func (c *Cluster) MasterOf(key string) *RedisServer { return c.masterOfSlot(SlotOf(key)) }

func (c *Cluster) masterOfSlot(slot int) *RedisServer {
	nodes, err := c.topology()
	if err != nil {
		return nil
	}
	for _, n := range nodes {
		if !n.master || n.failed {
			continue
		}
		for _, r := range n.slots {
			if slot >= r[0] && slot <= r[1] {
				return c.server(n.addr)
			}
		}
	}
	return nil
}

// WaitHealthy waits until every live node says cluster_state:ok, three masters serve
// slots, and every live replica's link to its master is up.
func (c *Cluster) WaitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var why string
	for time.Now().Before(deadline) {
		if why = c.unhealthy(); why == "" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("cluster not healthy after %v: %s", timeout, why)
}

func (c *Cluster) unhealthy() string {
	ctx := context.Background()
	masters := 0
	for _, n := range c.nodes {
		cl := c.node(n.Addr)
		info, err := cl.ClusterInfo(ctx).Result()
		if err != nil {
			if ping(n.Addr) != nil {
				continue // a killed node
			}
			return n.Addr + ": " + err.Error()
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return n.Addr + " reports cluster_state not ok"
		}
		repl, err := cl.Info(ctx, "replication").Result()
		switch {
		case err != nil:
			return n.Addr + ": " + err.Error()
		case strings.Contains(repl, "role:master"):
			masters++
		case !strings.Contains(repl, "master_link_status:up"):
			return "replica " + n.Addr + " is not linked to its master"
		}
	}
	if nodes, err := c.topology(); err != nil {
		return err.Error()
	} else {
		serving := 0
		for _, n := range nodes {
			if n.master && !n.failed && len(n.slots) > 0 {
				serving++
			}
		}
		if serving != 3 {
			return fmt.Sprintf("%d masters serve slots, want 3", serving)
		}
	}
	return ""
}

// SetConfig runs CONFIG SET with args on every live node.
func (c *Cluster) SetConfig(t testing.TB, args ...string) {
	t.Helper()
	for _, n := range c.nodes {
		if ping(n.Addr) != nil {
			continue
		}
		a := []any{"CONFIG", "SET"}
		for _, s := range args {
			a = append(a, s)
		}
		if err := c.node(n.Addr).Do(context.Background(), a...).Err(); err != nil {
			t.Fatalf("CONFIG SET %v on %s: %v", args, n.Addr, err)
		}
	}
}

// MigrateSlot moves a slot and its keys to the master to, live, as redis-cli --cluster
// reshard does: SETSLOT IMPORTING and MIGRATING, MIGRATE in batches of ten keys with a
// pause between them (so clients meet ASK, and TRYAGAIN for scripts whose keys are
// split), then SETSLOT NODE on every master (MOVED from then on).
func (c *Cluster) MigrateSlot(t testing.TB, slot int, to *RedisServer) {
	t.Helper()
	ctx := context.Background()
	from := c.masterOfSlot(slot)
	if from == nil || from == to {
		t.Fatalf("slot %d: served by %v, to move to %s", slot, from, to.Addr)
	}
	src, dst := c.node(from.Addr), c.node(to.Addr)
	srcID, err1 := src.Do(ctx, "CLUSTER", "MYID").Text()
	dstID, err2 := dst.Do(ctx, "CLUSTER", "MYID").Text()
	if err1 != nil || err2 != nil {
		t.Fatalf("cluster myid: %v %v", err1, err2)
	}
	must := func(c *redis.Client, args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	must(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
	must(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
	host, port, _ := net.SplitHostPort(to.Addr)
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 10).Result()
		if err != nil {
			t.Fatalf("getkeysinslot: %v", err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(src, args...)
		time.Sleep(20 * time.Millisecond)
	}
	for _, m := range c.Masters() {
		must(c.node(m.Addr), "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	}
	must(dst, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
}

// node returns a plain client of one node, closed with the cluster.
func (c *Cluster) node(addr string) *redis.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.clients[addr]
	if cl == nil {
		cl = redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second,
			ReadTimeout: 2 * time.Second, MaxRetries: -1, PoolSize: 2})
		c.clients[addr] = cl
	}
	return cl
}

package testutil

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of redis-server processes owned by a test (or a test
// package, see StartClusterMain): by default 3 masters with one replica each, AOF
// fsynced before every answer, as the service runs it. Its nodes are RedisServers:
// Kill, Start, Pause and Resume work on them, and a restarted node keeps its data and
// its nodes.conf, so it rejoins the cluster (as a replica when another node took over).
type Cluster struct {
	nodes []*RedisServer
	sec   *RedisSecurity

	mu      sync.Mutex
	clients map[string]*redis.Client // one plain client per node, for the helpers
}

// ClusterOptions shape a cluster; the zero value is 3 masters + 3 replicas with a
// cluster-node-timeout of 1.5 s (a failover then takes about 2 to 4 s).
type ClusterOptions struct {
	// Masters is the number of masters: 3 when 0, and redis-cli wants 3 at least.
	Masters int
	// ReplicasPerMaster is the number of replicas of each master: 1 when 0, none when
	// negative.
	ReplicasPerMaster int
	// NodeTimeout is cluster-node-timeout: how long a node may not answer before it is
	// failed over.
	NodeTimeout time.Duration
	// ExtraArgs are passed to every redis-server (for example "--min-replicas-to-write", "1").
	ExtraArgs []string
	// Security locks the nodes down (TLS only with tls-cluster yes, ACL users); nil:
	// SecureRedis's, if the test asked for it, else none.
	Security *RedisSecurity
	// Secure locks the nodes down with a RedisSecurity of their own (for a cluster a
	// package shares, started by StartClusterMain).
	Secure bool
}

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// StartCluster starts the nodes in cluster mode on free ports, joins them with
// redis-cli --cluster create, and waits until every node says cluster_state:ok, every
// slot is served and every replica has finished its first sync (a replica that has not
// refuses to take over). It fails the test when redis-server or redis-cli is missing.
func StartCluster(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli not found in PATH (make test installs redis-tools): %v", err)
	}
	if o.Masters == 0 {
		o.Masters = 3
	}
	if o.Masters < 3 {
		t.Fatalf("a cluster of %d masters: redis-cli --cluster create wants 3 at least", o.Masters)
	}
	switch {
	case o.ReplicasPerMaster == 0:
		o.ReplicasPerMaster = 1
	case o.ReplicasPerMaster < 0:
		o.ReplicasPerMaster = 0
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = 1500 * time.Millisecond
	}
	args := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(o.NodeTimeout.Milliseconds(), 10),
		"--appendonly", "yes", "--appendfsync", "always",
		// A replica's first sync starts at once, not after the default 5 s.
		"--repl-diskless-sync-delay", "0",
		// A master down stops its own slots only, not the sales on the other masters.
		"--cluster-require-full-coverage", "no"}, o.ExtraArgs...)
	switch {
	case o.Security == nil && o.Secure:
		o.Security = NewRedisSecurity(t)
	case o.Security == nil:
		o.Security = securityOf(t)
	}
	if o.Security != nil {
		// The cluster bus over TLS too; the nodes then announce their TLS ports.
		args = append(args, "--tls-cluster", "yes")
	}
	c := &Cluster{clients: map[string]*redis.Client{}, sec: o.Security}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, cl := range c.clients {
			_ = cl.Close()
		}
	})
	for range o.Masters * (1 + o.ReplicasPerMaster) {
		c.nodes = append(c.nodes, StartRedisWith(t, o.Security, args...))
	}
	create := append(append(o.Security.cliArgs(), "--cluster", "create"), c.Addrs()...)
	create = append(create, "--cluster-replicas", strconv.Itoa(o.ReplicasPerMaster), "--cluster-yes")
	if out, err := exec.Command("redis-cli", create...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitHealthy(t, 60*time.Second)
	return c
}

// StartClusterMain is StartCluster for a package's TestMain (or a sync.Once in a test),
// so that the package's tests share one cluster. It exits the test binary with status 1
// when the cluster cannot be had. Call stop after m.Run.
func StartClusterMain(o ClusterOptions) (c *Cluster, stop func()) {
	tb := &mainTB{}
	return StartCluster(tb, o), tb.cleanup
}

// Addrs returns the address of every node, masters and replicas: any of them is a seed.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// Nodes returns the redis-server processes, masters and replicas alike.
func (c *Cluster) Nodes() []*RedisServer { return c.nodes }

// Topology returns the settings that put the service on this cluster (and its user
// and TLS under a RedisSecurity).
func (c *Cluster) Topology() Topology {
	return append(Topology{"SECKILL_REDIS_ADDR=" + strings.Join(c.Addrs(), ","), "SECKILL_REDIS_CLUSTER=true"}, c.sec.env(false)...)
}

// Env is Topology (the name the e2e tests use).
func (c *Cluster) Env() []string { return c.Topology() }

// Client returns a cluster client seeded with every node, closed at the end of the test.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	o := c.sec.adminOptions("")
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Username: o.Username, Password: o.Password,
		TLSConfig: o.TLSConfig, ClusterStateReloadInterval: 500 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Masters returns the masters serving slots now, as the first node that answers sees
// them (none when no node answers).
func (c *Cluster) Masters() []*RedisServer {
	nodes, err := c.topology()
	if err != nil {
		return nil
	}
	var out []*RedisServer
	for _, n := range nodes {
		if n.serving() {
			out = append(out, c.server(n.addr))
		}
	}
	return out
}

// MasterFor returns the master serving a key's slot now, or nil while none does (in a
// failover, before a replica has taken over) or no node answers.
func (c *Cluster) MasterFor(key string) *RedisServer { return c.masterOfSlot(SlotOf(key)) }

// MasterOf is MasterFor (the name the e2e tests use).
func (c *Cluster) MasterOf(key string) *RedisServer { return c.MasterFor(key) }

func (c *Cluster) masterOfSlot(slot int) *RedisServer {
	nodes, err := c.topology()
	if err != nil {
		return nil
	}
	if n := ownerOf(nodes, slot); n != nil {
		return c.server(n.addr)
	}
	return nil
}

// SlotOf returns the hash slot of a key, as CLUSTER KEYSLOT does (the tests check it).
func SlotOf(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % clusterSlots)
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

// WaitHealthy waits, after a start, a failover or a restart, until every live node (one
// that answers PING: a killed or paused node is left out) says cluster_state:ok and that
// all 16384 slots are served by masters it does not think failing, the live nodes agree
// on which master serves which slot, and every live replica's link to its master is up.
func (c *Cluster) WaitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var why string
	for time.Now().Before(deadline) {
		if why = c.unhealthy(); why == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("cluster not healthy after %v: %s", timeout, why)
}

// unhealthy says what is not healthy yet, "" when nothing.
func (c *Cluster) unhealthy() string {
	ctx := context.Background()
	var first, firstOwners string
	for _, n := range c.nodes {
		if n.ping() != nil {
			continue // a killed or paused node
		}
		cl := c.node(n.Addr)
		info, err := cl.ClusterInfo(ctx).Result()
		if err != nil {
			return n.Addr + ": " + err.Error()
		}
		if v := infoField(info, "cluster_state"); v != "ok" {
			return n.Addr + " says cluster_state:" + v
		}
		if v := infoField(info, "cluster_slots_ok"); v != strconv.Itoa(clusterSlots) {
			return n.Addr + " says cluster_slots_ok:" + v
		}
		repl, err := cl.Info(ctx, "replication").Result()
		if err != nil {
			return n.Addr + ": " + err.Error()
		}
		if infoField(repl, "role") == "slave" && infoField(repl, "master_link_status") != "up" {
			return "replica " + n.Addr + " is not linked to its master"
		}
		nodes, err := c.view(n.Addr)
		if err != nil {
			return n.Addr + ": " + err.Error()
		}
		switch owners := slotOwners(nodes); {
		case first == "":
			first, firstOwners = n.Addr, owners
		case owners != firstOwners:
			return fmt.Sprintf("%s and %s disagree on the slots' masters: %s / %s", first, n.Addr, firstOwners, owners)
		}
	}
	if first == "" {
		return "no node answers"
	}
	return ""
}

// SetConfig runs CONFIG SET name value [name value ...] on every live node, and
// remembers the settings so that a node started again later has them too.
func (c *Cluster) SetConfig(t testing.TB, nameValues ...string) {
	t.Helper()
	if len(nameValues) == 0 || len(nameValues)%2 != 0 {
		t.Fatalf("SetConfig wants name value pairs, got %q", nameValues)
	}
	cmd := []any{"CONFIG", "SET"}
	for _, s := range nameValues {
		cmd = append(cmd, s)
	}
	for _, n := range c.nodes {
		n.mu.Lock()
		for i := 0; i < len(nameValues); i += 2 {
			n.args = append(n.args, "--"+nameValues[i], nameValues[i+1])
		}
		n.mu.Unlock()
		if n.ping() != nil {
			continue
		}
		if err := c.node(n.Addr).Do(context.Background(), cmd...).Err(); err != nil {
			t.Fatalf("CONFIG SET %q on %s: %v", nameValues, n.Addr, err)
		}
	}
}

// Migration batches: MigrateSlot moves this many keys at a time, and pauses between
// batches so that a migration of a few hundred keys overlaps the clients' traffic.
const (
	migrateBatch = 10
	migratePause = 20 * time.Millisecond
)

// MigrateSlot moves a slot and its keys to the master to, live, by the steps of the
// CLUSTER SETSLOT documentation (as redis-cli --cluster reshard does): SETSLOT
// IMPORTING on the target and MIGRATING on the source, GETKEYSINSLOT and MIGRATE ...
// KEYS in batches of ten keys with a pause between them (clients meet ASK meanwhile, and
// TRYAGAIN for a command whose keys are split), then SETSLOT NODE on the target, the
// source and the other masters (MOVED from then on). It returns when every live node
// names the target as the slot's master.
func (c *Cluster) MigrateSlot(t testing.TB, slot int, to *RedisServer) {
	t.Helper()
	ctx := context.Background()
	nodes, err := c.topology()
	if err != nil {
		t.Fatalf("migrate slot %d: %v", slot, err)
	}
	src, dst := ownerOf(nodes, slot), nodeAt(nodes, to.Addr)
	switch {
	case src == nil:
		t.Fatalf("migrate slot %d: no master serves it", slot)
	case dst == nil || !dst.master || dst.failed:
		t.Fatalf("migrate slot %d: %s is not a live master", slot, to.Addr)
	case src == dst:
		t.Fatalf("migrate slot %d: %s serves it already", slot, to.Addr)
	}
	must := func(addr string, args ...any) {
		t.Helper()
		if err := c.node(addr).Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v on %s: %v", args, addr, err)
		}
	}
	must(dst.addr, "CLUSTER", "SETSLOT", slot, "IMPORTING", src.id)
	must(src.addr, "CLUSTER", "SETSLOT", slot, "MIGRATING", dst.id)
	host, port, _ := net.SplitHostPort(dst.addr)
	for {
		keys, err := c.node(src.addr).ClusterGetKeysInSlot(ctx, slot, migrateBatch).Result()
		if err != nil {
			t.Fatalf("CLUSTER GETKEYSINSLOT %d on %s: %v", slot, src.addr, err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(src.addr, args...)
		// Clients meet the slot half moved between batches: the migration under test.
		time.Sleep(migratePause)
	}
	must(dst.addr, "CLUSTER", "SETSLOT", slot, "NODE", dst.id)
	must(src.addr, "CLUSTER", "SETSLOT", slot, "NODE", dst.id)
	for _, n := range nodes {
		if n.serving() && n != src && n != dst {
			must(n.addr, "CLUSTER", "SETSLOT", slot, "NODE", dst.id)
		}
	}
	waitFor(t, 10*time.Second, fmt.Sprintf("every node names %s as slot %d's master", dst.addr, slot), func() bool {
		for _, n := range c.nodes {
			if n.ping() != nil {
				continue
			}
			view, err := c.view(n.Addr)
			if err != nil {
				return false
			}
			if o := ownerOf(view, slot); o == nil || o.addr != dst.addr {
				return false
			}
		}
		return true
	})
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr string
	master   bool
	failed   bool // fail or fail? (PFAIL)
	slots    [][2]int
}

// serving reports whether the node is a master that serves slots and is not thought failing.
func (n *clusterNode) serving() bool { return n.master && !n.failed && len(n.slots) > 0 }

// view reads CLUSTER NODES from one node: the cluster as that node sees it.
func (c *Cluster) view(addr string) ([]*clusterNode, error) {
	out, err := c.node(addr).ClusterNodes(context.Background()).Result()
	if err != nil {
		return nil, err
	}
	var nodes []*clusterNode
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		flags := strings.Split(f[2], ",")
		n := &clusterNode{id: f[0], addr: strings.Split(f[1], "@")[0], master: slices.Contains(flags, "master"),
			failed: slices.Contains(flags, "fail") || slices.Contains(flags, "fail?")}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") { // a slot being migrated or imported
				continue
			}
			lo, hi, isRange := strings.Cut(r, "-")
			a, _ := strconv.Atoi(lo)
			b := a
			if isRange {
				b, _ = strconv.Atoi(hi)
			}
			n.slots = append(n.slots, [2]int{a, b})
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// topology is the view of the first node that answers.
func (c *Cluster) topology() ([]*clusterNode, error) {
	var lastErr error
	for _, n := range c.nodes {
		nodes, err := c.view(n.Addr)
		if err == nil {
			return nodes, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("no cluster node answers: %v", lastErr)
}

// ownerOf returns the master that serves slot in a view, nil when none does.
func ownerOf(nodes []*clusterNode, slot int) *clusterNode {
	for _, n := range nodes {
		if !n.serving() {
			continue
		}
		for _, r := range n.slots {
			if slot >= r[0] && slot <= r[1] {
				return n
			}
		}
	}
	return nil
}

// nodeAt returns the node of a view with the address, nil when there is none.
func nodeAt(nodes []*clusterNode, addr string) *clusterNode {
	for _, n := range nodes {
		if n.addr == addr {
			return n
		}
	}
	return nil
}

// slotOwners sums up a view's slot ranges and their masters, to compare two views.
func slotOwners(nodes []*clusterNode) string {
	var parts []string
	for _, n := range nodes {
		if n.serving() {
			parts = append(parts, fmt.Sprintf("%s%v", n.addr, n.slots))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// infoField returns the value of one "name:value" line of INFO or CLUSTER INFO.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

func (c *Cluster) server(addr string) *RedisServer {
	for _, n := range c.nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// node returns a plain client of one node, closed with the cluster.
func (c *Cluster) node(addr string) *redis.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.clients[addr]
	if cl == nil {
		o := c.sec.adminOptions(addr)
		o.DialTimeout, o.ReadTimeout, o.MaxRetries, o.PoolSize = time.Second, 2*time.Second, -1, 2
		cl = redis.NewClient(o)
		c.clients[addr] = cl
	}
	return cl
}

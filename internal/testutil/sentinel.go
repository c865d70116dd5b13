package testutil

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelSet is one master, one replica and three Sentinels watching them, owned by a
// test: Redis with automatic failover and no cluster.
type SentinelSet struct {
	// MasterName is the name the Sentinels monitor the master under.
	MasterName string
	servers    []*RedisServer // the first master and its replica
	sentinels  []*RedisServer
	sec        *RedisSecurity
}

// SentinelOptions shape a Sentinel set; the zero value monitors "seckill", takes the
// master for down after 3 s and gives a failover 5 s.
type SentinelOptions struct {
	// MasterName is the name the Sentinels monitor the master under.
	MasterName string
	// DownAfter is down-after-milliseconds: how long the master may not answer before
	// a Sentinel takes it for down [3 s].
	DownAfter time.Duration
	// FailoverTimeout is failover-timeout: how long a failover may take before another
	// is tried.
	FailoverTimeout time.Duration
	// ExtraArgs are passed to the master and the replica (not to the Sentinels).
	ExtraArgs []string
	// Security locks the servers and Sentinels down; nil: SecureRedis's, if the test
	// asked for it (then their ACL LOGs are checked at the end), else none.
	Security *RedisSecurity
}

// StartSentinel starts a master and a replica (AOF fsynced before every answer) and
// three Sentinels (quorum 2), and waits until the replica has synced, every Sentinel
// knows the replica and the two other Sentinels. At most one SentinelOptions; none is
// the zero value. It fails the test when redis-server is missing.
func StartSentinel(t testing.TB, opts ...SentinelOptions) *SentinelSet {
	t.Helper()
	var o SentinelOptions
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		t.Fatalf("StartSentinel takes one SentinelOptions at most, got %d", len(opts))
	}
	if o.MasterName == "" {
		o.MasterName = "seckill"
	}
	if o.DownAfter == 0 {
		// Not 1 s: under the whole suite a just-promoted master once went a second without
		// answering a PING, the Sentinels took it for down as well and failed back over to
		// the old master, restarted meanwhile (TestSentinelFailover then waited in vain for
		// the old master to become a replica).
		o.DownAfter = 3 * time.Second
	}
	if o.FailoverTimeout == 0 {
		o.FailoverTimeout = 5 * time.Second
	}
	checked := o.Security == nil && securityOf(t) != nil // SecureRedis's: the ACL LOGs are checked
	if checked {
		o.Security = securityOf(t)
	}
	args := append([]string{"--appendonly", "yes", "--appendfsync", "always", "--repl-diskless-sync-delay", "0"}, o.ExtraArgs...)
	master := StartRedisWith(t, o.Security, args...)
	host, port, _ := net.SplitHostPort(master.Addr)
	replica := StartRedisWith(t, o.Security, append(args, "--replicaof", host, port)...)
	if checked {
		for _, s := range []*RedisServer{master, replica} {
			t.Cleanup(func() { s.checkACLLog(t) })
		}
	}
	ss := &SentinelSet{MasterName: o.MasterName, servers: []*RedisServer{master, replica}, sec: o.Security}
	waitFor(t, 30*time.Second, "replica linked", func() bool {
		return infoField(replica.info("replication"), "master_link_status") == "up"
	})
	for range 3 {
		ss.sentinels = append(ss.sentinels, startSentinelProcess(t, o, master.Addr, checked))
	}
	// Sentinels find each other by hello messages every 2 s; until they have, a
	// failover could not be voted.
	waitFor(t, 30*time.Second, "sentinels see the replica and each other", func() bool {
		for _, s := range ss.sentinels {
			n, err := s.do("SENTINEL", "REPLICAS", ss.MasterName).Slice()
			if err != nil || len(n) == 0 {
				return false
			}
			if s.sentinelMaster(ss.MasterName)["num-other-sentinels"] != strconv.Itoa(len(ss.sentinels)-1) {
				return false
			}
		}
		return true
	})
	return ss
}

// startSentinelProcess runs redis-server in Sentinel mode with a config file of its own
// (a Sentinel rewrites it).
func startSentinelProcess(t testing.TB, o SentinelOptions, masterAddr string, checkACLLog bool) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found in PATH (make test installs it): %v", err)
	}
	host, port, _ := net.SplitHostPort(masterAddr)
	s := &RedisServer{t: t, dir: t.TempDir(), sec: o.Security}
	p := freePort(t)
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	conf := filepath.Join(s.dir, "sentinel.conf")
	head, tail := fmt.Sprintf("port %d\n", p), ""
	if o.Security != nil {
		head, tail = o.Security.sentinelConf(p, o.MasterName)
	}
	body := head + fmt.Sprintf(`bind 127.0.0.1
dir %[1]s
logfile %[2]s
sentinel resolve-hostnames no
sentinel monitor %[3]s %[4]s %[5]s 2
sentinel down-after-milliseconds %[3]s %[6]d
sentinel failover-timeout %[3]s %[7]d
sentinel parallel-syncs %[3]s 1
`, s.dir, filepath.Join(s.dir, "sentinel.log"), o.MasterName, host, port,
		o.DownAfter.Milliseconds(), o.FailoverTimeout.Milliseconds()) + tail
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s.args = []string{bin, conf, "--sentinel"}
	if err := s.start(); err != nil {
		t.Fatalf("start sentinel: %v (see %s)", err, filepath.Join(s.dir, "sentinel.log"))
	}
	t.Cleanup(func() {
		if checkACLLog {
			s.checkACLLog(t)
		}
		s.Kill()
		if t.Failed() { // what the Sentinel decided, and when (a TILT, a conversion)
			b, _ := os.ReadFile(filepath.Join(s.dir, "sentinel.log"))
			t.Logf("--- sentinel %s log ---\n%s", s.Addr, b)
		}
	})
	return s
}

// SentinelAddrs returns the Sentinels' addresses.
func (ss *SentinelSet) SentinelAddrs() []string {
	out := make([]string, len(ss.sentinels))
	for i, s := range ss.sentinels {
		out[i] = s.Addr
	}
	return out
}

// Sentinels returns the Sentinel processes (Kill, Start, Pause and Resume work on them).
func (ss *SentinelSet) Sentinels() []*RedisServer { return ss.sentinels }

// Topology returns the settings that put the service on this set (and its user, TLS
// and Sentinel user under a RedisSecurity).
func (ss *SentinelSet) Topology() Topology {
	return append(Topology{"SECKILL_REDIS_ADDR=" + strings.Join(ss.SentinelAddrs(), ","), "SECKILL_REDIS_MASTER_NAME=" + ss.MasterName},
		ss.sec.env(true)...)
}

// Env is Topology (the name the e2e tests use).
func (ss *SentinelSet) Env() []string { return ss.Topology() }

// Servers returns the two data servers, master and replica (in either role now).
func (ss *SentinelSet) Servers() []*RedisServer { return ss.servers }

// Master returns the server a Sentinel names as master now (SENTINEL
// GET-MASTER-ADDR-BY-NAME); it fails the test when no Sentinel names one of the set's.
func (ss *SentinelSet) Master(t testing.TB) *RedisServer {
	t.Helper()
	m, err := ss.master()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Replica returns the data server that the Sentinels do not name as master: the
// replica, or the old master while it is down after a failover.
func (ss *SentinelSet) Replica(t testing.TB) *RedisServer {
	t.Helper()
	if m := ss.Master(t); m == ss.servers[0] {
		return ss.servers[1]
	}
	return ss.servers[0]
}

func (ss *SentinelSet) master() (*RedisServer, error) {
	for _, s := range ss.sentinels {
		addr, err := s.do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", ss.MasterName).StringSlice()
		if err != nil || len(addr) != 2 {
			continue
		}
		for _, srv := range ss.servers {
			if srv.Addr == net.JoinHostPort(addr[0], addr[1]) {
				return srv, nil
			}
		}
	}
	return nil, fmt.Errorf("no sentinel names a master of %s", ss.MasterName)
}

// WaitFailover waits until the Sentinels name a master other than old and it says
// role:master, and returns it.
func (ss *SentinelSet) WaitFailover(t testing.TB, old *RedisServer, timeout time.Duration) *RedisServer {
	t.Helper()
	var m *RedisServer
	waitFor(t, timeout, "sentinel failover from "+old.Addr, func() bool {
		var err error
		m, err = ss.master()
		return err == nil && m != old && infoField(m.info("replication"), "role") == "master"
	})
	return m
}

// sentinelMaster returns what a Sentinel knows of a master (SENTINEL MASTER), nil when
// it does not answer.
func (s *RedisServer) sentinelMaster(name string) map[string]string {
	o := s.sec.adminOptions(s.Addr)
	o.DialTimeout, o.ReadTimeout, o.MaxRetries, o.PoolSize = time.Second, 2*time.Second, -1, 1
	c := redis.NewSentinelClient(o)
	defer c.Close()
	m, _ := c.Master(context.Background(), name).Result()
	return m
}

// waitFor polls ok every 50 ms until it holds, or fails the test after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, timeout)
		}
	}
}

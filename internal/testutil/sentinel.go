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
}

// StartSentinel starts a master and a replica (AOF fsynced before every answer) and
// three Sentinels (quorum 2, a master is down after 1 s), and waits until the replica
// has synced and every Sentinel knows it. It fails the test when redis-server is
// missing.
func StartSentinel(t testing.TB) *SentinelSet {
	t.Helper()
	aof := []string{"--appendonly", "yes", "--appendfsync", "always", "--repl-diskless-sync-delay", "0"}
	master := StartRedis(t, aof...)
	host, port, _ := net.SplitHostPort(master.Addr)
	replica := StartRedis(t, append([]string{"--replicaof", host, port}, aof...)...)
	ss := &SentinelSet{MasterName: "seckill", servers: []*RedisServer{master, replica}}
	waitFor(t, 30*time.Second, "replica linked", func() bool {
		return strings.Contains(infoOf(replica.Addr, "replication"), "master_link_status:up")
	})
	for range 3 {
		ss.sentinels = append(ss.sentinels, startSentinelProcess(t, ss.MasterName, master.Addr))
	}
	waitFor(t, 30*time.Second, "sentinels see the replica", func() bool {
		for _, s := range ss.sentinels {
			n, err := do(s.Addr, "SENTINEL", "REPLICAS", ss.MasterName).Slice()
			if err != nil || len(n) == 0 {
				return false
			}
		}
		return true
	})
	return ss
}

// startSentinelProcess runs redis-server in Sentinel mode with a config file of its own
// (a Sentinel rewrites it).
func startSentinelProcess(t testing.TB, name, masterAddr string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found in PATH (make test installs it): %v", err)
	}
	host, port, _ := net.SplitHostPort(masterAddr)
	s := &RedisServer{t: t, dir: t.TempDir()}
	p := freePort(t)
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	conf := filepath.Join(s.dir, "sentinel.conf")
	body := fmt.Sprintf(`port %d
bind 127.0.0.1
dir %s
logfile %s
sentinel resolve-hostnames no
sentinel monitor %s %s %s 2
sentinel down-after-milliseconds %s 1000
sentinel failover-timeout %s 10000
sentinel parallel-syncs %s 1
`, p, s.dir, filepath.Join(s.dir, "sentinel.log"), name, host, port, name, name, name)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s.args = []string{bin, conf, "--sentinel"}
	if err := s.start(); err != nil {
		t.Fatalf("start sentinel: %v (see %s)", err, filepath.Join(s.dir, "sentinel.log"))
	}
	t.Cleanup(s.Kill)
	return s
}

// Addrs returns the Sentinels' addresses.
func (ss *SentinelSet) Addrs() []string {
	out := make([]string, len(ss.sentinels))
	for i, s := range ss.sentinels {
		out[i] = s.Addr
	}
	return out
}

// Env returns the settings that put the service on this set.
func (ss *SentinelSet) Env() []string {
	return []string{"SECKILL_REDIS_ADDR=" + strings.Join(ss.Addrs(), ","), "SECKILL_REDIS_MASTER_NAME=" + ss.MasterName}
}

// Servers returns the two data servers, master and replica (in either role now).
func (ss *SentinelSet) Servers() []*RedisServer { return ss.servers }

// Master returns the server the Sentinels name as master now.
func (ss *SentinelSet) Master(t testing.TB) *RedisServer {
	t.Helper()
	for _, s := range ss.sentinels {
		addr, err := do(s.Addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", ss.MasterName).StringSlice()
		if err != nil || len(addr) != 2 {
			continue
		}
		for _, srv := range ss.servers {
			if srv.Addr == net.JoinHostPort(addr[0], addr[1]) {
				return srv
			}
		}
	}
	t.Fatalf("no sentinel names a master of %s", ss.MasterName)
	return nil
}

// WaitFailover waits until the Sentinels name a master other than old and it says
// role:master, and returns it.
func (ss *SentinelSet) WaitFailover(t testing.TB, old *RedisServer, timeout time.Duration) *RedisServer {
	t.Helper()
	var m *RedisServer
	waitFor(t, timeout, "sentinel failover", func() bool {
		m = ss.Master(t)
		return m != old && strings.Contains(infoOf(m.Addr, "replication"), "role:master")
	})
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

// do runs one command on a server over a connection of its own.
func do(addr string, args ...any) *redis.Cmd {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: 2 * time.Second,
		MaxRetries: -1, PoolSize: 1})
	defer c.Close()
	return c.Do(context.Background(), args...)
}

// infoOf returns a section of INFO, "" when the server does not answer.
func infoOf(addr, section string) string {
	s, _ := do(addr, "INFO", section).Text()
	return s
}

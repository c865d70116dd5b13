// Package testutil starts the real servers the tests talk to: private redis-server
// processes on free ports, and fresh MariaDB schemas. A helper fails the test when
// its server cannot be had; it never skips, so a broken set-up cannot look green.
package testutil

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server process owned by one test. It listens on a free
// loopback port and keeps its data in a private temporary directory, so it can be
// killed and started again on the same address with the same data.
type RedisServer struct {
	t    testing.TB
	Addr string
	dir  string
	args []string
	sec  *RedisSecurity // nil: plaintext, no users

	mu     sync.Mutex
	cmd    *exec.Cmd
	reader *redis.Client // Calls' own, one connection: its set-up is counted once
}

// StartRedis starts a redis-server for the test and stops it at cleanup. Extra
// arguments are passed to redis-server (for example "--appendonly", "yes"). Under
// SecureRedis the server is a locked-down one.
func StartRedis(t testing.TB, extraArgs ...string) *RedisServer {
	t.Helper()
	sec := securityOf(t)
	s := StartRedisWith(t, sec, extraArgs...)
	if sec != nil {
		t.Cleanup(func() { s.checkACLLog(t) }) // runs before StartRedisWith's Kill
	}
	return s
}

// StartRedisWith is StartRedis locked down by sec (TLS only, ACL users, the default
// user off), or a plain server when sec is nil; its ACL LOG is the test's to read. A
// redis-server built without TLS fails the test.
func StartRedisWith(t testing.TB, sec *RedisSecurity, extraArgs ...string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found in PATH (make test installs it): %v", err)
	}
	s := &RedisServer{t: t, dir: t.TempDir(), sec: sec}
	for attempt := 0; attempt < 5; attempt++ {
		port := freePort(t)
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		listen := []string{"--port", strconv.Itoa(port)}
		if sec != nil {
			listen = sec.serverArgs(port)
		}
		s.args = append(append(listen, "--bind", "127.0.0.1",
			"--dir", s.dir, "--save", "", "--appendonly", "no",
			"--protected-mode", "no", "--loglevel", "warning",
			"--logfile", filepath.Join(s.dir, "redis.log"),
		), extraArgs...)
		s.args = append([]string{bin}, s.args...)
		if err := s.start(); err == nil {
			t.Cleanup(s.Kill)
			return s
		}
	}
	log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	t.Fatalf("could not start redis-server (%s):\n%s", filepath.Join(s.dir, "redis.log"), log)
	return nil
}

// Start starts the server again after Kill or Stop, on the same address and data.
func (s *RedisServer) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		s.t.Fatalf("restart redis-server on %s: %v\n%s", s.Addr, err, log)
	}
}

func (s *RedisServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.args[0], s.args[1:]...)
	cmd.Dir = s.dir
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	if s.sec != nil { // a TLS handshake per probe: slow on a loaded machine
		deadline = time.Now().Add(30 * time.Second)
	}
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited at start")
		default:
		}
		if pid, err := s.pid(); err == nil {
			if pid != cmd.Process.Pid {
				// Another test's server took the port while this one was down (go test
				// runs packages side by side); this one could not bind it.
				_ = cmd.Process.Kill()
				<-exited
				return fmt.Errorf("%s answers from another process (pid %d), not the redis-server started (pid %d)",
					s.Addr, pid, cmd.Process.Pid)
			}
			s.cmd = cmd
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	return fmt.Errorf("redis-server did not answer on %s", s.Addr)
}

// Kill stops the server with SIGKILL, as a crash would. It is a no-op when the
// server is not running.
func (s *RedisServer) Kill() { s.signalAndWait(syscall.SIGKILL) }

func (s *RedisServer) signalAndWait(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused server cannot act on SIGTERM
	_ = s.cmd.Process.Signal(sig)
	for i := 0; i < 1000 && s.ping() == nil; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	for i := 0; i < 1000 && s.cmd.Process.Signal(syscall.Signal(0)) == nil; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	s.cmd = nil
}

// CopyData copies the server's data files (its AOF and RDB) as they are now into a
// new directory and returns it, for ReplaceData: yesterday's backup, in a test.
func (s *RedisServer) CopyData() string {
	s.t.Helper()
	dst := s.t.TempDir()
	if out, err := exec.Command("cp", "-a", s.dir+"/.", dst).CombinedOutput(); err != nil {
		s.t.Fatalf("copy redis data: %v: %s", err, out)
	}
	_ = os.Remove(filepath.Join(dst, "redis.log"))
	return dst
}

// ReplaceData replaces the data files of a stopped server with a CopyData copy, or
// with none when from is "" (a lost disk); the log file stays.
func (s *RedisServer) ReplaceData(from string) {
	s.t.Helper()
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "redis.log" {
			if err := os.RemoveAll(filepath.Join(s.dir, e.Name())); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	if from == "" {
		return
	}
	if out, err := exec.Command("cp", "-a", from+"/.", s.dir).CombinedOutput(); err != nil {
		s.t.Fatalf("restore redis data: %v: %s", err, out)
	}
}

// Pause freezes the server with SIGSTOP; Resume lets it go on. A paused server
// accepts connections but answers nothing, like a server stuck in a long stall.
func (s *RedisServer) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *RedisServer) Resume() { s.signal(syscall.SIGCONT) }

func (s *RedisServer) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

// Client returns a client of the server, closed at the end of the test: as the
// administrator under a RedisSecurity.
func (s *RedisServer) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(s.sec.adminOptions(s.Addr))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// pid is the process id of the Redis server (or Sentinel) answering on its address.
func (s *RedisServer) pid() (int, error) {
	c := s.probeClient(200 * time.Millisecond)
	defer c.Close()
	ctx, cancel := s.probeContext()
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(infoField(info, "process_id"))
}

func freePort(t testing.TB) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		// Never one handed out before: a process given it may not listen yet (a worker,
		// a stack's second address), and the kernel would hand it out again.
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port
		}
	}
}

// handedOut are the ports freePort has returned in this test binary.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Env returns the environment variable or the default.
func Env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// UsedMemory is the used_memory of the Redis rdb talks to, in bytes (for benchmarks of
// what data costs in Redis).
func UsedMemory(t testing.TB, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no used_memory in INFO memory")
	return 0
}

// SaleKeys lists every key of a sale in Redis, in all its stock buckets (the hash tags
// {act:<id>} and {act:<id>:<n>.<j>} of internal/stock/bucket.go), on each master of a
// Cluster: a SCAN of the keyspace, as a test may make and the service never does.
func SaleKeys(t testing.TB, rdb redis.UniversalClient, activityID int64) []string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex // ForEachMaster runs on every master at once
	var keys []string
	scan := func(ctx context.Context, c *redis.Client) error {
		for _, match := range []string{fmt.Sprintf("seckill:{act:%d}*", activityID), fmt.Sprintf("seckill:{act:%d:*", activityID)} {
			iter := c.Scan(ctx, 0, match, 1000).Iterator()
			for iter.Next(ctx) {
				mu.Lock()
				keys = append(keys, iter.Val())
				mu.Unlock()
			}
			if err := iter.Err(); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	default:
		t.Fatalf("SaleKeys: a client of type %T", rdb)
	}
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// Calls returns how many commands the server has run, those scripts run included, INFO
// (the tests' own reads of this figure, on a connection of their own) left out: the
// difference over a stretch of a test is what the service asked of Redis in it (INFO
// commandstats).
func (s *RedisServer) Calls(t testing.TB) int64 {
	t.Helper()
	s.mu.Lock()
	if s.reader == nil {
		opts := s.sec.adminOptions(s.Addr)
		opts.PoolSize, opts.MinIdleConns = 1, 1
		s.reader = redis.NewClient(opts)
		t.Cleanup(func() { _ = s.reader.Close() })
	}
	reader := s.reader
	s.mu.Unlock()
	info, err := reader.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats of %s: %v", s.Addr, err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		calls, ok := strings.CutPrefix(fields, "calls=")
		if !ok {
			t.Fatalf("INFO commandstats line %q", line)
		}
		c, err := strconv.ParseInt(calls[:strings.IndexByte(calls+",", ',')], 10, 64)
		if err != nil {
			t.Fatalf("INFO commandstats line %q: %v", line, err)
		}
		n += c
	}
	return n
}

package testutil

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"seckill/internal/auth"
	"seckill/internal/buyer"
)

// JWTSecret is the signing secret of the stacks tests start.
const JWTSecret = "test-secret-0123456789abcdef-0123456789"

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Binaries builds cmd/api and cmd/worker once per test binary and returns their paths.
// They live in a temporary folder (about 140 MB) that RemoveBinaries deletes: call it
// from the package's TestMain after m.Run (or make TestMain Main).
func Binaries(t testing.TB) (api, worker string) {
	t.Helper()
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		buildDir, buildErr = os.MkdirTemp("", "seckill-bin-")
		if buildErr != nil {
			return
		}
		for _, name := range []string{"api", "worker"} {
			cmd := exec.Command("go", "build", "-race", "-o", filepath.Join(buildDir, name), "./cmd/"+name)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("build %s: %v\n%s", name, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatalf("%v", buildErr)
	}
	return filepath.Join(buildDir, "api"), filepath.Join(buildDir, "worker")
}

// RemoveBinaries deletes the folder Binaries built into, if it built.
func RemoveBinaries() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// Main runs a package's tests and then removes the binaries they built: the TestMain of
// a package that starts stacks, whose own TestMain has nothing else to do.
func Main(m *testing.M) {
	code := m.Run()
	RemoveBinaries()
	os.Exit(code)
}

// Process is a cmd/api or cmd/worker process owned by a test.
type Process struct {
	t    testing.TB
	name string
	bin  string
	env  []string
	args []string
	log  *SyncBuffer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// SyncBuffer is a bytes.Buffer that a process writes while a test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// StartProcess runs bin with env added to a clean environment, and stops it at cleanup.
// Its output is kept, and printed when the test fails.
func StartProcess(t testing.TB, name, bin string, env []string, args ...string) *Process {
	t.Helper()
	p := &Process{t: t, name: name, bin: bin, env: env, args: args, log: &SyncBuffer{}}
	p.Start()
	t.Cleanup(func() {
		p.Signal(syscall.SIGKILL)
		if t.Failed() {
			t.Logf("--- %s output ---\n%s", name, p.log.String())
		}
	})
	return p
}

// Start starts the process (again).
func (p *Process) Start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, p.env...)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.cmd, p.done = cmd, done
}

// Signal sends sig and, for SIGKILL and SIGTERM, waits until the process has exited.
func (p *Process) Signal(sig syscall.Signal) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	if sig == syscall.SIGKILL || sig == syscall.SIGTERM {
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			p.t.Errorf("%s did not exit after %v", p.name, sig)
		}
	}
}

// Send sends sig and returns at once (Signal waits for SIGTERM and SIGKILL to end it).
func (p *Process) Send(sig syscall.Signal) {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(sig)
	}
}

// WaitExit waits up to d for the process to exit and reports whether it has.
func (p *Process) WaitExit(d time.Duration) bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// Exited reports whether the process has exited, and its exit code.
func (p *Process) Exited() (bool, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return true, p.cmd.ProcessState.ExitCode()
	default:
		return false, 0
	}
}

// Output returns what the process printed so far.
func (p *Process) Output() string { return p.log.String() }

// Stack is API and worker processes on a private Redis (one server, a Cluster or a
// Sentinel set) and a fresh MySQL database.
type Stack struct {
	// URL is the first API's base URL; URLs holds each API's. MetricsURL is the first
	// API's /metrics (SECKILL_METRICS_ADDR, never on URL); MetricsURLs holds each API's.
	URL         string
	URLs        []string
	MetricsURL  string
	MetricsURLs []string
	// WorkerMetricsURL is the first worker's /metrics; WorkerURLs holds each worker's
	// base URL (SECKILL_WORKER_METRICS_ADDR: /metrics, /healthz, /readyz).
	WorkerMetricsURL string
	WorkerURLs       []string
	// Redis is the server of a single-server stack (nil on a Cluster or Sentinel).
	Redis *RedisServer
	MySQL *MySQLDB
	// API and Worker are the first of APIs and Workers.
	API, Worker   *Process
	APIs, Workers []*Process
	Env           []string
}

// StartStack starts Redis (with AOF on), a fresh database, the API and the worker,
// and waits until the API is ready. extraEnv adds or overrides variables.
func StartStack(t testing.TB, extraEnv ...string) *Stack {
	t.Helper()
	return StartStackOn(t, MySQL(t), extraEnv...)
}

// StartStackOn is StartStack on a given database (for example one on a private
// MariaDB server that the test freezes).
func StartStackOn(t testing.TB, db *MySQLDB, extraEnv ...string) *Stack {
	t.Helper()
	redis := StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	s := StartStackOnTopology(t, db, redis.Topology(), 1, 1, extraEnv...)
	s.Redis = redis
	return s
}

// Topology is the SECKILL_REDIS_* settings that put the service on one Redis: a
// server (RedisServer.Topology), a Cluster (Cluster.Topology) or a Sentinel set
// (SentinelSet.Topology). Settings of how to use it, such as
// SECKILL_REDIS_MIN_REPLICAS, go in a stack's extraEnv.
type Topology []string

// Topology returns the settings that put the service on this one server (and its user
// and TLS under a RedisSecurity).
func (s *RedisServer) Topology() Topology {
	return append(Topology{"SECKILL_REDIS_ADDR=" + s.Addr}, s.sec.env(false)...)
}

// StartStackOnTopology starts apis API processes and workers workers on the Redis of
// topo and on db, and waits until every API is ready. extraEnv adds or overrides
// variables.
func StartStackOnTopology(t testing.TB, db *MySQLDB, topo Topology, apis, workers int, extraEnv ...string) *Stack {
	t.Helper()
	if apis < 1 {
		t.Fatalf("a stack of %d APIs: it wants one at least (the first migrates the database)", apis)
	}
	s := &Stack{MySQL: db}
	s.Env = append(append(append(s.MySQL.Env(),
		"SECKILL_JWT_SECRET="+JWTSecret,
		"SECKILL_RATE_IP=0",
		"SECKILL_RATE_USER=0",
	), topo...), extraEnv...)
	for range apis {
		p, url, metrics := s.startAPI(t)
		s.APIs, s.URLs, s.MetricsURLs = append(s.APIs, p), append(s.URLs, url), append(s.MetricsURLs, metrics)
	}
	for i, p := range s.APIs {
		waitReady(t, s.URLs[i], p) // the first has migrated the database by then
	}
	s.URL, s.API, s.MetricsURL = s.URLs[0], s.APIs[0], s.MetricsURLs[0]
	for range workers {
		s.StartWorker(t)
	}
	return s
}

// StartWorker starts one more worker on the stack's settings, with extraEnv added or
// overriding them; the first worker of the stack becomes Worker.
func (s *Stack) StartWorker(t testing.TB, extraEnv ...string) *Process {
	t.Helper()
	_, worker := Binaries(t)
	metrics := "127.0.0.1:" + strconv.Itoa(freePort(t))
	env := append(append(append([]string{}, s.Env...), "SECKILL_WORKER_METRICS_ADDR="+metrics), extraEnv...)
	p := StartProcess(t, fmt.Sprintf("worker%d", len(s.Workers)+1), worker, env)
	s.Workers, s.WorkerURLs = append(s.Workers, p), append(s.WorkerURLs, "http://"+metrics)
	if len(s.Workers) == 1 {
		s.Worker, s.WorkerMetricsURL = p, "http://"+metrics+"/metrics"
	}
	return p
}

// StartStackOnRedis is StartStackOnTopology (the name the e2e tests use).
func StartStackOnRedis(t testing.TB, db *MySQLDB, redisEnv []string, apis, workers int, extraEnv ...string) *Stack {
	t.Helper()
	return StartStackOnTopology(t, db, redisEnv, apis, workers, extraEnv...)
}

// StartAPI starts one more API process on another port, sharing Redis and MySQL, and
// waits until it is ready.
func (s *Stack) StartAPI(t testing.TB) (*Process, string) {
	t.Helper()
	p, url, _ := s.startAPI(t)
	waitReady(t, url, p)
	return p, url
}

// startAPI starts an API process of the stack's settings, its HTTP and metrics
// addresses on free ports, without waiting for it: it returns its base URL and its
// /metrics.
func (s *Stack) startAPI(t testing.TB) (p *Process, url, metrics string) {
	t.Helper()
	api, _ := Binaries(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	ops := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	p = StartProcess(t, "api "+addr, api, append(append([]string{}, s.Env...), "SECKILL_HTTP_ADDR="+addr, "SECKILL_METRICS_ADDR="+ops))
	return p, "http://" + addr, "http://" + ops + "/metrics"
}

// WaitReady waits until the stack's API answers /readyz with 200.
func (s *Stack) WaitReady(t testing.TB) { waitReady(t, s.URL, s.API) }

func waitReady(t testing.TB, url string, p *Process) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if exited, code := p.Exited(); exited {
			t.Fatalf("%s exited with %d:\n%s", p.name, code, p.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not ready at %s:\n%s", p.name, url, p.Output())
}

// Token returns a valid token for the decimal buyer userID of the stacks tests start.
// Any goroutine may call it: a token it cannot sign fails the test with t.Error and is
// "", which the API refuses.
func Token(t testing.TB, userID int64, admin bool) string {
	t.Helper()
	return TokenOf(t, buyer.Of(userID), admin)
}

// TokenOf returns a valid token whose subject is the buyer (any subject), for the stacks
// tests start. Any goroutine may call it, as Token.
func TokenOf(t testing.TB, b buyer.ID, admin bool) string {
	t.Helper()
	tok, err := auth.Sign(JWTSecret, b, admin, time.Hour, time.Now())
	if err != nil {
		t.Error(err)
	}
	return tok
}

// ServiceToken returns a valid token of role service (a shop's back end) for the
// stacks tests start. Any goroutine may call it, as Token.
func ServiceToken(t testing.TB, id int64) string {
	t.Helper()
	tok, err := auth.SignRole(JWTSecret, buyer.Of(id), auth.RoleService, time.Hour, time.Now())
	if err != nil {
		t.Error(err)
	}
	return tok
}

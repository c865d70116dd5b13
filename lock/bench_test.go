package lock

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"seckill/internal/testutil"
)

// The benchmarks compare this package with github.com/bsm/redislock and
// github.com/go-redsync/redsync (one server) doing the same thing against one
// private redis-server: obtain a lock with a 10s TTL, release it.
// Uncontended: one goroutine. Contended: 16 goroutines on one key, each
// retrying every 1ms, or every 100ms, while the lock is busy.
//
// The libraries take turns of a few hundred acquisitions each, so that the
// noise of a shared machine falls on all of them alike. For each library they
// report acquisitions per second, the commands its client sent per acquisition
// (the polling), and for the contended runs the 99th percentile of the time
// one Obtain waited. ns/op is per turn of all three and means little.
//
//	go test -run '^$' -bench . -benchtime 2s ./lock/

// locker is what a benchmark needs of a library: take the lock, retrying
// every retry while it is busy, and return its release.
type locker func(ctx context.Context, key string, retry time.Duration) (release func() error, err error)

func benchLockers(b *testing.B) (map[string]func(rdb *redis.Client) locker, *testutil.RedisServer) {
	srv := testutil.StartRedis(b)
	const ttl = 10 * time.Second
	return map[string]func(rdb *redis.Client) locker{
		"lock": func(rdb *redis.Client) locker {
			c := New(rdb)
			b.Cleanup(func() { _ = c.Close() })
			return func(ctx context.Context, key string, retry time.Duration) (func() error, error) {
				l, err := c.Obtain(ctx, key, ttl, &Options{Retry: LinearBackoff(retry)})
				if err != nil {
					return nil, err
				}
				return func() error { return l.Release(ctx) }, nil
			}
		},
		"redislock": func(rdb *redis.Client) locker {
			c := redislock.New(rdb)
			return func(ctx context.Context, key string, retry time.Duration) (func() error, error) {
				l, err := c.Obtain(ctx, key, ttl, &redislock.Options{RetryStrategy: redislock.LinearBackoff(retry)})
				if err != nil {
					return nil, err
				}
				return func() error { return l.Release(ctx) }, nil
			}
		},
		"redsync": func(rdb *redis.Client) locker {
			rs := redsync.New(redsyncgoredis.NewPool(rdb))
			return func(ctx context.Context, key string, retry time.Duration) (func() error, error) {
				m := rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1<<30), redsync.WithRetryDelay(retry))
				if err := m.LockContext(ctx); err != nil {
					return nil, err
				}
				return func() error { _, err := m.UnlockContext(ctx); return err }, nil
			}
		},
	}, srv
}

var libraries = []string{"lock", "redislock", "redsync"}

// countCommands counts the commands a client sends.
type countCommands struct{ n *atomic.Int64 }

func (h countCommands) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countCommands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h countCommands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// library is one contender of a comparison.
type library struct {
	name     string
	lockers  []locker // one per goroutine, or one for all
	key      string
	commands *atomic.Int64
	elapsed  time.Duration
	taken    int
	waits    []time.Duration
}

// compare runs b.N turns in which each library takes the lock batch times
// with the given number of goroutines, and reports per library. The
// goroutines share one client of each library, or with clientEach have one
// each, as separate replicas would.
func compare(b *testing.B, goroutines, batch int, retry time.Duration, clientEach bool) {
	lockers, srv := benchLockers(b)
	var libs []*library
	for _, name := range libraries {
		var commands atomic.Int64
		lib := &library{name: name, key: "bench:" + name, commands: &commands}
		for range goroutines {
			if clientEach || len(lib.lockers) == 0 {
				rdb := srv.Client(b)
				rdb.AddHook(countCommands{&commands})
				lib.lockers = append(lib.lockers, lockers[name](rdb))
			}
		}
		libs = append(libs, lib)
	}
	ctx := context.Background()
	for _, lib := range libs {
		lib.commands.Store(0)
	}
	for b.Loop() {
		for _, lib := range libs {
			lib.turn(b, ctx, goroutines, batch, retry)
		}
	}
	for _, lib := range libs {
		b.ReportMetric(float64(lib.taken)/lib.elapsed.Seconds(), lib.name+"-acq/s")
		b.ReportMetric(float64(lib.commands.Load())/float64(lib.taken), lib.name+"-cmd/acq")
		if goroutines > 1 {
			slices.Sort(lib.waits)
			p99 := lib.waits[len(lib.waits)*99/100]
			b.ReportMetric(float64(p99.Microseconds())/1000, lib.name+"-p99-wait-ms")
		}
	}
}

// turn takes the lock batch times with the goroutines and checks that no two
// goroutines hold it at once.
func (lib *library) turn(b *testing.B, ctx context.Context, goroutines, batch int, retry time.Duration) {
	var next, holders atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for g := range goroutines {
		lock := lib.lockers[g%len(lib.lockers)]
		wg.Go(func() {
			var waits []time.Duration
			defer func() {
				mu.Lock()
				lib.waits = append(lib.waits, waits...)
				mu.Unlock()
			}()
			for next.Add(1) <= int64(batch) {
				asked := time.Now()
				release, err := lock(ctx, lib.key, retry)
				if err != nil {
					b.Errorf("%s: obtain: %v", lib.name, err)
					return
				}
				waits = append(waits, time.Since(asked))
				if holders.Add(1) != 1 {
					b.Errorf("%s: two holders", lib.name)
				}
				holders.Add(-1)
				if err := release(); err != nil {
					b.Errorf("%s: release: %v", lib.name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	lib.elapsed += time.Since(start)
	lib.taken += batch
}

func BenchmarkUncontended(b *testing.B) { compare(b, 1, 500, time.Millisecond, false) }

func BenchmarkContended16Retry1ms(b *testing.B) { compare(b, 16, 500, time.Millisecond, false) }

func BenchmarkContended16Retry100ms(b *testing.B) { compare(b, 16, 500, 100*time.Millisecond, false) }

func BenchmarkContended16ClientsRetry1ms(b *testing.B) { compare(b, 16, 500, time.Millisecond, true) }

func BenchmarkContended16ClientsRetry100ms(b *testing.B) {
	compare(b, 16, 500, 100*time.Millisecond, true)
}

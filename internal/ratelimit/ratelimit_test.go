package ratelimit_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/config"
	"seckill/internal/ratelimit"
	"seckill/internal/testutil"
)

func TestLimiter(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	l := ratelimit.New(nil, "user", 5) // burst 10
	allowed := 0
	for i := 0; i < 20; i++ {
		if ok, _ := l.Allow(ctx, "a", now); ok {
			allowed++
		}
	}
	if allowed != 10 {
		t.Errorf("burst allowed %d, want 10", allowed)
	}
	ok, wait := l.Allow(ctx, "a", now)
	if ok || wait <= 0 || wait > 200*time.Millisecond {
		t.Errorf("over the limit: ok=%v wait=%v, want refused with a wait up to 200ms", ok, wait)
	}
	if ok, _ := l.Allow(ctx, "b", now); !ok {
		t.Error("another key must not share the bucket")
	}
	if ok, _ := l.Allow(ctx, "a", now.Add(time.Second)); !ok {
		t.Error("a second later the key must be allowed again")
	}
	off := ratelimit.New(nil, "user", 0)
	for i := 0; i < 1000; i++ {
		if ok, _ := off.Allow(ctx, "a", now); !ok {
			t.Fatal("limit 0 must allow everything")
		}
	}
}

// Three instances on one Redis share one allowance per key: a key's requests spread
// over them get the burst once, not three times, and the limit refuses with a wait.
func TestSharedAcrossInstances(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	ctx := context.Background()
	tests := []struct {
		name      string
		perSecond float64
		instances int
		want      int // allowed at once: the burst, 2 x rate
	}{
		{"one instance", 5, 1, 10},
		{"three instances", 5, 3, 10},
		{"a fractional rate", 2.5, 3, 5},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ls []*ratelimit.Limiter
			for range tc.instances {
				ls = append(ls, ratelimit.New(rdb, "user", tc.perSecond))
			}
			key := string(rune('a' + i))
			now := time.Now()
			var allowed atomic.Int64
			var wg sync.WaitGroup
			for j := range 60 { // concurrent requests, round robin over the instances
				wg.Add(1)
				go func() {
					defer wg.Done()
					if ok, _ := ls[j%len(ls)].Allow(ctx, key, now); ok {
						allowed.Add(1)
					}
				}()
			}
			wg.Wait()
			if got := int(allowed.Load()); got != tc.want {
				t.Errorf("allowed %d of 60 at once over %d instances, want %d", got, tc.instances, tc.want)
			}
			ok, wait := ls[0].Allow(ctx, key, now)
			if ok || wait <= 0 || wait > time.Second {
				t.Errorf("over the limit: ok=%v wait=%v, want a refusal with a wait up to 1s", ok, wait)
			}
		})
	}
}

// Over a window the instances together allow one allowance: rate x window + burst.
func TestSharedOverTime(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	ctx := context.Background()
	a, b := ratelimit.New(rdb, "user", 20), ratelimit.New(rdb, "user", 20)
	start := time.Now()
	allowed := 0
	for i := 0; time.Since(start) < 1500*time.Millisecond; i++ {
		l := a
		if i%2 == 1 {
			l = b
		}
		if ok, _ := l.Allow(ctx, "u", time.Now()); ok {
			allowed++
		}
		time.Sleep(2 * time.Millisecond)
	}
	window := time.Since(start).Seconds()
	most := int(20*window) + 40 + 1
	if allowed > most || allowed < 40 {
		t.Errorf("allowed %d in %.2fs over two instances, want between the burst 40 and %d (per-instance limits would allow up to %d)",
			allowed, window, most, 2*most)
	}
}

// A Redis that does not answer leaves the limit to each process, instead of failing
// every request, and is not asked again for a second: the requests meanwhile cost no
// dial. Once it answers again, the limit is shared again.
func TestSharedFailsOpenToLocal(t *testing.T) {
	srv := testutil.StartRedis(t)
	var dials atomic.Int64
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 50 * time.Millisecond, MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}})
	t.Cleanup(func() { _ = rdb.Close() })
	l := ratelimit.New(rdb, "ip", 5)
	srv.Kill()
	now := time.Now()
	allowed := 0
	var failed int64 // dials of the first request that asked the dead Redis
	for range 20 {
		if ok, _ := l.Allow(context.Background(), "1.2.3.4", now); ok {
			allowed++
		}
		if failed == 0 {
			failed = dials.Load()
		}
	}
	if allowed != 10 {
		t.Errorf("with Redis down: allowed %d, want the local burst 10", allowed)
	}
	if got := dials.Load(); failed == 0 || got != failed {
		t.Errorf("with Redis down: the first request dialed %d times, all 20 %d; want no dial after the first failure (a second in this process only)", failed, got)
	}

	srv.Start()
	later := now.Add(2 * time.Second) // the local bucket has 10 again; Redis has the full burst
	other := ratelimit.New(rdb, "ip", 5)
	for i := range 10 {
		if ok, _ := other.Allow(context.Background(), "1.2.3.4", later); !ok {
			t.Fatalf("another instance, request %d: refused within the burst", i)
		}
	}
	if ok, _ := l.Allow(context.Background(), "1.2.3.4", later); ok {
		t.Error("after Redis came back: the key's shared burst is spent on another instance, yet this one allowed it")
	}
}

// BenchmarkAllow is the cost of a limited request, 32 x GOMAXPROCS at once: in this
// process only;
// shared through a real Redis when the key's steady requests use leases (hot), when
// every request asks Redis (a new key each time: one script, on a plain client and on
// the auto-pipeliner the API uses), and when the local bucket refuses a key over its
// limit without asking Redis. Run with
// go test -bench Allow -run - ./internal/ratelimit
func BenchmarkAllow(b *testing.B) {
	rdb := testutil.StartRedis(b).Client(b)
	ap, err := config.RedisPipelined(rdb)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ap.Close() })
	var fresh atomic.Int64
	newKey := func(int) string { return "k" + strconv.FormatInt(fresh.Add(1), 10) }
	hotKey := func(int) string { return "k" }
	over := ratelimit.New(rdb, "user", 5)
	for range 20 { // spend the key's burst, locally and in Redis
		over.Allow(context.Background(), "over", time.Now())
	}
	for _, bc := range []struct {
		name string
		l    *ratelimit.Limiter
		key  func(int) string
	}{
		{"local", ratelimit.New(nil, "user", 1e9), hotKey},
		{"shared-hot-key-leases", ratelimit.New(rdb, "user", 1e9), hotKey},
		{"shared-script-per-request", ratelimit.New(rdb, "user", 5), newKey},
		{"shared-script-per-request-autopipeline", ratelimit.New(ap, "user", 5), newKey},
		{"shared-refused-locally", over, func(int) string { return "over" }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			b.SetParallelism(32) // many requests at once, as in the API
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					bc.l.Allow(ctx, bc.key(i), time.Now())
				}
			})
		})
	}
}

// A key's steady requests take their allowance from Redis a tenth of a burst at a
// time: 100 requests at rate 100 (burst 200, leases of 20) cost 5 scripts, not 100.
func TestSharedLeases(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	ctx := context.Background()
	l := ratelimit.New(rdb, "user", 100)
	now := time.Now()
	for i := range 100 {
		if ok, _ := l.Allow(ctx, "k", now); !ok {
			t.Fatalf("request %d refused within the burst", i)
		}
	}
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, cmd := range []string{"evalsha", "eval"} {
		if _, rest, ok := strings.Cut(info, "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			_, failed, _ := strings.Cut(rest, "failed_calls=") // EVALSHA before the script is loaded
			f, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(failed, "\r", 2)[0]))
			calls += n - f
		}
	}
	if calls != 5 {
		t.Errorf("100 requests ran %d scripts in Redis (failed runs aside), want 5 (leases of 20)", calls)
	}
}

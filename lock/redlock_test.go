package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/testutil"
)

// stoppedMasterTimeout is the node timeout of the tests that stop masters: those are killed
// (refused at once) or paused (TestRedlockStalledMasterCostsOnlyItsTimeout waits it).
const stoppedMasterTimeout = time.Second

// newTestRedlock starts five masters that keep their data across a SIGKILL,
// as Redlock requires, and a Redlock over them that waits nodeTimeout for each.
func newTestRedlock(t *testing.T, nodeTimeout time.Duration) (*Redlock, []*testutil.RedisServer) {
	t.Helper()
	var servers []*testutil.RedisServer
	var masters []redis.UniversalClient
	for range 5 {
		s := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
		servers = append(servers, s)
		masters = append(masters, redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialerRetries: 1}))
	}
	t.Cleanup(func() {
		for _, m := range masters {
			_ = m.Close()
		}
	})
	r := NewRedlock(masters, &RedlockOptions{NodeTimeout: nodeTimeout})
	t.Cleanup(func() { _ = r.Close() })
	return r, servers
}

func TestRedlockObtainRelease(t *testing.T) {
	// It checks what every master holds: on a loaded machine (the whole suite at once,
	// -race, appendfsync always) a healthy master has been seen to take over a second.
	r, servers := newTestRedlock(t, 5*time.Second)
	ctx := context.Background()

	ttl := 10 * time.Second
	before := time.Now()
	l, err := r.Obtain(ctx, "k", ttl, nil)
	if err != nil {
		t.Fatalf("obtain: %v", err)
	}
	after := time.Now()
	// The validity is the TTL less the time taking it took, less the drift.
	if end := l.Deadline(); end.Before(before.Add(ttl-drift(ttl))) || end.After(after.Add(ttl-drift(ttl))) {
		t.Errorf("validity ends %v after the attempt, want within TTL less drift (%v) of its start",
			end.Sub(after), ttl-drift(ttl))
	}
	// Obtain returns once a majority granted; the other masters' SETs finish in the
	// background within the node timeout (a tenth of the TTL), or time out on a
	// machine too loaded to answer in time, which a Redlock tolerates.
	holding := func() (n int) {
		for _, s := range servers {
			if s.Client(t).Get(ctx, "k").Val() == l.Token() {
				n++
			}
		}
		return n
	}
	n := holding()
	for wait := time.Now().Add(ttl / 10); n < len(servers) && time.Now().Before(wait); n = holding() {
		time.Sleep(20 * time.Millisecond)
	}
	if n < r.quorum {
		t.Errorf("%d of %d masters hold the token, want at least a majority of %d", n, len(servers), r.quorum)
	} else if n < len(servers) {
		t.Logf("%d of %d masters hold the token (the others did not answer within the node timeout)", n, len(servers))
	}
	if _, err := r.Obtain(ctx, "k", 10*time.Second, nil); !errors.Is(err, ErrNotObtained) {
		t.Errorf("second obtain: got %v, want ErrNotObtained", err)
	}
	if err := l.Extend(ctx, 20*time.Second); err != nil {
		t.Errorf("extend: %v", err)
	}
	if err := r.nodes[0].rdb.Del(ctx, "k").Err(); err != nil {
		t.Fatalf("del: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release with one master refusing: %v", err)
	}
	for i, s := range servers {
		if n := s.Client(t).Exists(ctx, "k").Val(); n != 0 {
			t.Errorf("master %d still holds the key", i)
		}
	}
	stranger := newLock(ctx, r.newHold(), "k", "stranger", 0, time.Minute, time.Now())
	if err := stranger.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Errorf("release by a stranger: got %v, want ErrNotHeld", err)
	}
}

func TestRedlockSurvivesMasterLoss(t *testing.T) {
	r, servers := newTestRedlock(t, stoppedMasterTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Four goroutines contend for the lock all along, while masters die. A
	// master killed while it had the lock keeps it for the TTL after its
	// restart (appendfsync always), so each phase lasts longer than the TTL.
	const ttl, phaseTime = 300 * time.Millisecond, time.Second
	var holders, max, acquired atomic.Int64
	var lastFence atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				octx, cancel := context.WithTimeout(ctx, 3*time.Second)
				l, err := r.Obtain(octx, "k", ttl, &Options{Retry: ExponentialBackoff(time.Millisecond, 50*time.Millisecond)})
				cancel()
				if err != nil {
					continue // masters dying under us; the phase checks progress
				}
				n := holders.Add(1)
				for m := max.Load(); n > m && !max.CompareAndSwap(m, n); m = max.Load() {
				}
				if prev := lastFence.Swap(l.Fence()); prev >= l.Fence() {
					t.Errorf("fence %d after %d", l.Fence(), prev)
				}
				// The lock is held a moment: the contention under test.
				time.Sleep(time.Millisecond)
				holders.Add(-1)
				acquired.Add(1)
				_ = l.Release(ctx) // may fail on a master that just died
			}
		})
	}
	phase := func(name string, kill ...int) {
		for _, i := range kill {
			servers[i].Kill()
		}
		before := acquired.Load()
		// A phase of the crowd, of a fixed length: its acquisitions are what is counted.
		time.Sleep(phaseTime)
		if got := acquired.Load() - before; got == 0 {
			t.Errorf("%s: no acquisition in %v", name, phaseTime)
		} else {
			t.Logf("%s: %d acquisitions in %v", name, got, phaseTime)
		}
		for _, i := range kill {
			servers[i].Start()
		}
	}
	phase("all up")
	phase("one master killed", 0)
	phase("two masters killed", 1, 2)
	phase("all back")
	close(stop)
	wg.Wait()
	if got := max.Load(); got != 1 {
		t.Errorf("at most %d holders at once, want 1", got)
	}

	// Three of five gone: no majority, and the attempt says so.
	for _, i := range []int{0, 2, 4} {
		servers[i].Kill()
	}
	_, err := r.Obtain(ctx, "k", ttl, &Options{Retry: LimitWait(LinearBackoff(50*time.Millisecond), 300*time.Millisecond)})
	if !errors.Is(err, ErrNotObtained) || ctx.Err() != nil {
		t.Fatalf("obtain with three masters down: got %v, want ErrNotObtained", err)
	}
	t.Logf("with three masters down: %v", err)
	for i, s := range servers {
		if i%2 == 1 {
			if n := s.Client(t).Exists(ctx, "k").Val(); n != 0 {
				t.Errorf("master %d keeps the key of a failed attempt", i)
			}
		}
	}
}

func TestRedlockFencesGrowAcrossMasterLoss(t *testing.T) {
	r, servers := newTestRedlock(t, stoppedMasterTimeout)
	ctx := context.Background()

	var last int64
	obtain := func(step string) {
		t.Helper()
		l, err := r.Obtain(ctx, "k", 5*time.Second, &Options{Retry: LimitWait(LinearBackoff(10*time.Millisecond), 2*time.Second)})
		if err != nil {
			t.Fatalf("%s: obtain: %v", step, err)
		}
		if l.Fence() <= last {
			t.Errorf("%s: fence %d after %d", step, l.Fence(), last)
		}
		last = l.Fence()
		if err := l.Release(ctx); err != nil {
			t.Fatalf("%s: release: %v", step, err)
		}
	}
	// Every majority shares a master with every other: rotate which two
	// masters are down, so that each grant comes from a different majority.
	for round := range 10 {
		down := []int{round % 5, (round + 2) % 5}
		for _, i := range down {
			servers[i].Kill()
		}
		obtain("masters down " + string(rune('0'+down[0])) + "," + string(rune('0'+down[1])))
		for _, i := range down {
			servers[i].Start()
		}
	}
	t.Logf("last fence %d after 10 rotations", last)
}

func TestRedlockStalledMasterCostsOnlyItsTimeout(t *testing.T) {
	r, servers := newTestRedlock(t, stoppedMasterTimeout)
	ctx := context.Background()
	servers[3].Pause()
	defer servers[3].Resume()
	start := time.Now()
	l, err := r.Obtain(ctx, "k", 10*time.Second, nil)
	if err != nil {
		t.Fatalf("obtain with a stalled master: %v", err)
	}
	t.Logf("obtained in %v with a stalled master", time.Since(start))
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
}

package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/testutil"
)

func newTestClient(t *testing.T) (*Client, *testutil.RedisServer) {
	t.Helper()
	srv := testutil.StartRedis(t)
	return clientOf(t, srv), srv
}

// clientOf returns another Client of srv, as another replica would have,
// closed at the end of the test.
func clientOf(t *testing.T, srv *testutil.RedisServer) *Client {
	c := New(srv.Client(t))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestObtainRelease(t *testing.T) {
	c, srv := newTestClient(t)
	ctx := context.Background()
	rdb := srv.Client(t)

	l, err := c.Obtain(ctx, "k", time.Minute, nil)
	if err != nil {
		t.Fatalf("obtain: %v", err)
	}
	if got := rdb.Get(ctx, "k").Val(); got != l.Token() {
		t.Errorf("stored value %q, want the token %q", got, l.Token())
	}
	if pttl := rdb.PTTL(ctx, "k").Val(); pttl <= 0 || pttl > time.Minute {
		t.Errorf("PTTL %v, want in (0, 1m]", pttl)
	}
	if l.Fence() != 1 {
		t.Errorf("first fence %d, want 1", l.Fence())
	}
	if _, err := c.Obtain(ctx, "k", time.Minute, nil); !errors.Is(err, ErrNotObtained) {
		t.Errorf("second obtain: got %v, want ErrNotObtained", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if n := rdb.Exists(ctx, "k").Val(); n != 0 {
		t.Errorf("key still exists after release")
	}
	if err := l.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Errorf("second release: got %v, want ErrNotHeld", err)
	}
	l2, err := c.Obtain(ctx, "k", time.Minute, nil)
	if err != nil {
		t.Fatalf("obtain after release: %v", err)
	}
	if l2.Fence() != 2 {
		t.Errorf("second fence %d, want 2", l2.Fence())
	}
}

func TestObtainWithOwnTokenIsIdempotent(t *testing.T) {
	c, _ := newTestClient(t)
	ctx := context.Background()
	opts := &Options{Token: "mine"}
	l1, err := c.Obtain(ctx, "k", time.Minute, opts)
	if err != nil {
		t.Fatalf("obtain: %v", err)
	}
	// A retry after a lost reply: the key already holds our token.
	l2, err := c.Obtain(ctx, "k", time.Minute, opts)
	if err != nil {
		t.Fatalf("obtain again with the same token: %v", err)
	}
	if l2.Fence() <= l1.Fence() {
		t.Errorf("fence %d after %d, want it to grow", l2.Fence(), l1.Fence())
	}
	if _, err := c.Obtain(ctx, "k", time.Minute, &Options{Token: "other"}); !errors.Is(err, ErrNotObtained) {
		t.Errorf("obtain with another token: got %v, want ErrNotObtained", err)
	}
}

func TestObtainTimeoutIsNotObtainedAndDeadline(t *testing.T) {
	c, _ := newTestClient(t)
	ctx := context.Background()
	if _, err := c.Obtain(ctx, "k", time.Minute, nil); err != nil {
		t.Fatalf("obtain: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err := c.Obtain(wctx, "k", time.Minute, &Options{Retry: LinearBackoff(20 * time.Millisecond)})
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want ErrNotObtained and context.DeadlineExceeded", err)
	}

	// A busy lock whose strategy gives up is not a timeout.
	_, err = c.Obtain(ctx, "k", time.Minute, &Options{Retry: LimitWait(LinearBackoff(10*time.Millisecond), 50*time.Millisecond)})
	if !errors.Is(err, ErrNotObtained) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want ErrNotObtained alone", err)
	}
}

func TestExpiryAndExtend(t *testing.T) {
	c, srv := newTestClient(t)
	ctx := context.Background()
	rdb := srv.Client(t)

	l, err := c.Obtain(ctx, "k", 100*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("obtain: %v", err)
	}
	if err := l.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("extend: %v", err)
	}
	if pttl := rdb.PTTL(ctx, "k").Val(); pttl < 30*time.Second {
		t.Errorf("PTTL after extend %v, want about 1m", pttl)
	}
	if until := time.Until(l.Deadline()); until < 30*time.Second || until > time.Minute {
		t.Errorf("deadline in %v, want about 1m", until)
	}
	if err := l.Extend(ctx, 150*time.Millisecond); err != nil {
		t.Fatalf("extend: %v", err)
	}
	// The extended lease runs out: the behaviour under test.
	time.Sleep(300 * time.Millisecond)
	if n := rdb.Exists(ctx, "k").Val(); n != 0 {
		t.Fatalf("key outlived its TTL")
	}
	// Someone else takes the expired lock; the old holder can do nothing to it.
	other, err := c.Obtain(ctx, "k", time.Minute, nil)
	if err != nil {
		t.Fatalf("obtain the expired lock: %v", err)
	}
	if err := l.Extend(ctx, time.Minute); !errors.Is(err, ErrLost) {
		t.Errorf("extend after the deadline: got %v, want ErrLost", err)
	}
	if err := l.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Errorf("release after expiry: got %v, want ErrNotHeld", err)
	}
	if got := rdb.Get(ctx, "k").Val(); got != other.Token() {
		t.Errorf("key holds %q, want the new owner's token", got)
	}
}

func TestNonOwnerRefused(t *testing.T) {
	c, srv := newTestClient(t)
	ctx := context.Background()
	rdb := srv.Client(t)

	l, err := c.Obtain(ctx, "k", time.Minute, nil)
	if err != nil {
		t.Fatalf("obtain: %v", err)
	}
	stranger := c.Adopt("k", NewToken(), time.Minute)
	if err := stranger.Extend(ctx, time.Hour); !errors.Is(err, ErrNotHeld) {
		t.Errorf("extend by a stranger: got %v, want ErrNotHeld", err)
	}
	if err := stranger.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Errorf("release by a stranger: got %v, want ErrNotHeld", err)
	}
	if got := rdb.Get(ctx, "k").Val(); got != l.Token() {
		t.Errorf("key holds %q, want the owner's token", got)
	}
	if pttl := rdb.PTTL(ctx, "k").Val(); pttl > time.Minute {
		t.Errorf("PTTL %v: the stranger extended the lock", pttl)
	}
	// A refused renewal loses the stranger's Lock for good.
	if cause := context.Cause(stranger.Context()); !errors.Is(cause, ErrLost) {
		t.Errorf("stranger's context cause %v, want ErrLost", cause)
	}
}

func TestContendedNeverTwoHolders(t *testing.T) {
	c, srv := newTestClient(t)
	// Half the goroutines share the Client, half have their own, so that
	// wake-ups cross connections as they do between replicas.
	clients := []*Client{c, clientOf(t, srv), clientOf(t, srv), clientOf(t, srv)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const goroutines, rounds = 100, 5
	var holders, max, done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			cl := clients[g%len(clients)]
			for range rounds {
				l, err := cl.Obtain(ctx, "hot", 5*time.Second, &Options{Retry: ExponentialBackoff(time.Millisecond, 50*time.Millisecond)})
				if err != nil {
					errs <- err
					return
				}
				n := holders.Add(1)
				for m := max.Load(); n > m && !max.CompareAndSwap(m, n); m = max.Load() {
				}
				// The lock is held a moment: the contention under test.
				time.Sleep(50 * time.Microsecond)
				holders.Add(-1)
				if err := l.Release(ctx); err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("goroutine: %v", err)
	}
	if got := max.Load(); got != 1 {
		t.Errorf("at most %d holders at once, want 1", got)
	}
	if got := done.Load(); got != goroutines*rounds {
		t.Errorf("%d acquisitions finished, want %d", got, goroutines*rounds)
	}
}

func TestWaiterWokenByRelease(t *testing.T) {
	c, srv := newTestClient(t)
	ctx := context.Background()
	l, err := c.Obtain(ctx, "k", time.Minute, nil)
	if err != nil {
		t.Fatalf("obtain: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		// The backoff is far longer than the test: only the release message
		// can wake the waiter in time.
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := c.Obtain(wctx, "k", time.Minute, &Options{Retry: LinearBackoff(time.Hour)})
		got <- err
	}()
	waitQueued(t, c, "k", 1)
	// Released through another Client, as by another replica: only the
	// pub/sub message can wake the waiter.
	other := clientOf(t, srv)
	if err := other.Adopt("k", l.Token(), time.Minute).Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
}

func TestAdoptAndWaitRelease(t *testing.T) {
	c, srv := newTestClient(t)
	ctx := context.Background()
	rdb := srv.Client(t)
	token := NewToken()
	if ok := rdb.SetNX(ctx, "k", token, time.Minute).Val(); !ok {
		t.Fatalf("SET NX failed")
	}
	l := c.Adopt("k", token, time.Minute)
	woken := make(chan error, 2)
	for range 2 {
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			woken <- c.WaitRelease(wctx, "k")
		}()
	}
	waitSubscribed(t, c, "k", 2)
	if err := l.Extend(ctx, 2*time.Minute); err != nil {
		t.Fatalf("extend: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	for range 2 {
		if err := <-woken; err != nil {
			t.Fatalf("WaitRelease: %v", err)
		}
	}

	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := c.WaitRelease(wctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitRelease with no release: got %v, want context.DeadlineExceeded", err)
	}
}

// A release publishes only when a waiter is listed: none for the lock nobody
// waits for, one for a WaitRelease or an Obtain of another Client, which wakes at
// the release, long before its deadline (an Obtain is listed by its first
// attempt, before it sleeps its backoff of a minute, also when its Client is
// subscribed to the key already and so does not try again at once). The same for a
// lock from Adopt and one from Obtain, released alone or with ReleaseAll.
func TestReleaseTellsListedWaitersOnly(t *testing.T) {
	c, srv := newTestClient(t)
	other := clientOf(t, srv)
	ctx := context.Background()
	rdb := srv.Client(t)
	for _, tc := range []struct {
		name    string
		obtain  bool   // the lock from Obtain, else Adopt
		waiter  string // "", "WaitRelease" or "Obtain": how another Client waits
		all     bool   // ReleaseAll, else Release
		publish int
		// subscribed: the waiter's Client still listens to the key's channel from an
		// earlier wait, whose listing has lapsed
		subscribed bool
	}{
		{"Release, nobody waits", false, "", false, 0, false},
		{"ReleaseAll, nobody waits", false, "", true, 0, false},
		{"Release, a waiter", false, "WaitRelease", false, 1, false},
		{"ReleaseAll, a waiter", false, "WaitRelease", true, 1, false},
		{"obtained, Release, nobody waits", true, "", false, 0, false},
		{"obtained, ReleaseAll, a waiter", true, "WaitRelease", true, 1, false},
		{"obtained, Release, an Obtain waits", true, "Obtain", false, 1, false},
		{"adopted, ReleaseAll, an Obtain waits", false, "Obtain", true, 1, false},
		{"adopted, Release, an Obtain waits, subscribed already", false, "Obtain", false, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "seckill:{act:9}:lock:" + strings.ReplaceAll(tc.name, " ", "")
			var l *Lock
			if tc.obtain {
				var err error
				if l, err = c.Obtain(ctx, key, time.Minute, nil); err != nil {
					t.Fatal(err)
				}
			} else {
				l = adoptKey(t, c, rdb, key)
			}
			if tc.subscribed {
				sctx, cancel := context.WithTimeout(ctx, time.Millisecond)
				_ = other.WaitRelease(sctx, key)
				cancel()
				// The listing lapses and the channel lingers: the behaviour under test.
				time.Sleep(listingSlack + 50*time.Millisecond)
			}
			woken := make(chan error, 1)
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			switch tc.waiter {
			case "WaitRelease":
				go func() { woken <- other.WaitRelease(wctx, key) }()
			case "Obtain":
				go func() {
					got, err := other.Obtain(wctx, key, time.Minute, &Options{Retry: LinearBackoff(time.Minute)})
					if err == nil {
						err = got.Release(ctx)
					}
					woken <- err
				}()
			}
			if tc.waiter != "" {
				waitSubscribed(t, other, key, 1)
			}
			if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			var err error
			if tc.all {
				err = c.ReleaseAll(ctx, l)
			} else {
				err = l.Release(ctx)
			}
			if err != nil {
				t.Fatalf("release: %v", err)
			}
			if tc.waiter != "Obtain" { // an Obtain waiter takes it at once
				if n := rdb.Exists(ctx, key).Val(); n != 0 {
					t.Errorf("the key is still there after the release")
				}
			}
			if tc.waiter != "" {
				if err := <-woken; err != nil {
					t.Errorf("the waiter of another Client: %v (not woken by the release)", err)
				}
			}
			if n := commandCalls(t, rdb, "publish"); n != tc.publish {
				t.Errorf("%d PUBLISH, want %d", n, tc.publish)
			}
		})
	}
}

func TestOnePubSubConnectionPerClient(t *testing.T) {
	c, srv := newTestClient(t)
	c.hub.linger = 100 * time.Millisecond
	ctx := context.Background()
	rdb := srv.Client(t)
	keys := []string{"a", "b", "c"}
	var held []*Lock
	for _, k := range keys {
		l, err := c.Obtain(ctx, k, time.Minute, nil)
		if err != nil {
			t.Fatalf("obtain: %v", err)
		}
		held = append(held, l)
	}
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			l, err := c.Obtain(ctx, keys[i%len(keys)], time.Minute, &Options{Retry: LinearBackoff(time.Hour)})
			if err != nil {
				t.Errorf("waiter: %v", err)
				return
			}
			if err := l.Release(ctx); err != nil {
				t.Errorf("waiter release: %v", err)
			}
		})
	}
	for _, k := range keys {
		waitQueued(t, c, k, 10)
	}
	if n := watches(c, "a"); n != 1 {
		t.Errorf("%d watches of one key, want 1 for the queue of waiters", n)
	}
	conns, err := rdb.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	if n := countLines(conns); n != 1 {
		t.Errorf("%d pub/sub connections for 30 waiters, want 1:\n%s", n, conns)
	}
	// Each release hands the lock to one waiter, which releases it in turn.
	for _, l := range held {
		if err := l.Release(ctx); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	wg.Wait()
	// The last waiter gone, the channels are unsubscribed after the linger.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		chans := rdb.PubSubChannels(ctx, "*").Val()
		if len(chans) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still subscribed to %v with no waiter", chans)
		}
	}
}

func countLines(s string) int {
	n := 0
	for _, line := range splitLines(s) {
		if line != "" {
			n++
		}
	}
	return n
}

func splitLines(s string) []string {
	var lines []string
	start := 0
	for i := range len(s) {
		if s[i] == '\n' {
			lines = append(lines, s[start:i])
			start = i + 1
		}
	}
	return append(lines, s[start:])
}

// waitQueued waits until n waiters of c queue for key, and their
// subscription is active.
func waitQueued(t *testing.T, c *Client, key string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		c.waiters.mu.Lock()
		kw := c.waiters.m[key]
		ok := kw != nil && kw.members >= n
		c.waiters.mu.Unlock()
		if ok && subscribed(c, key, 1) {
			return
		}
	}
	t.Fatalf("no %d waiters queued for %s", n, key)
}

func watches(c *Client, key string) int {
	c.hub.mu.Lock()
	defer c.hub.mu.Unlock()
	if cw := c.hub.channels[ReleaseChannel(key)]; cw != nil {
		return len(cw.waiters)
	}
	return 0
}

func subscribed(c *Client, key string, n int) bool {
	c.hub.mu.Lock()
	defer c.hub.mu.Unlock()
	cw := c.hub.channels[ReleaseChannel(key)]
	return cw != nil && cw.isReady && len(cw.waiters) >= n
}

// waitSubscribed waits until n watches of c wait for key on an active
// subscription.
func waitSubscribed(t *testing.T, c *Client, key string, n int) {
	t.Helper()
	channel := ReleaseChannel(key)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		c.hub.mu.Lock()
		cw := c.hub.channels[channel]
		ok := cw != nil && cw.isReady && len(cw.waiters) >= n
		c.hub.mu.Unlock()
		if ok {
			return
		}
	}
	t.Fatalf("no %d waiters subscribed to %s", n, channel)
}

// ReleaseAll releases the locks of one hash slot with one script and tells
// their waiters, refuses the locks it does not hold, and releases locks of
// other kinds one by one.
func TestReleaseAll(t *testing.T) {
	c, srv := newTestClient(t)
	ctx := context.Background()
	rdb := srv.Client(t)
	adopt := func(key string) *Lock { return adoptKey(t, c, rdb, key) }
	obtained, err := c.Obtain(ctx, "seckill:{act:1}:lock:1", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameSlot := adopt("seckill:{act:1}:lock:2")
	otherSlot := adopt("seckill:{act:2}:lock:1")
	untagged := adopt("job")
	released := adopt("seckill:{act:1}:lock:3")
	if err := released.Release(ctx); err != nil {
		t.Fatal(err)
	}
	stolen := adopt("seckill:{act:1}:lock:4")
	rdb.Set(ctx, stolen.Key(), "someone else", time.Minute)
	reentrant, err := c.ObtainReentrant(WithOwner(ctx), "seckill:{act:1}:lock:5", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}

	// Another Client, as another API process, waits for one of them.
	other := clientOf(t, srv)
	woken := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		woken <- other.WaitRelease(wctx, sameSlot.Key())
	}()
	waitSubscribed(t, other, sameSlot.Key(), 1)

	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	err = c.ReleaseAll(ctx, obtained, sameSlot, otherSlot, untagged, released, stolen, reentrant)
	if !errors.Is(err, ErrNotHeld) {
		t.Errorf("ReleaseAll: got %v, want ErrNotHeld for the released and the stolen lock", err)
	}
	for _, l := range []*Lock{released, stolen} {
		if err == nil || !strings.Contains(err.Error(), l.Key()) {
			t.Errorf("the error %v does not name %s", err, l.Key())
		}
	}
	for _, l := range []*Lock{obtained, sameSlot, otherSlot, untagged, reentrant} {
		if n := rdb.Exists(ctx, l.Key()).Val(); n != 0 {
			t.Errorf("%s still exists after ReleaseAll", l.Key())
		}
		if err := l.Release(ctx); !errors.Is(err, ErrNotHeld) {
			t.Errorf("Release of %s after ReleaseAll: got %v, want ErrNotHeld", l.Key(), err)
		}
	}
	if got := rdb.Get(ctx, stolen.Key()).Val(); got != "someone else" {
		t.Errorf("the stolen lock's key holds %q: ReleaseAll deleted another owner's lock", got)
	}
	if err := <-woken; err != nil {
		t.Errorf("the waiter of another Client: %v", err)
	}
	// One script for the slot act:1 (obtained, sameSlot, stolen), one for act:2,
	// one for job; the reentrant lock has its own release script.
	if n := scriptsRun(t, rdb); n != 4 {
		t.Errorf("%d scripts ran, want 4: one per slot (3) and the reentrant lock's", n)
	}
}

// adoptKey takes key for a minute as a script of one's own would, and adopts it.
func adoptKey(t *testing.T, c *Client, rdb *redis.Client, key string) *Lock {
	t.Helper()
	token := NewToken()
	if !rdb.SetNX(context.Background(), key, token, time.Minute).Val() {
		t.Fatalf("SET NX %s failed", key)
	}
	return c.Adopt(key, token, time.Minute)
}

// scriptsRun returns how many scripts Redis ran since CONFIG RESETSTAT: EVALSHA
// calls that found their script, and EVAL calls.
func scriptsRun(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	return commandCalls(t, rdb, "evalsha", "eval")
}

// commandCalls returns how many calls of the named commands Redis ran since
// CONFIG RESETSTAT, those that failed left out (inside scripts too).
func commandCalls(t *testing.T, rdb *redis.Client, commands ...string) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(rdb.Info(context.Background(), "commandstats").Val(), "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !slices.Contains(commands, strings.TrimPrefix(name, "cmdstat_")) {
			continue
		}
		var calls, usec, rejected, failed int
		var perCall float64
		if _, err := fmt.Sscanf(fields, "calls=%d,usec=%d,usec_per_call=%f,rejected_calls=%d,failed_calls=%d",
			&calls, &usec, &perCall, &rejected, &failed); err != nil {
			t.Fatalf("commandstats line %q: %v", line, err)
		}
		n += calls - failed
	}
	return n
}

package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
		t.Errorf("%d watches of one key, want 1 for the line of waiters", n)
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

// waitQueued waits until n waiters of c queue for key, and the line's
// subscription is active.
func waitQueued(t *testing.T, c *Client, key string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		c.lines.mu.Lock()
		ln := c.lines.m[key]
		ok := ln != nil && ln.members >= n
		c.lines.mu.Unlock()
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

package lock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The watchdog renews every TTL/3; these tests use a TTL of 600ms.
const (
	watchdogTTL   = 600 * time.Millisecond
	renewInterval = watchdogTTL / 3
	// slack covers scheduling on a busy machine under -race.
	slack = 150 * time.Millisecond
)

func TestWatchdogKeepsLockWhileHolderWorks(t *testing.T) {
	c, srv := newTestClient(t)
	ctx := context.Background()
	rdb := srv.Client(t)

	l, err := c.Obtain(ctx, "k", watchdogTTL, &Options{Watchdog: true})
	if err != nil {
		t.Fatalf("obtain: %v", err)
	}
	work := l.Context()
	// Work for five TTLs, checking that the lock is still ours.
	for end := time.Now().Add(5 * watchdogTTL); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if err := work.Err(); err != nil {
			t.Fatalf("holder's context ended while working: %v", context.Cause(work))
		}
		if got := rdb.Get(ctx, "k").Val(); got != l.Token() {
			t.Fatalf("key holds %q while working, want our token", got)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if cause := context.Cause(work); cause != context.Canceled {
		t.Errorf("context cause after release %v, want context.Canceled", cause)
	}

	// Nothing renews after release: put our token back with a short TTL and
	// watch it expire.
	if err := rdb.Set(ctx, "k", l.Token(), 3*renewInterval/2).Err(); err != nil {
		t.Fatalf("set: %v", err)
	}
	// Two TTLs pass with nothing renewing: the behaviour under test.
	time.Sleep(2 * watchdogTTL)
	if n := rdb.Exists(ctx, "k").Val(); n != 0 {
		t.Errorf("the key was renewed after release")
	}
}

func TestWatchdogCancelsContextWhenKeyDeleted(t *testing.T) {
	c, srv := newTestClient(t)
	ctx := context.Background()
	rdb := srv.Client(t)

	l, err := c.Obtain(ctx, "k", watchdogTTL, &Options{Watchdog: true})
	if err != nil {
		t.Fatalf("obtain: %v", err)
	}
	work := l.Context()
	// Half a renewal interval into the work, the key goes: the moment is the scenario.
	time.Sleep(renewInterval / 2)
	rdb.Del(ctx, "k")
	deleted := time.Now()
	waitDone(t, work, renewInterval+slack)
	t.Logf("context ended %v after the key was deleted", time.Since(deleted))
	if cause := context.Cause(work); !errors.Is(cause, ErrLost) {
		t.Errorf("context cause %v, want ErrLost", cause)
	}
	if err := l.Extend(ctx, watchdogTTL); !errors.Is(err, ErrLost) {
		t.Errorf("extend a lost lock: got %v, want ErrLost", err)
	}
}

func TestWatchdogCancelsContextWhenRedisRestarts(t *testing.T) {
	c, srv := newTestClient(t)
	ctx := context.Background()

	l, err := c.Obtain(ctx, "k", watchdogTTL, &Options{Watchdog: true})
	if err != nil {
		t.Fatalf("obtain: %v", err)
	}
	work := l.Context()
	srv.Kill() // without persistence, the restarted server has no key
	srv.Start()
	restarted := time.Now()
	waitDone(t, work, renewInterval+slack) // at once if the lease ran out while the server was down
	t.Logf("context ended %v after the restart", time.Since(restarted))
	if cause := context.Cause(work); !errors.Is(cause, ErrLost) {
		t.Errorf("context cause %v, want ErrLost", cause)
	}
}

func TestWatchdogLosesLockAtDeadlineWhenRedisStalls(t *testing.T) {
	c, srv := newTestClient(t)
	ctx := context.Background()

	l, err := c.Obtain(ctx, "k", watchdogTTL, &Options{Watchdog: true})
	if err != nil {
		t.Fatalf("obtain: %v", err)
	}
	work := l.Context()
	srv.Pause()
	defer srv.Resume()
	deadline := l.Deadline()
	waitDone(t, work, time.Until(deadline)+slack)
	if late := time.Since(deadline); late < 0 {
		t.Errorf("context ended %v before the lease deadline", -late)
	}
	if cause := context.Cause(work); !errors.Is(cause, ErrLost) {
		t.Errorf("context cause %v, want ErrLost", cause)
	}
}

func TestContextWithoutWatchdogEndsAtDeadline(t *testing.T) {
	c, _ := newTestClient(t)
	ctx := context.WithValue(context.Background(), ctxKey{}, "v")

	l, err := c.Obtain(ctx, "k", 200*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("obtain: %v", err)
	}
	work := l.Context()
	if got := work.Value(ctxKey{}); got != "v" {
		t.Errorf("context value %v, want the one Obtain was given", got)
	}
	if err := l.Extend(ctx, 400*time.Millisecond); err != nil {
		t.Fatalf("extend: %v", err)
	}
	deadline := l.Deadline()
	waitDone(t, work, time.Until(deadline)+slack)
	if early := time.Until(deadline); early > 0 {
		t.Errorf("context ended %v before the extended deadline", early)
	}
	if cause := context.Cause(work); !errors.Is(cause, ErrLost) {
		t.Errorf("context cause %v, want ErrLost", cause)
	}
}

type ctxKey struct{}

func waitDone(t *testing.T, ctx context.Context, within time.Duration) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(within):
		t.Fatalf("context still alive after %v", within)
	}
}

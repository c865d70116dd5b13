package lock

import (
	"context"
	"errors"
	"testing"
	"time"

	"seckill/internal/testutil"
)

func newTestClient(t *testing.T) (*Client, *testutil.RedisServer) {
	t.Helper()
	srv := testutil.StartRedis(t)
	c := New(srv.Client(t))
	t.Cleanup(func() { _ = c.Close() })
	return c, srv
}

func TestObtainRelease(t *testing.T) {
	c, srv := newTestClient(t)
	ctx := context.Background()
	rdb := srv.Client(t)

	l, err := c.Obtain(ctx, "k", time.Minute, nil)
	if err != nil {
		t.Fatalf("obtain: %v", err)
	}
	if got, _ := rdb.Get(ctx, "k").Result(); got != l.Token() {
		t.Errorf("stored value %q, want the token %q", got, l.Token())
	}
	if pttl := rdb.PTTL(ctx, "k").Val(); pttl <= 0 || pttl > time.Minute {
		t.Errorf("PTTL %v, want in (0, 1m]", pttl)
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
}

func TestWaiterWokenByRelease(t *testing.T) {
	c, _ := newTestClient(t)
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
	time.Sleep(100 * time.Millisecond)
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("waiter not woken by the release")
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
	woken := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		woken <- c.WaitRelease(wctx, "k")
	}()
	time.Sleep(100 * time.Millisecond)
	if err := l.Extend(ctx, 2*time.Minute); err != nil {
		t.Fatalf("extend: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := <-woken; err != nil {
		t.Fatalf("WaitRelease: %v", err)
	}
}

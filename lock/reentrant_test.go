package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestReentrantCounts(t *testing.T) {
	c, srv := newTestClient(t)
	rdb := srv.Client(t)
	ctx := WithOwner(context.Background())

	if _, err := c.ObtainReentrant(context.Background(), "r", time.Minute, nil); !errors.Is(err, ErrNoOwner) {
		t.Fatalf("obtain without an owner: got %v, want ErrNoOwner", err)
	}
	var holds []*Lock
	for depth := 1; depth <= 3; depth++ {
		l, err := c.ObtainReentrant(ctx, "r", time.Minute, nil)
		if err != nil {
			t.Fatalf("obtain at depth %d: %v", depth, err)
		}
		holds = append(holds, l)
		if n, _ := c.Holds(ctx, "r"); n != depth {
			t.Errorf("holds at depth %d: got %d", depth, n)
		}
		if l.Fence() != holds[0].Fence() {
			t.Errorf("fence at depth %d: got %d, want the first hold's %d", depth, l.Fence(), holds[0].Fence())
		}
	}
	stranger := WithOwner(context.Background())
	if _, err := c.ObtainReentrant(stranger, "r", time.Minute, nil); !errors.Is(err, ErrNotObtained) {
		t.Errorf("obtain by a stranger: got %v, want ErrNotObtained", err)
	}
	strangerLock := newLock(stranger, reentrant{c}, "r", mustOwner(t, stranger), 0, time.Minute, time.Now())
	if err := strangerLock.Release(stranger); !errors.Is(err, ErrNotHeld) {
		t.Errorf("release by a stranger: got %v, want ErrNotHeld", err)
	}

	for i := len(holds) - 1; i >= 0; i-- {
		if err := holds[i].Release(ctx); err != nil {
			t.Fatalf("release hold %d: %v", i+1, err)
		}
		if n, _ := c.Holds(ctx, "r"); n != i {
			t.Errorf("holds after releasing hold %d: got %d, want %d", i+1, n, i)
		}
		if exists := rdb.Exists(ctx, "r").Val() == 1; exists != (i > 0) {
			t.Errorf("after releasing hold %d the key exists: %v", i+1, exists)
		}
	}
	if err := holds[0].Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Errorf("release twice: got %v, want ErrNotHeld", err)
	}
	l, err := c.ObtainReentrant(stranger, "r", time.Minute, nil)
	if err != nil {
		t.Fatalf("obtain by the stranger after the last release: %v", err)
	}
	if l.Fence() <= holds[0].Fence() {
		t.Errorf("next owner's fence %d, want above %d", l.Fence(), holds[0].Fence())
	}
}

func TestReentrantRefreshesTTL(t *testing.T) {
	c, srv := newTestClient(t)
	rdb := srv.Client(t)
	ctx := WithOwner(context.Background())

	if _, err := c.ObtainReentrant(ctx, "r", time.Second, nil); err != nil {
		t.Fatalf("obtain: %v", err)
	}
	if _, err := c.ObtainReentrant(ctx, "r", time.Minute, nil); err != nil {
		t.Fatalf("obtain again: %v", err)
	}
	if pttl := rdb.PTTL(ctx, "r").Val(); pttl < 30*time.Second {
		t.Errorf("PTTL after re-entry with 1m: %v", pttl)
	}
	if _, err := c.ObtainReentrant(ctx, "r", time.Second, nil); err != nil {
		t.Fatalf("obtain a third time: %v", err)
	}
	if pttl := rdb.PTTL(ctx, "r").Val(); pttl < 30*time.Second {
		t.Errorf("PTTL after re-entry with a shorter TTL: %v, want it kept at about 1m", pttl)
	}
}

func TestReentrantNestedCallsWithConcurrentStrangers(t *testing.T) {
	c, _ := newTestClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const owners, rounds, depth = 8, 10, 3
	var holder atomic.Int64 // the owner holding the lock, 0 when free
	var wg sync.WaitGroup
	retry := &Options{Retry: ExponentialBackoff(time.Millisecond, 20*time.Millisecond)}

	// nested takes the lock, then calls itself with the lock's context, the
	// way a function holding the lock calls another that takes it too.
	var nested func(ctx context.Context, id int64, level int) error
	nested = func(ctx context.Context, id int64, level int) error {
		l, err := c.ObtainReentrant(ctx, "r", 5*time.Second, retry)
		if err != nil {
			return err
		}
		if level == 1 {
			if !holder.CompareAndSwap(0, id) {
				t.Errorf("owner %d took the lock held by owner %d", id, holder.Load())
			}
		} else if got := holder.Load(); got != id {
			t.Errorf("owner %d re-entered a lock held by %d", id, got)
		}
		if n, err := c.Holds(ctx, "r"); err != nil || n != level {
			t.Errorf("owner %d at level %d: holds %d, %v", id, level, n, err)
		}
		if level < depth {
			if err := nested(l.Context(), id, level+1); err != nil {
				return err
			}
		}
		if level == 1 {
			holder.Store(0)
		}
		return l.Release(ctx)
	}
	for id := int64(1); id <= owners; id++ {
		wg.Go(func() {
			for range rounds {
				if err := nested(WithOwner(ctx), id, 1); err != nil {
					t.Errorf("owner %d: %v", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func mustOwner(t *testing.T, ctx context.Context) string {
	t.Helper()
	owner, ok := Owner(ctx)
	if !ok {
		t.Fatalf("no owner in context")
	}
	return owner
}

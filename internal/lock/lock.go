package lock

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Lock is one hold of a lock: from Client.Obtain, Client.Adopt,
// Client.ObtainReentrant or Redlock.Obtain. Its methods are safe for
// concurrent use.
type Lock struct {
	store backend
	key   string
	token string
	fence int64

	mu       sync.Mutex
	deadline time.Time // end of the lease on the monotonic clock
	released bool
	lost     error // why the lock is known lost, nil while held
}

// backend is where a lock lives: one Redis server, a quorum of servers, or a
// reentrant hash.
type backend interface {
	// extend sets the TTL of key to ttl if it is held by token, or returns
	// ErrNotHeld.
	extend(ctx context.Context, key, token string, ttl time.Duration) error
	// release gives up one hold of key by token, or returns ErrNotHeld.
	release(ctx context.Context, key, token string) error
}

// newLock returns a held lock whose lease began at start, the moment before
// the command that took it was sent.
func newLock(store backend, key, token string, fence int64, ttl time.Duration, start time.Time) *Lock {
	return &Lock{store: store, key: key, token: token, fence: fence, deadline: leaseEnd(start, ttl)}
}

// leaseEnd is when a lease of ttl taken at start must be presumed gone: the
// TTL less the clock drift allowance the Redlock algorithm uses, TTL/100 + 2ms.
func leaseEnd(start time.Time, ttl time.Duration) time.Time {
	return start.Add(ttl - drift(ttl))
}

func drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// Key returns the name of the lock.
func (l *Lock) Key() string { return l.key }

// Token returns the owner token stored under the key (for a reentrant lock,
// the owner from the context).
func (l *Lock) Token() string { return l.token }

// Fence returns the fencing token of this acquisition: a number that grows
// with every acquisition of the lock name, or 0 for a lock from Adopt.
func (l *Lock) Fence() int64 { return l.fence }

// Deadline returns when the lease ends unless extended, measured on this
// process's monotonic clock and already shortened by the drift allowance.
func (l *Lock) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Release gives the lock up and publishes the release so that waiters wake.
// It returns ErrNotHeld when Redis no longer holds the lock under our token,
// and when the Lock was released before. Release is done once: when it fails
// on the network, the key goes at its TTL.
func (l *Lock) Release(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return fmt.Errorf("release lock %s: %w", l.key, ErrNotHeld)
	}
	l.released = true
	l.mu.Unlock()

	if err := l.store.release(ctx, l.key, l.token); err != nil {
		return fmt.Errorf("release lock %s: %w", l.key, err)
	}
	return nil
}

// Extend sets the lock's TTL to ttl from now, if it is still ours. It returns
// ErrNotHeld when Redis no longer holds it under our token, and ErrLost when
// the lock was already known lost.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	l.mu.Lock()
	switch {
	case l.released:
		l.mu.Unlock()
		return fmt.Errorf("extend lock %s: %w", l.key, ErrNotHeld)
	case l.lost != nil:
		l.mu.Unlock()
		return fmt.Errorf("extend lock %s: %w", l.key, l.lost)
	}
	l.mu.Unlock()

	start := time.Now()
	if err := l.store.extend(ctx, l.key, l.token, ttl); err != nil {
		return fmt.Errorf("extend lock %s: %w", l.key, err)
	}
	l.mu.Lock()
	l.deadline = leaseEnd(start, ttl)
	l.mu.Unlock()
	return nil
}

func checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("lock: ttl %v is shorter than 1ms", ttl)
	}
	return nil
}

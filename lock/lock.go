package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Lock is one hold of a lock: from Client.Obtain, Client.Adopt,
// Client.ObtainReentrant or Redlock.Obtain. Its methods are safe for
// concurrent use.
//
// A Lock is held until Release, or until it is lost: Redis refused to extend
// it, or its lease deadline passed (see Deadline). A lost Lock stays lost;
// obtain the lock again to hold it again.
type Lock struct {
	store backend
	key   string
	token string
	fence int64

	renewing sync.Mutex // one renewal at a time, so the last one sent sets the deadline

	mu       sync.Mutex
	ttl      time.Duration   // what the watchdog renews to
	deadline time.Time       // end of the lease on the monotonic clock
	released bool            // Release was called
	lost     error           // why the lock is known lost, nil while held
	parent   context.Context // values for Context
	ctx      context.Context // made by Context or the watchdog
	cancel   context.CancelCauseFunc
	expiry   *time.Timer   // loses the lock at the deadline, once ctx exists
	stop     chan struct{} // closed to stop the watchdog
	stopped  chan struct{} // closed when the watchdog has stopped
}

// backend is where a lock lives: one Redis server, a quorum of servers, or a
// reentrant hash.
type backend interface {
	// extend sets the TTL of key to ttl if it is held by token, or returns
	// ErrNotHeld. A nil error means the lease runs ttl from start.
	extend(ctx context.Context, key, token string, ttl time.Duration, start time.Time) error
	// release gives up one hold of key by token, or returns ErrNotHeld.
	release(ctx context.Context, key, token string) error
}

// newLock returns a held lock whose lease began at start, the moment before
// the command that took it was sent. The lock's Context carries the values of
// ctx.
func newLock(ctx context.Context, store backend, key, token string, fence int64, ttl time.Duration, start time.Time) *Lock {
	return &Lock{store: store, key: key, token: token, fence: fence, ttl: ttl,
		deadline: leaseEnd(start, ttl), parent: ctx}
}

// leaseEnd is when a lease of ttl taken at start must be presumed gone: the
// TTL less the clock drift allowance of the Redlock algorithm, TTL/100 + 2ms.
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
// with every acquisition of the lock name, or 0 for a lock from Adopt. Pass it
// with every write the lock protects, and let the store refuse a write whose
// token is lower than the last one it accepted (see the package example).
func (l *Lock) Fence() int64 { return l.fence }

// Deadline returns when the lease ends unless extended, on this process's
// monotonic clock and already shortened by the drift allowance (TTL/100 + 2ms).
func (l *Lock) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Context returns a context for the work the lock protects. It carries the
// values of the context the lock was obtained with, and it is cancelled as
// soon as the lock is known lost, with ErrLost as its cause (see
// context.Cause), or when the lock is released, with context.Canceled. Without
// a watchdog, it ends at the lease deadline unless Extend moves the deadline.
func (l *Lock) Context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.startContextLocked()
	return l.ctx
}

func (l *Lock) startContextLocked() {
	if l.ctx != nil {
		return
	}
	parent := context.Background()
	if l.parent != nil {
		parent = context.WithoutCancel(l.parent)
	}
	l.ctx, l.cancel = context.WithCancelCause(parent)
	switch {
	case l.lost != nil:
		l.cancel(l.lost)
	case l.released:
		l.cancel(nil)
	default:
		l.expiry = time.AfterFunc(time.Until(l.deadline), l.checkDeadline)
	}
}

// checkDeadline loses the lock when its lease deadline has passed.
func (l *Lock) checkDeadline() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released || l.lost != nil {
		return
	}
	if left := time.Until(l.deadline); left > 0 {
		l.expiry.Reset(left)
		return
	}
	l.loseLocked(fmt.Errorf("%w: lease deadline passed", ErrLost))
}

// loseLocked records that the lock is lost and tells the holder. It is the
// only place that sets l.lost.
func (l *Lock) loseLocked(err error) {
	if l.lost != nil || l.released {
		return
	}
	l.lost = err
	if l.cancel != nil {
		l.cancel(err)
	}
	if l.expiry != nil {
		l.expiry.Stop()
	}
}

// Release gives the lock up and publishes the release so that waiters wake.
// It stops the watchdog first and waits for a renewal in flight, so nothing
// renews the lock afterwards, and it cancels the lock's Context.
//
// Release returns ErrNotHeld when Redis no longer holds the lock under our
// token, and when the Lock was released before. It is done once: when it
// fails on the network, the key goes at its TTL.
func (l *Lock) Release(ctx context.Context) error {
	if err := l.giveUp(); err != nil {
		return err
	}
	if err := l.store.release(ctx, l.key, l.token); err != nil {
		return fmt.Errorf("release lock %s: %w", l.key, err)
	}
	return nil
}

// giveUp is the start of a release: it marks the lock released, cancels its
// Context and stops its watchdog, waiting for a renewal in flight. It returns
// ErrNotHeld when the lock was released before.
func (l *Lock) giveUp() error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return fmt.Errorf("release lock %s: %w", l.key, ErrNotHeld)
	}
	l.released = true
	if l.cancel != nil {
		l.cancel(nil)
	}
	if l.expiry != nil {
		l.expiry.Stop()
	}
	stopped := l.stopWatchdogLocked()
	l.mu.Unlock()
	if stopped != nil {
		<-stopped
	}
	return nil
}

// Extend sets the lock's TTL to ttl from now, if it is still ours, and makes
// ttl what the watchdog renews to. It returns ErrNotHeld when Redis no longer
// holds the lock under our token (the lock is then lost), and ErrLost when the
// lock was already known lost, including when its lease deadline has passed.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if err := l.renew(ctx, ttl); err != nil {
		return fmt.Errorf("extend lock %s: %w", l.key, err)
	}
	return nil
}

// renew extends the lease to ttl, and loses the lock when Redis refuses.
func (l *Lock) renew(ctx context.Context, ttl time.Duration) error {
	l.renewing.Lock()
	defer l.renewing.Unlock()
	l.mu.Lock()
	if err := l.heldLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	l.ttl = ttl
	l.mu.Unlock()

	start := time.Now()
	err := l.store.extend(ctx, l.key, l.token, ttl, start)

	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case errors.Is(err, ErrNotHeld):
		l.loseLocked(fmt.Errorf("%w: renewal refused", ErrLost))
		return err
	case err != nil:
		return err
	}
	if err := l.heldLocked(); err != nil {
		return err // lost or released while the renewal was on its way
	}
	l.deadline = leaseEnd(start, ttl)
	return nil
}

// heldLocked returns nil while the lock is held, and otherwise why not. It
// loses the lock whose deadline has passed.
func (l *Lock) heldLocked() error {
	switch {
	case l.released:
		return ErrNotHeld
	case l.lost != nil:
		return l.lost
	case !time.Now().Before(l.deadline):
		l.loseLocked(fmt.Errorf("%w: lease deadline passed", ErrLost))
		return l.lost
	}
	return nil
}

func checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("lock: ttl %v is shorter than 1ms", ttl)
	}
	return nil
}

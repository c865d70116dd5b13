package lock

import (
	"context"
	"errors"
	"time"
)

// startWatchdog renews the lock every TTL/3 until it is released or lost. It
// also starts the lock's Context, so that a lease deadline passing while
// Redis is unreachable loses the lock.
func (l *Lock) startWatchdog() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.startContextLocked()
	l.stop = make(chan struct{})
	l.stopped = make(chan struct{})
	go l.watch(l.stop, l.stopped)
}

// stopWatchdogLocked stops the watchdog and returns a channel closed once it
// has stopped, or nil when there is none.
func (l *Lock) stopWatchdogLocked() <-chan struct{} {
	if l.stop == nil {
		return nil
	}
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	return l.stopped
}

func (l *Lock) watch(stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	timer := time.NewTimer(l.renewInterval())
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-l.ctx.Done():
			return
		case <-timer.C:
		}
		// A renewal that cannot finish before the lease ends is useless.
		ctx, cancel := context.WithDeadline(context.Background(), l.Deadline())
		err := l.renew(ctx, l.currentTTL())
		cancel()
		next := l.renewInterval()
		switch {
		case err == nil:
		case errors.Is(err, ErrNotHeld), errors.Is(err, ErrLost):
			return // the lock is lost or released; renew has said so
		default:
			// Redis did not answer: try again sooner, until the lease ends.
			next /= 3
		}
		timer.Reset(next)
	}
}

func (l *Lock) currentTTL() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ttl
}

func (l *Lock) renewInterval() time.Duration { return l.currentTTL() / 3 }

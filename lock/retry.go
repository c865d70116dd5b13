package lock

import (
	"math/rand/v2"
	"time"
)

// RetryStrategy decides how long Obtain waits before trying again while the
// lock is held by someone else. A waiter is woken early when the lock is
// released, so the wait is an upper bound, the backstop for a release message
// that never arrives.
//
// A strategy keeps no state between calls and may be shared by any number of
// goroutines.
type RetryStrategy interface {
	// NextBackoff returns the wait before the next attempt, given the number
	// of failed attempts so far (1 or more) and the time since the first, or
	// false to give up.
	NextBackoff(failed int, elapsed time.Duration) (time.Duration, bool)
}

type noRetry struct{}

// NoRetry returns a strategy that makes one attempt. A nil RetryStrategy does
// the same.
func NoRetry() RetryStrategy { return noRetry{} }

func (noRetry) NextBackoff(int, time.Duration) (time.Duration, bool) { return 0, false }

type linearBackoff time.Duration

// LinearBackoff returns a strategy that waits d between attempts, forever;
// bound it with the context or LimitWait.
func LinearBackoff(d time.Duration) RetryStrategy { return linearBackoff(d) }

func (b linearBackoff) NextBackoff(int, time.Duration) (time.Duration, bool) {
	return time.Duration(b), true
}

type exponentialBackoff struct{ min, max time.Duration }

// ExponentialBackoff returns a strategy that waits min, 2*min, 4*min... up to
// max between attempts, forever, each wait drawn at random from its upper half
// ("equal jitter") so that waiters who failed together do not retry together.
func ExponentialBackoff(min, max time.Duration) RetryStrategy {
	if min <= 0 {
		min = time.Millisecond
	}
	if max < min {
		max = min
	}
	return exponentialBackoff{min: min, max: max}
}

func (b exponentialBackoff) NextBackoff(failed int, _ time.Duration) (time.Duration, bool) {
	d := b.max
	if shift := failed - 1; shift < 62 && b.min<<shift > 0 && b.min<<shift < b.max {
		d = b.min << shift
	}
	half := d / 2
	return half + rand.N(d-half+1), true
}

type limitWait struct {
	s   RetryStrategy
	max time.Duration
}

// LimitWait bounds the total time a strategy keeps trying: no attempt starts
// later than max after the first one, and the last wait is cut to fit.
func LimitWait(s RetryStrategy, max time.Duration) RetryStrategy {
	return limitWait{s: s, max: max}
}

func (l limitWait) NextBackoff(failed int, elapsed time.Duration) (time.Duration, bool) {
	if l.s == nil || elapsed >= l.max {
		return 0, false
	}
	d, ok := l.s.NextBackoff(failed, elapsed)
	if !ok {
		return 0, false
	}
	return min(d, l.max-elapsed), true
}

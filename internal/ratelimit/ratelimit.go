// Package ratelimit limits requests per key (a user, a client IP) with token buckets
// held in this process. Each API instance limits on its own.
package ratelimit

import (
	"hash/maphash"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

const shards = 64

// Limiter allows each key perSecond requests per second, with bursts of twice that.
type Limiter struct {
	perSecond float64
	burst     int
	seed      maphash.Seed
	shards    [shards]shard
}

type shard struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// New returns a Limiter; perSecond 0 means no limit (Allow always says yes).
func New(perSecond float64) *Limiter {
	l := &Limiter{perSecond: perSecond, burst: max(1, int(math.Ceil(2*perSecond))), seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].buckets = map[string]*bucket{}
	}
	return l
}

// Allow reports whether a request of key may go ahead at now; if not, it returns how
// long to wait before the next one would be allowed.
func (l *Limiter) Allow(key string, now time.Time) (bool, time.Duration) {
	if l == nil || l.perSecond <= 0 {
		return true, 0
	}
	s := &l.shards[maphash.String(l.seed, key)%shards]
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.swept) > time.Minute { // forget keys idle long enough to have a full bucket
		for k, b := range s.buckets {
			if now.Sub(b.seen) > time.Minute {
				delete(s.buckets, k)
			}
		}
		s.swept = now
	}
	b, ok := s.buckets[key]
	if !ok {
		b = &bucket{lim: rate.NewLimiter(rate.Limit(l.perSecond), l.burst)}
		s.buckets[key] = b
	}
	b.seen = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

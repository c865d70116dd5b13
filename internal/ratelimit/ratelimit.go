// Package ratelimit limits requests per key (a user, a client IP). A Limiter on a Redis
// holds across every API instance that shares it: the allowance of a key is one GCRA
// bucket in Redis (github.com/go-redis/redis_rate, one round trip, one key per limited
// key, hash-tagged so the keys spread over a cluster: see sharedKey), whichever instance the
// requests reach. In front of it each process keeps a token bucket of the same rate: a
// key that already passed its allowance in this process is refused without asking
// Redis, so a client hammering one instance costs that instance no Redis call per
// request (the local bucket counts every request it lets through to Redis, so it can
// only refuse what the shared bucket would refuse as well, or sooner). And an instance
// takes a key's allowance from Redis a tenth of a burst at a time (a lease, kept for the
// time the rate takes to earn it), so a key's steady requests cost a Redis call per
// lease, not per request.
//
// Every request that is allowed was taken from the shared bucket, so from a key's first
// request the sum over the instances stays within one allowance: rate x elapsed time +
// burst (bursts are twice the rate). A window that starts later may also see the leases
// taken just before it, at most rate x lease time, a tenth of a burst; a lease an
// instance does not use in time is lost, which can only allow less.
//
// When Redis does not answer, the shared check fails open to the process's own bucket
// (the limit then holds per instance, as without Redis), says so in the log at most once
// a minute, and is not asked again for a second (retryShared), so a dead Redis costs a
// limiter one timeout a second rather than one per request: an unreachable Redis answers
// purchases 503 anyway, and a limiter must not turn every other request into an error.
package ratelimit

import (
	"context"
	"hash/maphash"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// Limiter allows each key perSecond requests per second, with bursts of twice that.
type Limiter struct {
	local    *buckets
	shared   *redis_rate.Limiter // nil: this process only
	limit    redis_rate.Limit
	lease    int           // requests taken from Redis at once
	leaseFor time.Duration // how long a lease stays usable
	name     string
	warned   atomic.Int64 // unix seconds of the last fail-open log line
	downTill atomic.Int64 // unix nanoseconds before which Redis is not asked (it failed)
}

// retryShared is how long a Limiter limits in this process only after Redis failed.
const retryShared = time.Second

// New returns a Limiter named name (a part of its Redis keys, such as "user" or "ip").
// With rdb nil it limits in this process only. perSecond 0 means no limit (Allow always
// says yes).
func New(rdb redis.UniversalClient, name string, perSecond float64) *Limiter {
	l := &Limiter{local: newBuckets(perSecond), name: name}
	if rdb != nil && perSecond > 0 {
		l.shared = redis_rate.NewLimiter(rdb)
		l.limit = redis_rate.Limit{Rate: 1, Period: time.Duration(float64(time.Second) / perSecond),
			Burst: l.local.burst}
		if perSecond == math.Trunc(perSecond) {
			l.limit = redis_rate.Limit{Rate: int(perSecond), Period: time.Second, Burst: l.local.burst}
		}
		l.lease = max(1, l.local.burst/10)
		l.leaseFor = min(time.Second, time.Duration(float64(l.lease)/perSecond*float64(time.Second)))
	}
	return l
}

// Allow reports whether a request of key may go ahead at now; if not, it returns how
// long to wait before the next one would be allowed.
func (l *Limiter) Allow(ctx context.Context, key string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	ok, wait, leased := l.local.allow(key, now)
	if !ok || l.shared == nil || leased || now.UnixNano() < l.downTill.Load() {
		return ok, wait
	}
	res, err := l.shared.AllowAtMost(ctx, sharedKey(l.name, key), l.limit, l.lease)
	if err != nil {
		if ctx.Err() != nil { // the caller gave up, not Redis
			return true, 0
		}
		l.downTill.Store(now.Add(retryShared).UnixNano())
		if last := l.warned.Load(); now.Unix()-last >= 60 && l.warned.CompareAndSwap(last, now.Unix()) {
			slog.Warn("rate limit: Redis did not answer; limiting in this process only", "limit", l.name, "err", err)
		}
		return true, 0
	}
	if res.Allowed == 0 {
		return false, max(res.RetryAfter, time.Millisecond)
	}
	if res.Allowed > 1 {
		l.local.addLease(key, res.Allowed-1, now.Add(l.leaseFor))
	}
	return true, 0
}

// sharedKey names the shared bucket of k in limit name, such as {rl:user:42}; redis_rate
// stores it as rate:{rl:user:42}. The hash tag is the whole name, so one limit's keys
// spread over a cluster's slots and each call touches one key.
func sharedKey(name, k string) string { return "{rl:" + name + ":" + k + "}" }

const shards = 64

// buckets are the token buckets of this process, one per key.
type buckets struct {
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
	// lease is how many requests of the key this process took from Redis and has not
	// used yet, usable until leaseUntil.
	lease      int
	leaseUntil time.Time
}

func newBuckets(perSecond float64) *buckets {
	l := &buckets{perSecond: perSecond, burst: max(1, int(math.Ceil(2*perSecond))), seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].buckets = map[string]*bucket{}
	}
	return l
}

// allow is Allow in this process only; leased says the request used a lease taken
// from Redis before.
func (l *buckets) allow(key string, now time.Time) (ok bool, wait time.Duration, leased bool) {
	if l.perSecond <= 0 {
		return true, 0, false
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
		return false, d, false
	}
	if b.lease > 0 && now.Before(b.leaseUntil) {
		b.lease--
		return true, 0, true
	}
	return true, 0, false
}

// addLease keeps n requests of key taken from Redis for this process, until until.
func (l *buckets) addLease(key string, n int, until time.Time) {
	s := &l.shards[maphash.String(l.seed, key)%shards]
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.buckets[key]; ok {
		b.lease, b.leaseUntil = n, until
	}
}

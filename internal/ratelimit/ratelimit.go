// Package ratelimit limits requests per key (a user, a client IP) inside one API
// process, with no Redis call: each process allows a key its share of one allowance
// that all the live API instances split between them. With N instances alive (the
// heartbeats tell, internal/presence), each allows perSecond/N requests a second with
// bursts of 2 x perSecond/N, so a key whose requests are spread over the instances (a
// balancer's round robin) gets one allowance in all: at most perSecond x elapsed +
// 2 x perSecond. A key whose requests all reach one instance gets that instance's
// share only; for the few seconds after an instance joins or dies, until the heartbeats
// say so (presence.Interval, presence.Timeout), the others still split the allowance by
// the old count. docs/concepts.md states the bound in full.
//
// Purchases that reach Redis are limited exactly instead, inside the reserve script
// (internal/stock): the limiter here counts what a process answers by itself.
//
// The bucket is GCRA (the generic cell rate algorithm): one time per key, the
// theoretical arrival time of the next request, moved on by 1/rate per request allowed;
// a request is refused while that time is more than a burst's worth ahead of now.
package ratelimit

import (
	"hash/maphash"
	"math"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// ClientKey is the key of a client IP for a per-IP limit: an IPv4 address as it is, an
// IPv6 address as its /64, the block one subscriber or host is given (RFC 6177), so a
// client cannot take a fresh allowance with each of its addresses. An IPv4-mapped IPv6
// address is its IPv4 address.
func ClientKey(ip string) string {
	if strings.IndexByte(ip, ':') < 0 {
		return ip
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	if a = a.Unmap(); a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// Limiter allows each key perSecond requests per second over all the instances that
// share the allowance, with bursts of twice that.
type Limiter struct {
	perSecond float64
	share     func() int
	seed      maphash.Seed
	shards    [shards]shard
}

const shards = 64

type shard struct {
	mu    sync.Mutex
	tat   map[string]int64 // key -> theoretical arrival time of its next request (unix ns)
	swept int64
}

// New returns a Limiter of perSecond requests per key (0: no limit) over the instances
// share counts (nil, or a count below 1, means this instance alone).
func New(perSecond float64, share func() int) *Limiter {
	l := &Limiter{perSecond: perSecond, share: share, seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].tat = map[string]int64{}
	}
	return l
}

// Burst is how many requests of one key the allowance lets through at once: twice the
// rate, at least one.
func Burst(perSecond float64) int { return max(1, int(math.Ceil(2*perSecond))) }

// On reports whether the limiter limits anything: a caller whose key costs work to find
// (a client IP) skips finding it when it is off.
func (l *Limiter) On() bool { return l != nil && l.perSecond > 0 }

// Allow reports whether a request of key may go ahead at now, and counts it if so; if
// not, it returns how long until the next one would be allowed.
func (l *Limiter) Allow(key string, now time.Time) (bool, time.Duration) {
	return l.take(key, now, true)
}

// Admits reports what Allow would answer a request of key at now, without counting it:
// a caller refuses early, before costly work, what Allow would refuse after it.
func (l *Limiter) Admits(key string, now time.Time) (bool, time.Duration) {
	return l.take(key, now, false)
}

// take is Allow, counting the request only when count is true.
func (l *Limiter) take(key string, now time.Time, count bool) (bool, time.Duration) {
	if !l.On() {
		return true, 0
	}
	n := 1
	if l.share != nil {
		n = max(1, l.share())
	}
	rate := l.perSecond / float64(n)
	emission := int64(float64(time.Second) / rate)
	tolerance := emission * int64(Burst(rate))
	t := now.UnixNano()

	s := &l.shards[maphash.String(l.seed, key)%shards]
	s.mu.Lock()
	defer s.mu.Unlock()
	if t-s.swept > int64(time.Minute) { // forget keys whose bucket is full again
		for k, tat := range s.tat {
			if tat <= t {
				delete(s.tat, k)
			}
		}
		s.swept = t
	}
	next := max(s.tat[key], t) + emission
	if wait := next - tolerance - t; wait > 0 {
		return false, time.Duration(wait)
	}
	if count {
		s.tat[key] = next
	}
	return true, 0
}

// Keys returns how many keys the limiter remembers: those seen in the last minute or
// whose bucket is not yet full.
func (l *Limiter) Keys() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.tat)
		s.mu.Unlock()
	}
	return n
}

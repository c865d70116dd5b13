package ratelimit_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/ratelimit"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func TestLimiter(t *testing.T) {
	tests := []struct {
		name      string
		perSecond float64
		share     int
		burst     int           // allowed at once
		refill    time.Duration // time to earn one more
	}{
		{"alone", 5, 1, 10, 200 * time.Millisecond},
		{"one of two", 5, 2, 5, 400 * time.Millisecond},
		{"one of three", 20, 3, 14, 150 * time.Millisecond},
		{"share above the rate", 1, 4, 1, 4 * time.Second},
		{"no count yet", 5, 0, 10, 200 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := ratelimit.New(tc.perSecond, func() int { return tc.share })
			allowed := 0
			for range 3 * tc.burst {
				if ok, _ := l.Allow("a", t0); ok {
					allowed++
				}
			}
			if allowed != tc.burst {
				t.Errorf("at once: %d allowed, want the burst %d", allowed, tc.burst)
			}
			ok, wait := l.Allow("a", t0)
			if ok || wait <= 0 || wait > tc.refill {
				t.Errorf("over the limit: ok=%v wait=%v, want refused with a wait in (0, %v]", ok, wait, tc.refill)
			}
			if ok, _ := l.Allow("a", t0.Add(wait)); !ok {
				t.Errorf("after the wait it said (%v): refused", wait)
			}
			if ok, _ := l.Allow("b", t0); !ok {
				t.Error("another key must not share the bucket")
			}
			// Over ten seconds at twice the rate, what is allowed is the burst plus the
			// share's rate x time.
			l = ratelimit.New(tc.perSecond, func() int { return tc.share })
			share := tc.perSecond / float64(max(1, tc.share))
			step := time.Duration(float64(time.Second) / (2 * share))
			allowed = 0
			for at := t0; at.Before(t0.Add(10 * time.Second)); at = at.Add(step) {
				if ok, _ := l.Allow("c", at); ok {
					allowed++
				}
			}
			if want := tc.burst + int(10*share); allowed < want-1 || allowed > want+1 {
				t.Errorf("10 s at twice the rate: %d allowed, want %d (burst + rate x 10 s) +-1", allowed, want)
			}
		})
	}
}

func TestLimiterOff(t *testing.T) {
	if !ratelimit.New(1, nil).On() {
		t.Error("a limit of 1/s must be on")
	}
	for _, l := range []*ratelimit.Limiter{ratelimit.New(0, nil), nil} {
		if l.On() {
			t.Error("limit 0 (or no limiter) must be off")
		}
		for range 1000 {
			if ok, _ := l.Allow("a", t0); !ok {
				t.Fatal("limit 0 (or no limiter) must allow everything")
			}
		}
	}
}

// Instances that each allow their share give one allowance between them: a key's
// requests dealt round robin over three limiters that know of three instances get the
// burst of one allowance at once, and its rate over time.
func TestSharesMakeOneAllowance(t *testing.T) {
	const rate = 6 // bursts of 12, 4 per instance
	three := func() int { return 3 }
	ls := []*ratelimit.Limiter{ratelimit.New(rate, three), ratelimit.New(rate, three), ratelimit.New(rate, three)}
	allowed := 0
	for i := range 60 {
		if ok, _ := ls[i%3].Allow("k", t0); ok {
			allowed++
		}
	}
	if allowed != 12 {
		t.Errorf("at once over three instances: %d allowed, want one burst, 12", allowed)
	}
	allowed = 0
	for i := range 300 { // 100 ms apart for 30 s
		if ok, _ := ls[i%3].Allow("k", t0.Add(time.Duration(i+1)*100*time.Millisecond)); ok {
			allowed++
		}
	}
	// 6/s for 30 s, less up to one request per instance lost to the 300 ms between
	// the requests each instance sees.
	if allowed < 176 || allowed > 181 {
		t.Errorf("30 s at 10/s over three instances: %d allowed, want 177-181 (6/s)", allowed)
	}
}

// The count of instances is read per request: when a second instance appears, this
// one halves its rate at once.
func TestShareFollowsTheCount(t *testing.T) {
	var n atomic.Int64
	n.Store(1)
	l := ratelimit.New(10, func() int { return int(n.Load()) })
	rateOver := func(from time.Time) int { // allowed over 10 s at 40/s, after the burst
		allowed := 0
		for i := range 400 {
			if ok, _ := l.Allow("k", from.Add(time.Duration(i)*25*time.Millisecond)); ok {
				allowed++
			}
		}
		return allowed
	}
	alone := rateOver(t0)
	n.Store(2)
	shared := rateOver(t0.Add(10 * time.Second))
	if alone < 100 || shared > 55 || shared < 45 {
		t.Errorf("10 s at 40/s: %d allowed alone (want >= 100), %d as one of two (want 50 +-5)", alone, shared)
	}
}

// Many goroutines on one key never get more than the burst at one instant, and every
// key of many is counted apart (run with -race).
func TestLimiterConcurrent(t *testing.T) {
	l := ratelimit.New(50, nil) // bursts of 100
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 200 {
				if ok, _ := l.Allow("hot", t0); ok {
					allowed.Add(1)
				}
				if ok, _ := l.Allow("user-"+strconv.Itoa(g*1000+i), t0); !ok {
					t.Errorf("a fresh key was refused")
				}
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 100 {
		t.Errorf("6,400 requests at one instant: %d allowed, want the burst, 100", got)
	}
}

// Keys whose bucket is full again are forgotten, so the map does not grow with every
// client ever seen; a forgotten key starts with a full burst, as it would anyway.
func TestIdleKeysForgotten(t *testing.T) {
	l := ratelimit.New(1, nil) // bursts of 2
	for i := range 10_000 {
		l.Allow("k"+strconv.Itoa(i), t0)
	}
	if n := l.Keys(); n != 10_000 {
		t.Fatalf("%d keys remembered, want 10,000", n)
	}
	// A thousand new keys two minutes later reach every shard (all 64 but with a
	// chance of 1e-5), and each sweeps its shard.
	for i := range 1000 {
		l.Allow("late"+strconv.Itoa(i), t0.Add(2*time.Minute))
	}
	if n := l.Keys(); n != 1000 {
		t.Errorf("two minutes later, %d keys remembered, want only the 1,000 new ones", n)
	}
	if ok, _ := l.Allow("k1", t0.Add(2*time.Minute)); !ok {
		t.Error("a forgotten key must be allowed")
	}
}

func BenchmarkAllow(b *testing.B) {
	l := ratelimit.New(20, func() int { return 3 })
	keys := make([]string, 20_000)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.Allow(keys[i%len(keys)], t0.Add(time.Duration(i)*time.Microsecond))
			i++
		}
	})
}

// An IPv6 client is keyed by its /64; IPv4, and IPv4 mapped into IPv6, by the address.
func TestClientKey(t *testing.T) {
	for _, tc := range []struct{ ip, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"::1", "::/64"},
		{"not an address", "not an address"},
	} {
		if got := ratelimit.ClientKey(tc.ip); got != tc.want {
			t.Errorf("ClientKey(%q) = %q, want %q", tc.ip, got, tc.want)
		}
	}
	// Two addresses of one /64 share one allowance; another /64 has its own.
	l := ratelimit.New(1, nil) // 1/s, bursts of 2
	now := time.Now()
	for i, ip := range []string{"2001:db8::1", "2001:db8::2", "2001:db8::3", "2001:db8:0:1::1"} {
		ok, _ := l.Allow(ratelimit.ClientKey(ip), now)
		if want := i != 2; ok != want {
			t.Errorf("request %d from %s: allowed %v, want %v", i+1, ip, ok, want)
		}
	}
}

// Admits tells what Allow would answer, and counts nothing: however often it is asked,
// the burst is still there; past the burst it answers no, with Allow's wait.
func TestAdmitsCountsNothing(t *testing.T) {
	l := ratelimit.New(5, nil)
	for range 100 {
		if ok, _ := l.Admits("a", t0); !ok {
			t.Fatal("Admits refused a key with its whole burst left")
		}
	}
	for i := range ratelimit.Burst(5) {
		if ok, _ := l.Allow("a", t0); !ok {
			t.Fatalf("Allow refused request %d of the burst after Admits was asked 100 times", i+1)
		}
	}
	okA, waitA := l.Admits("a", t0)
	okB, waitB := l.Allow("a", t0)
	if okA || okB || waitA != waitB || waitA <= 0 {
		t.Errorf("past the burst: Admits %v %v, Allow %v %v; want both no, with one wait", okA, waitA, okB, waitB)
	}
	if ok, _ := ratelimit.New(0, nil).Admits("a", t0); !ok {
		t.Error("a limiter that is off refused")
	}
}

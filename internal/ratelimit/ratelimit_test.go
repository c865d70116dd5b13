package ratelimit_test

import (
	"testing"
	"time"

	"seckill/internal/ratelimit"
)

func TestLimiter(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := ratelimit.New(5) // burst 10
	allowed := 0
	for i := 0; i < 20; i++ {
		if ok, _ := l.Allow("a", now); ok {
			allowed++
		}
	}
	if allowed != 10 {
		t.Errorf("burst allowed %d, want 10", allowed)
	}
	ok, wait := l.Allow("a", now)
	if ok || wait <= 0 || wait > 200*time.Millisecond {
		t.Errorf("over the limit: ok=%v wait=%v, want refused with a wait up to 200ms", ok, wait)
	}
	if ok, _ := l.Allow("b", now); !ok {
		t.Error("another key must not share the bucket")
	}
	if ok, _ := l.Allow("a", now.Add(time.Second)); !ok {
		t.Error("a second later the key must be allowed again")
	}
	off := ratelimit.New(0)
	for i := 0; i < 1000; i++ {
		if ok, _ := off.Allow("a", now); !ok {
			t.Fatal("limit 0 must allow everything")
		}
	}
}

package main

import (
	"math"
	"testing"
	"time"
)

func TestKeepable(t *testing.T) {
	span := func(wall, busy, all, self time.Duration) cpuSpan {
		return cpuSpan{wall: wall, busy: busy, all: all, self: self, ok: true}
	}
	s := time.Second
	for _, tc := range []struct {
		name            string
		capacity, crowd cpuSpan
		want            float64
		ok              bool
	}{
		// capacity: 2 cores busy, the tool 0.3 → the service 1.7; crowd: the tool 0.85 of
		// 2 → 1.15 left: 1.15 / 1.7
		{"tool grows", span(5*s, 10*s, 10*s, 1500*time.Millisecond), span(15*s, 30*s, 30*s, 12750*time.Millisecond), 1.15 / 1.7, true},
		{"tool takes nothing more", span(5*s, 10*s, 10*s, 1500*time.Millisecond), span(15*s, 30*s, 30*s, 4500*time.Millisecond), 1, true},
		{"a machine half idle in the capacity phase", span(5*s, 5*s, 10*s, 1*s), span(5*s, 10*s, 10*s, 4*s), 1, true},
		{"the tool leaves nothing", span(5*s, 10*s, 10*s, 1*s), span(5*s, 10*s, 10*s, 10*s), 0, true},
		{"no /proc", cpuSpan{wall: 5 * s}, span(5*s, 10*s, 10*s, 1*s), 0, false},
		{"nothing but the tool busy", span(5*s, 1*s, 10*s, 1*s), span(5*s, 10*s, 10*s, 1*s), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := keepable(tc.capacity, tc.crowd)
			if ok != tc.ok || math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("keepable = %.4f, %v; want %.4f, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

package lock

import (
	"testing"
	"time"
)

func TestRetryStrategies(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name     string
		s        RetryStrategy
		failed   int
		elapsed  time.Duration
		min, max time.Duration
		wantOK   bool
	}{
		{"no retry", NoRetry(), 1, 0, 0, 0, false},
		{"linear", LinearBackoff(7 * ms), 9, time.Hour, 7 * ms, 7 * ms, true},
		{"exponential first", ExponentialBackoff(10*ms, 80*ms), 1, 0, 5 * ms, 10 * ms, true},
		{"exponential third", ExponentialBackoff(10*ms, 80*ms), 3, 0, 20 * ms, 40 * ms, true},
		{"exponential capped", ExponentialBackoff(10*ms, 80*ms), 50, 0, 40 * ms, 80 * ms, true},
		{"exponential huge count", ExponentialBackoff(10*ms, 80*ms), 1000, 0, 40 * ms, 80 * ms, true},
		{"limit wait, room left", LimitWait(LinearBackoff(10*ms), 100*ms), 3, 30 * ms, 10 * ms, 10 * ms, true},
		{"limit wait, last wait cut", LimitWait(LinearBackoff(10*ms), 100*ms), 3, 95 * ms, 5 * ms, 5 * ms, true},
		{"limit wait, spent", LimitWait(LinearBackoff(10*ms), 100*ms), 3, 100 * ms, 0, 0, false},
		{"limit wait of no retry", LimitWait(NoRetry(), time.Hour), 1, 0, 0, 0, false},
	}
	for _, tt := range tests {
		for range 100 { // the jitter is random
			d, ok := tt.s.NextBackoff(tt.failed, tt.elapsed)
			if ok != tt.wantOK || d < tt.min || d > tt.max {
				t.Errorf("%s: got %v, %v; want %v in [%v, %v]", tt.name, d, ok, tt.wantOK, tt.min, tt.max)
				break
			}
		}
	}
}

package lock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestRunOnceOneInstancePerPeriod(t *testing.T) {
	_, srv := newTestClient(t)
	const instances, period = 5, 200 * time.Millisecond
	var mu sync.Mutex
	runs := map[time.Time]int{}
	job := func(ctx context.Context, start time.Time) error {
		mu.Lock()
		defer mu.Unlock()
		runs[start]++
		return nil
	}
	ctx := context.Background()
	end := time.Now().Add(5 * period)
	var wg sync.WaitGroup
	for range instances {
		c := clientOf(t, srv)
		wg.Go(func() {
			for time.Now().Before(end) {
				if _, err := c.RunOnce(ctx, "job:report", period, job); err != nil {
					t.Errorf("RunOnce: %v", err)
					return
				}
				// Each instance tries every 5 ms, many times a period: the contention under test.
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if len(runs) < 4 {
		t.Errorf("ran in %d periods of about 5", len(runs))
	}
	for start, n := range runs {
		if n != 1 {
			t.Errorf("period %v ran %d times, want once", start.Format(time.StampMilli), n)
		}
	}
}

func TestRunOnceLaggingClockSkipsDonePeriod(t *testing.T) {
	c, _ := newTestClient(t)
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 12, 0, 30, 0, time.UTC)
	c.now = func() time.Time { return now }
	fail := errors.New("report failed")

	tests := []struct {
		name    string
		now     time.Time
		jobErr  error
		wantRan bool
		wantErr error
	}{
		{"first in the minute", now, fail, true, fail},
		{"the failed period is done all the same", now.Add(20 * time.Second), nil, false, nil},
		{"a lagging clock sees the period before", now.Add(-31 * time.Second), nil, false, nil},
		{"next minute", now.Add(time.Minute), nil, true, nil},
	}
	for _, tt := range tests {
		c.now = func() time.Time { return tt.now }
		ran, err := c.RunOnce(ctx, "job:sweep", time.Minute, func(context.Context, time.Time) error { return tt.jobErr })
		if ran != tt.wantRan || !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: got ran=%v err=%v, want ran=%v err=%v", tt.name, ran, err, tt.wantRan, tt.wantErr)
		}
	}
}

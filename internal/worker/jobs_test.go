package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"seckill/internal/testutil"
	"seckill/internal/worker"
	"seckill/lock"
)

// Two workers tick the same jobs: each period is run once between them, and their
// counts say so; a job that fails is counted failed and has no success time.
func TestRunPeriodicCountsRuns(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
	start := time.Now()
	jobs := []worker.Job{
		{Name: "fine", Period: 100 * time.Millisecond, Run: func(context.Context) error { return nil }},
		{Name: "broken", Period: 100 * time.Millisecond, Run: func(context.Context) error { return errors.New("no") }},
	}
	for _, reg := range regs {
		worker.RunPeriodic(ctx, lock.New(rdb), reg, jobs...)
	}
	// The jobs run for a second, about ten periods: the behaviour under test.
	time.Sleep(time.Second)
	cancel() // a run that ends after this is not counted (RunPeriodic)
	elapsed := time.Since(start)

	var fine, broken float64
	newest := 0.0
	for _, reg := range regs {
		fine += value(t, reg, "seckill_job_runs_total", "name", "fine", "outcome", "ok")
		broken += value(t, reg, "seckill_job_runs_total", "name", "broken", "outcome", "failed")
		newest = max(newest, value(t, reg, "seckill_job_last_success_timestamp_seconds", "name", "fine"))
		if n, err := promtest.GatherAndCount(reg, "seckill_job_last_success_timestamp_seconds"); err != nil || n > 1 {
			t.Errorf("success times: %d series (%v), want only the fine job's", n, err)
		}
	}
	// About ten periods passed: at most one run each, and most of them ran.
	periods := elapsed.Seconds() / 0.1
	for name, n := range map[string]float64{"fine": fine, "broken": broken} {
		if n < 5 || n > periods+1 {
			t.Errorf("%s: %v runs between two workers in %.1f periods, want one per period", name, n, periods)
		}
	}
	if at := time.Unix(0, int64(newest*1e9)); at.Before(start) || at.After(time.Now()) {
		t.Errorf("fine job last succeeded at %v, want within the test", at)
	}
}

// value is the counter or gauge of reg named name whose labels have the values given
// (name, value pairs); 0 when there is none.
func value(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue metrics
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

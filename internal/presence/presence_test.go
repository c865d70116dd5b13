package presence_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"seckill/internal/presence"
	"seckill/internal/testutil"
)

func TestHeartbeats(t *testing.T) {
	r := presence.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	r.SetClock(func() time.Time { return now })
	api, worker := presence.NewInstance("api", "127.0.0.1:8081"), presence.NewInstance("worker", "127.0.0.1:9092")
	steps := []struct {
		name  string
		act   func() error
		after time.Duration // the clock moves on by this before the list
		want  []string      // kinds listed, in any order
	}{
		{"two beat", func() error {
			if err := r.Beat(ctx, api); err != nil {
				return err
			}
			return r.Beat(ctx, worker)
		}, 0, []string{"api", "worker"}},
		{"the worker beats again, the api is silent", func() error { return r.Beat(ctx, worker) }, presence.Timeout - time.Second, []string{"api", "worker"}},
		{"past the timeout the silent one is gone", func() error { return r.Beat(ctx, worker) }, 2 * time.Second, []string{"worker"}},
		{"a clean leave is at once", func() error { return r.Leave(ctx, worker.ID) }, 0, nil},
	}
	for _, st := range steps {
		if err := st.act(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		now = now.Add(st.after)
		got, err := r.List(ctx)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		kinds := map[string]int{}
		for _, in := range got {
			kinds[in.Kind]++
			if in.Version == "" || in.StartedAt.IsZero() || in.LastSeen.IsZero() || in.Figures == nil {
				t.Errorf("%s: incomplete instance %+v", st.name, in)
			}
		}
		if len(got) != len(st.want) {
			t.Errorf("%s: listed %v, want %v", st.name, kinds, st.want)
		}
		for _, k := range st.want {
			if kinds[k] != 1 {
				t.Errorf("%s: listed %v, want %v", st.name, kinds, st.want)
			}
		}
	}
}

func TestFiguresFromRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "req_total"}, []string{"status"})
	depth := prometheus.NewGauge(prometheus.GaugeOpts{Name: "depth"})
	reg.MustRegister(requests, depth)
	read := presence.FromRegistry(reg,
		presence.Figure{Name: "all", Metric: "req_total", Rate: true},
		presence.Figure{Name: "accepted", Metric: "req_total", Label: "status", Value: "202", Rate: true},
		presence.Figure{Name: "depth", Metric: "depth"})
	requests.WithLabelValues("202").Add(5)
	before := time.Now()
	if got := read(); got["all"] != 0 || got["accepted"] != 0 {
		t.Errorf("first read %v, want rates 0", got)
	}
	after := time.Now()
	requests.WithLabelValues("202").Add(10)
	requests.WithLabelValues("409").Add(30)
	depth.Set(7)
	// A rate is a count over time: the interval between the reads is part of what is
	// tested, and measured around them, so the rates' bounds hold on a slow machine.
	time.Sleep(100 * time.Millisecond)
	second := time.Now()
	got := read()
	// 40 and 10 more between the reads: rates within what the shortest and the longest
	// interval the reads could span give (each rounded to a tenth).
	within := func(name string, n float64) bool {
		least, most := n/time.Since(before).Seconds(), n/second.Sub(after).Seconds()
		return got[name] >= least-0.1 && got[name] <= most+0.1
	}
	if !within("all", 40) || !within("accepted", 10) || got["depth"] != 7 {
		t.Errorf("second read %v, want all 40 and accepted 10 over the %v between the reads, depth 7",
			got, time.Since(before).Round(time.Millisecond))
	}
}

// Peers counts the live processes of its kind from the heartbeats, keeps its count while
// Redis does not answer, and sees a process go.
func TestPeers(t *testing.T) {
	srv := testutil.StartRedis(t)
	r := presence.New(srv.Client(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := presence.NewInstance("api", "127.0.0.1:1"), presence.NewInstance("api", "127.0.0.1:2")
	for _, in := range []presence.Instance{a, b, presence.NewInstance("worker", "127.0.0.1:3")} {
		if err := r.Beat(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	p := r.WatchPeers(ctx, "api")
	if got := p.Count(); got != 2 {
		t.Fatalf("two APIs and a worker beat: %d API peers, want 2", got)
	}
	if err := r.Leave(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	waitCount(t, p, 1)
	if err := r.Beat(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitCount(t, p, 2)
	srv.Kill() // the count stays what it was
	// A heartbeat interval passes with Redis down: the count must stay.
	time.Sleep(presence.Interval + 500*time.Millisecond)
	if got := p.Count(); got != 2 {
		t.Errorf("Redis down: %d API peers, want the last count, 2", got)
	}
	if got := (&presence.Peers{}).Count(); got != 1 {
		t.Errorf("a count never read: %d, want 1 (this process)", got)
	}
}

func waitCount(t *testing.T, p *presence.Peers, want int) {
	t.Helper()
	deadline := time.Now().Add(2*presence.Interval + time.Second)
	for p.Count() != want {
		if time.Now().After(deadline) {
			t.Fatalf("peers: %d, want %d", p.Count(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

package presence_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"seckill/internal/presence"
	"seckill/internal/testutil"
)

// gauges collects c and returns its gauges by name and their first label's value.
func gauges(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "/" + l.GetValue()
			}
			out[name] = m.GetGauge().GetValue()
		}
	}
	return out
}

// The collector counts the live processes by kind, and measures this process's clock
// against Redis': a clock set 30 s ahead shows 30 s, within the round trip.
func TestCollector(t *testing.T) {
	r := presence.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	for _, in := range []presence.Instance{presence.NewInstance("api", "a:1"), presence.NewInstance("api", "a:2"), presence.NewInstance("worker", "w:1")} {
		if err := r.Beat(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	for _, offset := range []time.Duration{0, 30 * time.Second, -90 * time.Second} {
		got := gauges(t, r.Collector(func() time.Time { return time.Now().Add(offset) }))
		if got["seckill_instances/api"] != 2 || got["seckill_instances/worker"] != 1 {
			t.Errorf("offset %v: instances %v, want api 2, worker 1", offset, got)
		}
		// Redis' TIME and this process read one clock here: what is left is the shift.
		if o, ok := got["seckill_clock_offset_seconds"]; !ok || math.Abs(o-offset.Seconds()) > 0.5 {
			t.Errorf("clock shifted %v: offset %v (present %v)", offset, o, ok)
		}
	}
}

package presence

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Figure is one live figure of a heartbeat, read from the process's Prometheus metrics.
type Figure struct {
	// Name is the figure's key in Instance.Figures, such as "requests_per_second".
	Name string
	// Metric is the metric family; the figure sums its series, or only those whose
	// Label has Value when Label is set.
	Metric, Label, Value string
	// Rate makes the figure a rate per second since the last read (for counters);
	// otherwise it is the value now (for gauges).
	Rate bool
}

// FromRegistry returns a function that reads figs from g each time it is called, for
// Registry.Run. Rates are per second since the previous call (0 at the first).
func FromRegistry(g prometheus.Gatherer, figs ...Figure) func() map[string]float64 {
	last := map[string]float64{}
	var lastAt time.Time
	return func() map[string]float64 {
		families, _ := g.Gather() // a partial gather still gives the families it read
		now := time.Now()
		out := make(map[string]float64, len(figs))
		for _, f := range figs {
			v := sum(families, f)
			if !f.Rate {
				out[f.Name] = v
				continue
			}
			if prev, ok := last[f.Name]; ok && now.After(lastAt) {
				out[f.Name] = math.Round(max(0, v-prev)/now.Sub(lastAt).Seconds()*10) / 10
			} else {
				out[f.Name] = 0
			}
			last[f.Name] = v
		}
		lastAt = now
		return out
	}
}

func sum(families []*dto.MetricFamily, f Figure) float64 {
	total := 0.0
	for _, fam := range families {
		if fam.GetName() != f.Metric {
			continue
		}
		for _, m := range fam.GetMetric() {
			if f.Label != "" && !hasLabel(m, f.Label, f.Value) {
				continue
			}
			switch {
			case m.Counter != nil:
				total += m.Counter.GetValue()
			case m.Gauge != nil:
				total += m.Gauge.GetValue()
			case m.Histogram != nil:
				total += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return total
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}

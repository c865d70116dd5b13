package outbox

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of the delivery loop; nil until Register.
type metrics struct {
	attempts *prometheus.CounterVec
	lag      prometheus.Histogram
}

// Register adds the delivery loop's metrics to reg: attempts by outcome (delivered: a
// 2xx; retry: no 2xx, tried again later; gave_up: the last try failed; disabled: a 410
// disabled the endpoint) and the lag from a change to its delivery.
func (d *Deliverer) Register(reg prometheus.Registerer) {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_webhook_deliveries_total",
			Help: "Webhook delivery attempts, by outcome: delivered, retry, gave_up, disabled.",
		}, []string{"outcome"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "seckill_webhook_delivery_lag_seconds",
			Help:    "Seconds from an order's or group's change (its event's created_at) to the 2xx of its delivery, per endpoint.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 4 * 3600, 24 * 3600},
		}),
	}
	for _, o := range []string{"delivered", "retry", "gave_up", "disabled"} {
		m.attempts.WithLabelValues(o)
	}
	reg.MustRegister(m.attempts, m.lag)
	d.metrics = m
}

// attempted counts an attempt's outcome and, for a delivery, its lag.
func (m *metrics) attempted(outcome string, changeAt, at time.Time) {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(outcome).Inc()
	if outcome == "delivered" && !changeAt.IsZero() {
		m.lag.Observe(at.Sub(changeAt).Seconds())
	}
}

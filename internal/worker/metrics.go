package worker

import (
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"seckill/internal/queue"
)

// metrics of the persister; nil until Register.
type metrics struct {
	batch  prometheus.Histogram
	orders *prometheus.CounterVec
}

// Register adds the persister's metrics to reg: batch sizes, and orders by outcome
// (created, failed, existed: already stored by an earlier delivery, dropped: given back
// by the API before it was stored, retry: to be retried).
func (p *Persister) Register(reg prometheus.Registerer) {
	m := &metrics{
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "seckill_persist_batch_size",
			Help:    "Orders per MySQL transaction of the persister.",
			Buckets: []float64{1, 2, 5, 10, 25, 50, 100, 150, 200, 250, 500},
		}),
		orders: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_persisted_orders_total",
			Help: "Orders the persister handled, by outcome.",
		}, []string{"outcome"}),
	}
	reg.MustRegister(m.batch, m.orders)
	p.metrics = m
}

// batchWritten counts a transaction of n orders.
func (m *metrics) batchWritten(n int) {
	if m != nil {
		m.batch.Observe(float64(n))
	}
}

// handled counts n orders with an outcome.
func (m *metrics) handled(outcome string, n int) {
	if m != nil && n > 0 {
		m.orders.WithLabelValues(outcome).Add(float64(n))
	}
}

// QueueDepth is a gauge of the tasks of the orders queue not yet done (pending,
// active, scheduled and retrying), read from Redis at every scrape. A task carries the
// orders an API enqueued together, or one order of the repair pass.
func QueueDepth(insp *asynq.Inspector) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "seckill_queue_depth",
		Help: "Tasks (of one order or more) in the orders queue not yet done: pending, active, scheduled and retrying.",
	}, func() float64 {
		info, err := insp.GetQueueInfo(queue.Name)
		if err != nil {
			return 0
		}
		return float64(info.Pending + info.Active + info.Scheduled + info.Retry)
	})
}

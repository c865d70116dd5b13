package worker

import (
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"seckill/internal/task"
)

// metrics of the persister; nil until Register.
type metrics struct {
	batch  prometheus.Histogram
	orders *prometheus.CounterVec
	delay  prometheus.Histogram
}

// Register adds the persister's metrics to reg: batch sizes, and orders by outcome
// (created, failed, existed: already stored by an earlier delivery, dropped: given back
// by the API before it was stored, retry: to be retried), and the time from an order's
// acknowledgement to its row in MySQL.
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
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "seckill_order_persist_delay_seconds",
			Help:    "Seconds from an order's creation (its 202) to the commit of its row in MySQL.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
	}
	reg.MustRegister(m.batch, m.orders, m.delay)
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

// stored observes how long an order written now waited since it was created.
func (m *metrics) stored(createdAt time.Time) {
	if m != nil {
		m.delay.Observe(time.Since(createdAt).Seconds())
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
		info, err := insp.GetQueueInfo(task.Queue)
		if err != nil {
			return 0
		}
		return float64(info.Pending + info.Active + info.Scheduled + info.Retry)
	})
}

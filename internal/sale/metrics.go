package sale

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of purchases; nil until Register.
type metrics struct {
	lockWait      prometheus.Histogram
	commitBatch   prometheus.Histogram
	commitsFailed prometheus.Counter
}

// Register adds the service's metrics to reg: the time purchases waited for the same
// user's purchase in flight, the purchases committed together (one asynq task, one
// lock release script), the commits whose enqueue failed, and the units every sale
// has left, read at each scrape.
func (s *Service) Register(reg prometheus.Registerer) {
	m := &metrics{lockWait: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "seckill_purchase_lock_wait_seconds",
		Help:    "Time a purchase waited for the same user's purchase in flight (only purchases that waited).",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	}), commitBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "seckill_purchase_commit_batch_size",
		Help:    "Purchases whose orders were enqueued in one asynq task and whose user locks were released together.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 10),
	}), commitsFailed: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_purchase_commit_failures_total",
		Help: "Batches of acknowledged orders whose enqueue failed; the worker's repair pass enqueues them.",
	})}
	reg.MustRegister(m.lockWait, m.commitBatch, m.commitsFailed, stockCollector{s.Catalog})
	s.base.metrics = m
	s.base.rebuild.Register(reg)
}

func (m *metrics) waited(d time.Duration) {
	if m != nil {
		m.lockWait.Observe(d.Seconds())
	}
}

func (m *metrics) committed(n int, err error) {
	if m == nil {
		return
	}
	m.commitBatch.Observe(float64(n))
	if err != nil {
		m.commitsFailed.Inc()
	}
}

var stockDesc = prometheus.NewDesc("seckill_stock_available", "Units a sale has left in Redis.",
	[]string{"activity_id"}, nil)

// stockCollector reads the available units of the sales of the last snapshot of the
// public list (catalog) from Redis when scraped; an archived sale has no series. A
// scrape asks MySQL nothing: it never loads the snapshot itself, which the list's own
// requests keep within a second.
type stockCollector struct{ s *Catalog }

func (c stockCollector) Describe(ch chan<- *prometheus.Desc) { ch <- stockDesc }

func (c stockCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	sales, err := c.s.sales.Read(ctx, c.s.catalogIDs())
	if err != nil {
		return // a scrape while Redis is down shows no stock figures
	}
	for id, sale := range sales {
		ch <- prometheus.MustNewConstMetric(stockDesc, prometheus.GaugeValue, float64(sale.Available),
			strconv.FormatInt(id, 10))
	}
}

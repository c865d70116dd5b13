package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"seckill/internal/stock"
	"seckill/internal/stock/moves"
	"seckill/internal/stock/settle"
	"seckill/internal/store"
	"seckill/internal/task"
	"seckill/lock"
)

// Job is one of the worker's periodic jobs.
type Job struct {
	Name   string
	Period time.Duration
	Run    func(ctx context.Context) error
}

// RunPeriodic runs each job once per period among all worker replicas: every replica
// ticks, and lock.Client.RunOnce lets only the first one of each period run the job.
// The runs this replica made are counted in reg (nil: not counted). It returns when
// ctx ends.
func RunPeriodic(ctx context.Context, locks *lock.Client, reg prometheus.Registerer, jobs ...Job) {
	m := newJobMetrics(reg)
	for _, j := range jobs {
		go func(j Job) {
			t := time.NewTicker(j.Period)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				jctx, cancel := context.WithTimeout(ctx, 4*j.Period)
				ran, err := locks.RunOnce(jctx, "seckill:job:"+j.Name, j.Period,
					func(ctx context.Context, _ time.Time) error { return j.Run(ctx) })
				cancel()
				if ctx.Err() != nil {
					return
				}
				m.ran(j.Name, ran, err)
				if err != nil {
					slog.Warn("periodic job failed", "job", j.Name, "err", err)
				}
			}
		}(j)
	}
}

// jobMetrics count the periodic jobs' runs; nil counts nothing.
type jobMetrics struct {
	runs        *prometheus.CounterVec
	lastSuccess *prometheus.GaugeVec
}

func newJobMetrics(reg prometheus.Registerer) *jobMetrics {
	if reg == nil {
		return nil
	}
	m := &jobMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_job_runs_total",
			Help: "Runs of a periodic job by this worker, by job name and outcome (ok, failed); a period another worker ran is not counted.",
		}, []string{"name", "outcome"}),
		// Across workers, the newest of their values is when the job last succeeded.
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_job_last_success_timestamp_seconds",
			Help: "Unix time this worker last finished a periodic job without error, by job name.",
		}, []string{"name"}),
	}
	reg.MustRegister(m.runs, m.lastSuccess)
	return m
}

// ran records one tick of a job: whether this worker ran it, and how it ended.
func (m *jobMetrics) ran(job string, ran bool, err error) {
	switch {
	case m == nil:
	case err != nil:
		m.runs.WithLabelValues(job, "failed").Inc()
	case ran:
		m.runs.WithLabelValues(job, "ok").Inc()
		m.lastSuccess.WithLabelValues(job).SetToCurrentTime()
	}
}

// Repairer finds orders that stayed queued too long. An order no worker has claimed
// after MinAge has no task if the API died between taking the units and enqueueing, if
// the API's enqueue failed (the purchase was answered already: internal/sale/commit.go),
// or if a task was lost: it is enqueued again in a task of its own (whose id is the order
// id, so that task is enqueued once; should the order's first task still be waiting,
// the order is written by whichever runs first and the other finds it settled). An
// order still queued after StuckAge, claimed or not, is written to MySQL by the Repairer
// itself: its task is stuck with a worker that died (asynq hands such a task back only
// after its lease and a recovery interval, a minute or more). Persisting is idempotent:
// a task that runs later finds its orders stored and is acknowledged.
type Repairer struct {
	store     *store.Activities
	stock     *stock.Stock
	moves     *moves.Mover
	settle    *settle.Settler
	queue     *task.Enqueuer
	persister *Persister
	// MinAge is how old an unclaimed order must be to be checked. The API enqueues an
	// order milliseconds after taking its units, or gives up after its retries (a few
	// seconds) and leaves it to this pass; behind a long backlog of commits it can
	// take longer, and then the order is enqueued twice, which is harmless.
	MinAge time.Duration
	// StuckAge is how old an order must be to be written by the Repairer; a live worker
	// settles an order within a few seconds, unless MySQL is down.
	StuckAge time.Duration
	// Batch bounds the orders one pass looks at per sale.
	Batch int
	now   func() time.Time
}

// NewRepairer returns a Repairer that enqueues lost orders with q and writes stuck
// ones with p.
func NewRepairer(st *store.Activities, sk *stock.Stock, q *task.Enqueuer, p *Persister) *Repairer {
	return &Repairer{store: st, stock: sk, moves: moves.New(sk), settle: settle.New(sk), queue: q, persister: p, MinAge: 10 * time.Second,
		StuckAge: 30 * time.Second, Batch: 500, now: time.Now}
}

// Repair runs one pass over every sale not archived (an archived one holds no order in
// Redis) and returns how many orders it enqueued or wrote.
func (r *Repairer) Repair(ctx context.Context) (int, error) {
	acts, err := r.store.UnarchivedActivities(ctx)
	if err != nil {
		return 0, fmt.Errorf("repair: %w", err)
	}
	n := 0
	for _, a := range acts {
		now := r.now()
		if a.StockBuckets > 1 && now.Before(a.EndsAt.Add(time.Hour)) {
			moved, err := r.moves.FinishMoves(ctx, a.ID, now)
			if err != nil {
				return n, fmt.Errorf("repair: %w", err)
			}
			if moved > 0 {
				slog.Info("repair: applied moves of units between buckets that their movers left", "activity", a.ID, "moves", moved)
			}
		}
		stale, err := r.settle.Stale(ctx, a.ID, now.Add(-r.MinAge), r.Batch)
		if err != nil {
			return n, fmt.Errorf("repair: %w", err)
		}
		terms := stock.Sale{PriceCents: a.PriceCents, PayWindow: time.Duration(a.PayWindowSeconds) * time.Second}
		var stuck []stock.QueuedOrder
		for _, q := range stale {
			o := q.Priced(terms)
			if now.Sub(q.CreatedAt) >= r.StuckAge {
				stuck = append(stuck, o)
				continue
			}
			if q.Claimed {
				continue
			}
			enqueued, err := r.queue.EnqueueMissing(ctx, o)
			if err != nil {
				return n, fmt.Errorf("repair: %w", err)
			}
			if enqueued {
				slog.Info("repair: enqueued an order that had no task", "order", o.OrderID)
				n++
			}
		}
		if len(stuck) == 0 {
			continue
		}
		slog.Info("repair: writing orders queued too long", "activity", a.ID, "orders", len(stuck))
		if err := r.persister.Persist(ctx, stuck); err != nil {
			return n, fmt.Errorf("repair: %w", err)
		}
		n += len(stuck)
	}
	return n, nil
}

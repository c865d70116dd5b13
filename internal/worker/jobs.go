package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"seckill/internal/lock"
	"seckill/internal/queue"
	"seckill/internal/stock"
	"seckill/internal/store"
)

// Job is one of the worker's periodic jobs.
type Job struct {
	Name   string
	Period time.Duration
	Run    func(ctx context.Context) error
}

// RunPeriodic runs each job once per period among all worker replicas: every replica
// ticks, and lock.Client.RunOnce lets only the first one of each period run the job.
// It returns when ctx ends.
func RunPeriodic(ctx context.Context, locks *lock.Client, jobs ...Job) {
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
				_, err := locks.RunOnce(jctx, "seckill:job:"+j.Name, j.Period,
					func(ctx context.Context, _ time.Time) error { return j.Run(ctx) })
				cancel()
				if err != nil && ctx.Err() == nil {
					slog.Warn("periodic job failed", "job", j.Name, "err", err)
				}
			}
		}(j)
	}
}

// Repairer finds reservations whose task never reached the queue (the API died
// between taking the units and enqueueing, or a task was lost) and enqueues them again.
type Repairer struct {
	store *store.Store
	stock *stock.Stock
	queue *queue.Enqueuer
	// MinAge is how old an unclaimed reservation must be before it counts as lost; the
	// API enqueues within its I/O timeout (2 s) or gives the units back.
	MinAge time.Duration
	now    func() time.Time
}

// NewRepairer returns a Repairer.
func NewRepairer(st *store.Store, sk *stock.Stock, q *queue.Enqueuer) *Repairer {
	return &Repairer{store: st, stock: sk, queue: q, MinAge: 5 * time.Second, now: time.Now}
}

// Repair enqueues every queued order older than MinAge that no worker has claimed, and
// returns how many it enqueued. An order whose task still exists is not duplicated: the
// task id is the order id.
func (r *Repairer) Repair(ctx context.Context) (int, error) {
	acts, err := r.store.ListActivities(ctx)
	if err != nil {
		return 0, fmt.Errorf("repair: %w", err)
	}
	n := 0
	for _, a := range acts {
		queued, err := r.stock.QueuedOrders(ctx, a.ID)
		if err != nil {
			return n, fmt.Errorf("repair: %w", err)
		}
		for _, q := range queued {
			if q.Claimed || r.now().Sub(q.CreatedAt) < r.MinAge {
				continue
			}
			o := queue.Order{ID: q.OrderID, ActivityID: a.ID, UserID: q.UserID, Quantity: q.Quantity,
				AmountCents: a.PriceCents * int64(q.Quantity), CreatedAtMs: q.CreatedAt.UnixMilli(),
				ExpiresAtMs: q.CreatedAt.Add(time.Duration(a.PayWindowSeconds) * time.Second).UnixMilli(),
				Limit: q.Limit}
			if err := r.queue.Enqueue(ctx, o); err != nil {
				return n, fmt.Errorf("repair: %w", err)
			}
			slog.Info("repair: enqueued a reservation that had no task", "order", q.OrderID)
			n++
		}
	}
	return n, nil
}

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

// Repairer finds orders that stayed queued too long and writes them to MySQL itself:
// a reservation whose task never reached the queue (the API died between taking the
// units and enqueueing, or a task was lost), or whose task is stuck with a worker that
// died (asynq hands such a task back only after its lease and recovery interval, a
// minute or more). Persisting is idempotent, so a task that runs later finds its order
// stored and is acknowledged.
type Repairer struct {
	store     *store.Store
	stock     *stock.Stock
	persister *Persister
	// MinAge is how long an order must have been queued before it counts as stuck; the
	// API enqueues within its I/O timeout (2 s) or gives the units back.
	MinAge time.Duration
	// Batch bounds the orders one pass writes per sale.
	Batch int
	now   func() time.Time
}

// NewRepairer returns a Repairer that writes stuck orders with p.
func NewRepairer(st *store.Store, sk *stock.Stock, p *Persister) *Repairer {
	return &Repairer{store: st, stock: sk, persister: p, MinAge: 5 * time.Second, Batch: 500, now: time.Now}
}

// Repair writes every order queued for longer than MinAge (up to Batch per sale) and
// returns how many are now settled.
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
		var stuck []queue.Order
		for _, q := range queued {
			if r.now().Sub(q.CreatedAt) < r.MinAge || len(stuck) == r.Batch {
				continue
			}
			stuck = append(stuck, queue.Order{ID: q.OrderID, ActivityID: a.ID, UserID: q.UserID,
				Quantity: q.Quantity, AmountCents: a.PriceCents * int64(q.Quantity),
				CreatedAtMs: q.CreatedAt.UnixMilli(),
				ExpiresAtMs: q.CreatedAt.Add(time.Duration(a.PayWindowSeconds) * time.Second).UnixMilli(),
				Limit:       q.Limit})
		}
		if len(stuck) == 0 {
			continue
		}
		var failed error
		for id, err := range r.persister.Persist(ctx, stuck) {
			if err != nil {
				failed = fmt.Errorf("repair order %s: %w", id, err)
				continue
			}
			n++
		}
		slog.Info("repair: wrote orders that stayed queued", "activity", a.ID, "orders", len(stuck), "settled", n)
		if failed != nil {
			return n, failed
		}
	}
	return n, nil
}

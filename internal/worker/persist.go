// Package worker is what cmd/worker runs: it writes queued orders to MySQL in batches
// and settles them in Redis.
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"seckill/internal/queue"
	"seckill/internal/stock"
	"seckill/internal/store"
)

// Persister writes order tasks to MySQL in batches. Each task's handler hands its
// order to a batch and returns only when that batch is committed in MySQL and settled
// in Redis, so asynq acknowledges a task only once its order is safe; a crash before
// that leaves the task to be retried, and persisting again is harmless.
type Persister struct {
	store   *store.Store
	stock   *stock.Stock
	batch   int
	timeout time.Duration
	in      chan *pending
	metrics *metrics
	// Linger is how long a writer waits for more orders before it writes a batch that
	// is not full; it adds at most that much to the time an order stays queued.
	Linger time.Duration
}

type pending struct {
	order queue.Order
	done  chan error
}

// NewPersister returns a Persister that writes up to batch orders per transaction.
func NewPersister(st *store.Store, sk *stock.Stock, batch int) *Persister {
	return &Persister{store: st, stock: sk, batch: batch, timeout: 30 * time.Second,
		in: make(chan *pending, 4*batch), Linger: 10 * time.Millisecond}
}

// HandleTask is the asynq handler of queue.TypePersistOrder.
func (p *Persister) HandleTask(ctx context.Context, t *asynq.Task) error {
	o, err := queue.ParseOrder(t.Payload())
	if err != nil {
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	pd := &pending{order: o, done: make(chan error, 1)}
	select {
	case p.in <- pd:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-pd.done:
		return err
	case <-ctx.Done():
		return ctx.Err() // the batch may still commit; the retry will find the order stored
	}
}

// Run writes batches with the given number of concurrent writers until ctx ends.
func (p *Persister) Run(ctx context.Context, writers int) {
	for i := 0; i < writers; i++ {
		go p.write(ctx)
	}
}

func (p *Persister) write(ctx context.Context) {
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		var batch []*pending
		select {
		case pd := <-p.in:
			batch = append(batch, pd)
		case <-ctx.Done():
			return
		}
		// Wait up to Linger for the batch to fill: one transaction of many orders costs
		// MySQL little more than one of a single order.
		linger.Reset(p.Linger)
	gather:
		for len(batch) < p.batch {
			select {
			case pd := <-p.in:
				batch = append(batch, pd)
			case <-linger.C:
				break gather
			}
		}
		linger.Stop()
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.timeout)
		results := p.Persist(bctx, orders(batch))
		cancel()
		for _, pd := range batch {
			pd.done <- results[pd.order.ID]
		}
	}
}

func orders(batch []*pending) []queue.Order {
	os := make([]queue.Order, len(batch))
	for i, pd := range batch {
		os[i] = pd.order
	}
	return os
}

// Persist writes a batch of orders and returns, by order id, nil for an order that is
// safely stored (or must not be stored) and an error for one to retry.
//
//  1. Claim the orders in Redis, so the API can no longer give them back. An order
//     that is not queued is either in MySQL already or was given back by the API
//     (its enqueue failed) and must not be stored.
//  2. Write the claimed ones in one transaction; MySQL's guards may fail some.
//  3. Settle them in Redis: they stop being queued; failed ones return their units.
func (p *Persister) Persist(ctx context.Context, batch []queue.Order) map[string]error {
	results := make(map[string]error, len(batch))
	byActivity := map[int64][]queue.Order{}
	for _, o := range batch {
		byActivity[o.ActivityID] = append(byActivity[o.ActivityID], o)
	}

	var claimed []store.NewOrder
	var notQueued []string
	for act, os := range byActivity {
		ids := make([]string, len(os))
		for i, o := range os {
			ids[i] = o.ID
		}
		got, err := p.stock.Claim(ctx, act, ids)
		for _, o := range os {
			switch {
			case err != nil:
				results[o.ID] = err
			case got[o.ID]:
				claimed = append(claimed, newOrder(o))
			default:
				notQueued = append(notQueued, o.ID)
			}
		}
	}
	if len(notQueued) > 0 {
		stored, err := p.store.OrdersByID(ctx, notQueued)
		for _, id := range notQueued {
			results[id] = err
			if _, ok := stored[id]; err == nil && !ok {
				slog.Info("order given back by the API before it was persisted; dropped", "order", id)
				p.metrics.persisted(0, "dropped", 1)
			}
		}
	}
	if len(claimed) == 0 {
		return results
	}

	outcomes, err := p.store.PersistBatch(ctx, claimed)
	if err != nil {
		for _, o := range claimed {
			results[o.ID] = fmt.Errorf("persist orders: %w", err)
		}
		p.metrics.persisted(0, "retry", len(claimed))
		return results
	}
	counts := map[string]int{}
	for _, out := range outcomes {
		switch {
		case out.Existed:
			counts["existed"]++
		default:
			counts[out.Status]++
		}
	}
	p.metrics.persisted(len(claimed), "", 0)
	for outcome, n := range counts {
		p.metrics.persisted(0, outcome, n)
	}
	settle := map[int64][]stock.Settlement{}
	for _, o := range claimed {
		out := outcomes[o.ID]
		if out.Status == store.StatusFailed && !out.Existed {
			slog.Warn("order refused by MySQL", "order", o.ID, "reason", out.Reason)
		}
		settle[o.ActivityID] = append(settle[o.ActivityID],
			stock.Settlement{OrderID: o.ID, UserID: o.UserID, Failed: out.Status == store.StatusFailed})
	}
	for act, ss := range settle {
		err := p.stock.Settle(ctx, act, ss)
		for _, s := range ss {
			results[s.OrderID] = err
		}
	}
	return results
}

func newOrder(o queue.Order) store.NewOrder {
	return store.NewOrder{Limit: o.Limit, Order: store.Order{ID: o.ID, ActivityID: o.ActivityID,
		UserID: o.UserID, Quantity: o.Quantity, AmountCents: o.AmountCents,
		CreatedAt: time.UnixMilli(o.CreatedAtMs).UTC(), ExpiresAt: time.UnixMilli(o.ExpiresAtMs).UTC()}}
}

package sale

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"seckill/internal/lock"
	"seckill/internal/queue"
	"seckill/internal/stock"
)

// A purchase ends by enqueueing its order and releasing the user's lock. Purchases
// that end at the same time do both together (group commit): one asynq task carries
// the orders of up to maxCommitBatch purchases, and one script per sale releases
// their locks. While a commit runs, the purchases that arrive wait for the next one,
// so under a crowd Redis runs two scripts per batch instead of two per purchase, the
// worker writes each batch in one transaction, and a lone purchase waits for nobody.
// (Two commits in flight made batches half as large: more purchases per second in
// Redis, fewer in MySQL; docs/performance.md.)
const (
	maxCommitBatch = 100
	commitFlushes  = 1
)

// commit is one purchase waiting for its order to be enqueued.
type commit struct {
	order queue.Order
	res   stock.Reservation
	err   error         // set before done is closed
	done  chan struct{} // closed once the order is enqueued or given back
}

// committer batches commits. It has no goroutine of its own: a commit that finds
// fewer than commitFlushes running starts one, which runs until nothing waits.
type committer struct {
	flush func([]*commit)

	mu       sync.Mutex
	waiting  []*commit
	flushing int
	running  sync.WaitGroup // the runs under way, so Close can wait for them
}

// add queues c and returns at once; c.done is closed when it is committed.
func (b *committer) add(c *commit) {
	b.mu.Lock()
	b.waiting = append(b.waiting, c)
	start := b.flushing < commitFlushes
	if start {
		b.flushing++
	}
	b.mu.Unlock()
	if start {
		b.running.Go(b.run)
	}
}

// run flushes what waits, batch after batch, until nothing does.
func (b *committer) run() {
	b.mu.Lock()
	for len(b.waiting) > 0 {
		n := min(len(b.waiting), maxCommitBatch)
		batch := b.waiting[:n:n]
		b.waiting = b.waiting[n:]
		if len(b.waiting) == 0 {
			b.waiting = nil // let the backing array go
		}
		b.mu.Unlock()
		b.flush(batch)
		b.mu.Lock()
	}
	b.flushing--
	b.mu.Unlock()
}

// commitBatch enqueues the orders of a batch in one task and answers their
// purchases, then releases their user locks. If the task cannot be enqueued, each
// reservation is given back, and its purchase fails with ErrUnavailable unless the
// worker had claimed the order already (the enqueue worked but its reply was lost).
func (s *Service) commitBatch(batch []*commit) {
	ctx := context.Background()
	orders := make([]queue.Order, len(batch))
	for i, c := range batch {
		orders[i] = c.order
	}
	ectx, cancel := context.WithTimeout(ctx, s.IOTimeout)
	err := s.queue.EnqueueBatch(ectx, orders)
	cancel()
	s.metrics.committed(len(batch))
	var wg sync.WaitGroup
	for _, c := range batch {
		if err == nil {
			close(c.done)
			continue
		}
		wg.Go(func() { // one timeout for the batch, not one per order, if Redis is gone
			if s.giveBack(ctx, c.res) != stock.AlreadyClaimed {
				c.err = fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			close(c.done)
		})
	}
	wg.Wait()
	res := make([]stock.Reservation, len(batch))
	for i, c := range batch {
		res[i] = c.res
	}
	s.releaseLocks(ctx, res...)
}

// releaseLocks releases the user locks that the reserve scripts of res took.
func (s *Service) releaseLocks(ctx context.Context, res ...stock.Reservation) {
	locks := make([]*lock.Lock, len(res))
	for i, r := range res {
		locks[i] = s.locks.Adopt(stock.UserLockKey(r.ActivityID, r.UserID), r.LockToken, r.LockTTL)
	}
	rctx, cancel := context.WithTimeout(ctx, s.IOTimeout)
	defer cancel()
	if err := s.locks.ReleaseAll(rctx, locks...); err != nil {
		slog.Warn("release user locks", "locks", len(locks), "err", err)
	}
}

package sale

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"seckill/internal/stock"
	"seckill/internal/stock/reserve"
	"seckill/internal/task"
)

// A purchase is answered as soon as its reserve script has run. That script records the
// order in the sale's queued hash, and Redis (appendfsync always) writes it to disk
// before it replies, so an acknowledged order is already safe: if its enqueue fails, or
// the API dies first, the worker's repair pass enqueues it from there.
//
// Enqueueing the order and releasing the user's lock come after the answer, batched
// (group commit): one asynq task carries the orders of up to maxCommitBatch purchases,
// and one script per sale releases their locks. One commit runs at a time; the
// purchases that arrive meanwhile go into the next, and a commit of fewer than
// lingerBelow purchases first waits commitLinger for more. Larger batches mean fewer
// tasks, fewer MySQL transactions and fewer scripts, and cost the buyer nothing, since
// nobody waits for the commit: only the same user's next purchase, which waits for the
// lock. The batch sizes were measured together (docs/performance.md).
//
// If more than maxBacklog purchases are waiting for their commit, a purchase is answered
// only once its own commit is done, so the backlog of one process stays bounded when
// Redis falls behind. A failed enqueue is tried again after enqueueRetries' waits
// before the orders are left to the repair pass (one task per order, after 10 s).
const (
	maxCommitBatch = 500
	lingerBelow    = 250
	commitLinger   = 20 * time.Millisecond
	maxBacklog     = 5000
)

// enqueueRetries are the waits before each new attempt of a failed enqueue. A task
// enqueued twice (an attempt that timed out had worked) is harmless: the worker writes
// each order once.
var enqueueRetries = []time.Duration{100 * time.Millisecond, 500 * time.Millisecond}

// commit is one purchase waiting for its order to be enqueued.
type commit struct {
	order stock.QueuedOrder
	res   reserve.Reservation
	// traceparent is the purchase's trace, for the worker's span of its order ("" for
	// a purchase not traced).
	traceparent string
	done        chan struct{} // closed once the order's commit is over, enqueued or not
}

// committer batches commits. It has no goroutine of its own: a commit that finds none
// running starts one, which runs until nothing waits.
type committer struct {
	flush func([]*commit)

	mu       sync.Mutex
	waiting  []*commit
	flushing bool
	inFlight int            // purchases in the batch being committed
	closed   bool           // after close, add commits in its caller
	running  sync.WaitGroup // the run under way, so close can wait for it
}

// add queues c and returns at once, telling whether the backlog is so long that the
// caller must wait for c.done before it answers. After close, it commits c itself.
func (b *committer) add(c *commit) (wait bool) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.flush([]*commit{c})
		return false
	}
	b.waiting = append(b.waiting, c)
	wait = len(b.waiting) > maxBacklog
	start := !b.flushing
	if start {
		b.flushing = true
		b.running.Add(1) // under mu, so close, which sets closed under mu, waits for this run
	}
	b.mu.Unlock()
	if start {
		go func() {
			defer b.running.Done()
			b.run()
		}()
	}
	return wait
}

// close stops starting runs and waits for the one under way, up to ctx's end. It
// returns how many purchases were still waiting for their commit or in it then.
func (b *committer) close(ctx context.Context) int {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	done := make(chan struct{})
	go func() {
		b.running.Wait()
		close(done)
	}()
	select {
	case <-done:
		return 0
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.waiting) + b.inFlight
	}
}

// run flushes what waits, batch after batch, until nothing does.
func (b *committer) run() {
	b.mu.Lock()
	for len(b.waiting) > 0 {
		if len(b.waiting) < lingerBelow {
			b.mu.Unlock()
			time.Sleep(commitLinger)
			b.mu.Lock()
		}
		n := min(len(b.waiting), maxCommitBatch)
		batch := b.waiting[:n:n]
		b.waiting = b.waiting[n:]
		if len(b.waiting) == 0 {
			b.waiting = nil // let the backing array go
		}
		b.inFlight = n
		b.mu.Unlock()
		b.flush(batch)
		b.mu.Lock()
		b.inFlight = 0
	}
	b.flushing = false
	b.mu.Unlock()
}

// commitBatch enqueues the orders of a batch in one task, then releases their user
// locks. A failed enqueue leaves the orders queued in Redis, where the worker's repair
// pass finds them (worker.Repairer's MinAge after they were taken) and enqueues them.
func (s *Purchases) commitBatch(batch []*commit) {
	ctx := context.Background()
	orders := make([]stock.QueuedOrder, len(batch))
	res := make([]reserve.Reservation, len(batch))
	var traces map[string]string
	for i, c := range batch {
		orders[i], res[i] = c.order, c.res
		if c.traceparent != "" {
			if traces == nil {
				traces = map[string]string{}
			}
			traces[c.order.OrderID] = c.traceparent
		}
	}
	err := s.enqueue(task.WithTraceparents(ctx, traces), orders)
	s.metrics.committed(len(batch), err)
	if err != nil {
		slog.Warn("enqueue orders: left for the worker's repair pass", "orders", len(batch), "err", err)
	}
	s.releaseLocks(ctx, res...)
	for _, c := range batch {
		close(c.done)
	}
}

// enqueue enqueues orders in one task, trying again after each of enqueueRetries.
func (s *Purchases) enqueue(ctx context.Context, orders []stock.QueuedOrder) error {
	for attempt := 0; ; attempt++ {
		ectx, cancel := context.WithTimeout(ctx, s.IOTimeout)
		err := s.queue.EnqueueBatch(ectx, orders)
		cancel()
		if err == nil || attempt == len(enqueueRetries) {
			return err
		}
		time.Sleep(enqueueRetries[attempt])
	}
}

// releaseLocks releases the user locks that the reserve scripts of res took.
func (s *Purchases) releaseLocks(ctx context.Context, res ...reserve.Reservation) {
	rctx, cancel := context.WithTimeout(ctx, s.IOTimeout)
	defer cancel()
	if err := s.reserver.ReleaseUserLocks(rctx, res...); err != nil {
		slog.Warn("release user locks", "locks", len(res), "err", err)
	}
}

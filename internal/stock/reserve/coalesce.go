package reserve

import (
	"context"
	"sync"
	"time"

	"seckill/internal/stock"
)

// Purchases of one sale that wait in this process at the same moment go to Redis in one
// reserveScript call. Redis runs one script call of ~N purchases for much less than N
// calls of one: the call's own cost (reading the request, looking up and entering the
// script, the reply, and with appendfsync always the write to disk of the event loop's
// turn) is paid once. Nothing waits for a batch to fill: a purchase goes out at once
// while fewer than callsPerSale calls of its sale are in flight, and those that arrive
// meanwhile go together in the next call when one comes back, so a quiet sale sees no
// added latency and a crowded one gets batches as large as its arrival rate times one
// round trip (at most maxCoalesced). One call in flight rather than two makes the calls
// of a crowd twice as large and half as many, and each call that writes costs Redis the
// fsync of its turn, about 85 µs on the machine of docs/benchmarks.md.
const (
	callsPerSale = 1
	maxCoalesced = 64
)

// reserveCall is one purchase on its way through the coalescer.
type reserveCall struct {
	ctx         context.Context
	deadline    time.Time // Reservation.Timeout's, zero for none: it ends the call as ctx's would
	r           Reservation
	fingerprint string
	b           stock.Bucket // the bucket it goes to

	reply []any     // its reply from reserveScript, with
	terms saleTerms // the sale's terms its call answered, or
	err   error     // the call's failure (the script may have run)
	done  chan struct{}
}

// coalescer gathers reserveCalls per sale. It has no goroutine of its own: the
// purchase that finds a free slot sends its call itself, and the call that comes back
// with purchases waiting hands them to a new goroutine, so its own caller answers now.
type coalescer struct {
	send func(ctx context.Context, calls []*reserveCall) // fills in every call's reply or err

	mu    sync.Mutex
	sales map[stock.Bucket]*saleCalls

	calls int64 // script calls sent (for tests, under mu)
}

// saleCalls is one sale's calls in flight and the purchases waiting for the next.
type saleCalls struct {
	inFlight int
	waiting  []*reserveCall
}

func newCoalescer(send func(context.Context, []*reserveCall)) *coalescer {
	return &coalescer{send: send, sales: map[stock.Bucket]*saleCalls{}}
}

// do returns once c has its reply or error.
func (b *coalescer) do(c *reserveCall) {
	id := c.b
	b.mu.Lock()
	q := b.sales[id]
	if q == nil {
		q = &saleCalls{}
		b.sales[id] = q
	}
	if q.inFlight >= callsPerSale {
		q.waiting = append(q.waiting, c)
		b.mu.Unlock()
		<-c.done
		return
	}
	q.inFlight++
	b.calls++
	b.mu.Unlock()
	b.run(id, q, []*reserveCall{c})
}

// run sends one call for batch, answers its purchases, and passes what waits on.
func (b *coalescer) run(id stock.Bucket, q *saleCalls, batch []*reserveCall) {
	ready := batch[:0:0]
	now := time.Now()
	for _, c := range batch { // a purchase whose time ran out while waiting is not sent
		err := c.ctx.Err()
		if err == nil && !c.deadline.IsZero() && !now.Before(c.deadline) {
			err = context.DeadlineExceeded
		}
		if err != nil {
			c.err = err
			close(c.done)
			continue
		}
		ready = append(ready, c)
	}
	if len(ready) > 0 {
		ctx, cancel := batchContext(ready)
		b.send(ctx, ready)
		cancel()
		for _, c := range ready {
			close(c.done)
		}
	}
	b.mu.Lock()
	if len(q.waiting) == 0 {
		if q.inFlight--; q.inFlight == 0 {
			delete(b.sales, id)
		}
		b.mu.Unlock()
		return
	}
	n := min(len(q.waiting), maxCoalesced)
	next := q.waiting[:n:n]
	if q.waiting = q.waiting[n:]; len(q.waiting) == 0 {
		q.waiting = nil // let the backing array go
	}
	b.calls++
	b.mu.Unlock()
	go b.run(id, q, next)
}

// batchContext is a context for one call of calls: it ends at the earliest of their
// deadlines (their contexts' and their own), and nothing of theirs cancels it before.
func batchContext(calls []*reserveCall) (context.Context, context.CancelFunc) {
	var deadline time.Time
	earliest := func(d time.Time) {
		if !d.IsZero() && (deadline.IsZero() || d.Before(deadline)) {
			deadline = d
		}
	}
	for _, c := range calls {
		d, _ := c.ctx.Deadline()
		earliest(d)
		earliest(c.deadline)
	}
	ctx := context.WithoutCancel(calls[0].ctx)
	if deadline.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, deadline)
}

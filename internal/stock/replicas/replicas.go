// Package replicas confirms that a purchase's reservation reached the replicas of its
// sale's master before the purchase is answered (Replicas.Confirm), so a failover does
// not lose an acknowledged order.
package replicas

//go:generate go test -run ^TestScripts$ -args -update

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/stock"
)

// Errors of Replicas.Confirm.
var (
	// ErrNotReplicated means fewer replicas than required acknowledged the reservation
	// in time. It may still be there; a retry with the same Idempotency-Key finds it.
	ErrNotReplicated = errors.New("the reservation is not yet held by enough replicas")
	// ErrReservationLost means the sale's master no longer holds the reservation: a
	// replica that had not received it took over.
	ErrReservationLost = errors.New("the reservation was lost in a failover")
)

// barrierScript checks that orders are still queued on the master it runs on, and
// writes, so that the WAIT after it on the same connection covers every write the
// master made before it: the replication stream is ordered, so a replica that has the
// barrier has the reservations that were answered before it was sent (barrier.lua).
//
//go:embed barrier.lua
var barrierLua string

var barrierScript = stock.NewScript(barrierLua, nil)

// Replicas confirms that replicas hold reservations before a purchase is answered.
// Replication is asynchronous: a master that dies can take its last writes with it, and
// the replica promoted in its place never had them. Confirm waits until n replicas of
// the sale's master have a reservation, grouping the purchases that wait at the same
// moment: one barrier script per sale and one WAIT per master, on one connection (a
// pipeline of a plain client), for all of them. WAIT only counts for the connection
// that wrote, which is why it is not sent through the auto-pipeliner.
//
// WAIT is best effort: a replica that acknowledged can still lose the election to one
// that did not. Run the masters with min-replicas-to-write so that a master cut off
// from its replicas refuses reservations instead of taking them alone.
type Replicas struct {
	rdb     redis.UniversalClient
	n       int
	timeout time.Duration

	mu      sync.Mutex
	masters map[string]*barrierQueue // by master address

	infoRefused sync.Once // the one warning when an ACL refuses INFO (Collector)
}

// New returns a Replicas that waits for n replicas, at most timeout per WAIT,
// on rdb: a *redis.Client (one server, or a master found through Sentinels) or a
// *redis.ClusterClient. Give it the client itself, not its auto-pipeliner. The timeout
// must stay below rdb's read timeout.
func New(rdb redis.UniversalClient, n int, timeout time.Duration) *Replicas {
	return &Replicas{rdb: rdb, n: n, timeout: timeout, masters: map[string]*barrierQueue{}}
}

// barrierQueue is the group commit of one master: one barrier runs at a time, and the
// confirmations that arrive meanwhile go into the next.
type barrierQueue struct {
	mu      sync.Mutex
	node    *redis.Client
	waiting []*confirmation
	running bool
}

type confirmation struct {
	b       stock.Bucket
	orderID string // "" to confirm only that the master's writes so far are replicated
	err     error
	done    chan struct{}
}

// Confirm returns nil once n replicas of the master of a sale's bucket (Reserved.Bucket)
// hold the reservation of orderID (and everything written before it). With orderID "" it only waits for the
// master's writes so far (a replayed purchase, whose order may be settled already).
// Errors: ErrReservationLost, ErrNotReplicated, or a Redis error.
//
// While the sale's slot moves to another master (MOVED, ASK, TRYAGAIN), the barrier is
// tried again on the master the refreshed slot map names, until ctx ends.
func (r *Replicas) Confirm(ctx context.Context, b stock.Bucket, orderID string) error {
	return stock.WhileMoving(ctx, r.rdb, func() error { return r.confirmOnce(ctx, b, orderID) })
}

func (r *Replicas) confirmOnce(ctx context.Context, b stock.Bucket, orderID string) error {
	node, addr, err := r.master(ctx, b)
	if err != nil {
		return fmt.Errorf("confirm replication: %w", err)
	}
	c := &confirmation{b: b, orderID: orderID, done: make(chan struct{})}
	r.mu.Lock()
	q := r.masters[addr]
	if q == nil {
		q = &barrierQueue{}
		r.masters[addr] = q
	}
	r.mu.Unlock()

	q.mu.Lock()
	q.node = node
	q.waiting = append(q.waiting, c)
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		go r.run(q)
	}
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return fmt.Errorf("confirm replication: %w", ctx.Err())
	}
}

// Connected returns nil while every master has at least n replicas connected, so that
// a purchase can be confirmed whichever master holds its sale; else an error naming a
// master short of them. Readiness asks it. Where an ACL refuses INFO it cannot tell,
// and returns nil (logged once).
func (r *Replicas) Connected(ctx context.Context) error {
	return r.eachMaster(ctx, func(addr string, connected int, err error) error {
		switch {
		case errors.Is(err, errInfoRefused):
			return nil // cannot tell; each purchase's WAIT still answers 503 without replicas
		case err != nil:
			return err
		case connected < r.n:
			return fmt.Errorf("%d of %d replicas connected to the master %q", connected, r.n, addr)
		}
		return nil
	})
}

// master returns the client of the master that holds a bucket's keys now, and its
// address.
func (r *Replicas) master(ctx context.Context, b stock.Bucket) (*redis.Client, string, error) {
	switch c := r.rdb.(type) {
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, stock.SaleKey(b))
		if err != nil {
			return nil, "", err
		}
		return node, node.Options().Addr, nil
	case *redis.Client:
		return c, "", nil
	}
	return nil, "", fmt.Errorf("replicas: unsupported client %T", r.rdb)
}

// run confirms what waits, barrier after barrier, until nothing does.
func (r *Replicas) run(q *barrierQueue) {
	for {
		q.mu.Lock()
		batch, node := q.waiting, q.node
		q.waiting = nil
		if len(batch) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		r.barrier(node, batch)
		for _, c := range batch {
			close(c.done)
		}
	}
}

// barrier runs one barrier script per bucket of batch and one WAIT, pipelined on one
// connection of node, and sets each confirmation's outcome.
func (r *Replicas) barrier(node *redis.Client, batch []*confirmation) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*r.timeout+time.Second)
	defer cancel()
	ids := map[stock.Bucket][]any{}
	var sales []stock.Bucket
	for _, c := range batch {
		if _, ok := ids[c.b]; !ok {
			sales = append(sales, c.b)
			ids[c.b] = []any{}
		}
		if c.orderID != "" {
			ids[c.b] = append(ids[c.b], c.orderID)
		}
	}
	checks := make(map[stock.Bucket]*redis.Cmd, len(sales))
	var wait *redis.Cmd
	_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range sales {
			checks[id] = barrierScript.Eval(ctx, p, []string{stock.QueuedKey(id), stock.BarrierKey(id), stock.SaleKey(id)}, ids[id]...)
		}
		wait = p.Do(ctx, "WAIT", r.n, r.timeout.Milliseconds())
		return nil
	})
	acked, waitErr := wait.Int64()
	if waitErr == nil && acked < int64(r.n) {
		// Asked once more before a purchase answers 503: a master blocked a moment (a
		// slot's MIGRATE waits for its target) handles a replica's acknowledgement only
		// after WAIT's timeout has passed.
		acked, waitErr = node.Do(ctx, "WAIT", r.n, r.timeout.Milliseconds()).Int64()
	}
	missing := map[string]bool{}
	for _, c := range batch {
		check := checks[c.b]
		lost, err := check.StringSlice()
		switch {
		case err != nil:
			c.err = fmt.Errorf("replication barrier: %w", err)
			continue
		case waitErr != nil:
			c.err = fmt.Errorf("wait for replicas: %w", waitErr)
			continue
		}
		for _, id := range lost {
			missing[id] = true
		}
		switch {
		case c.orderID != "" && missing[c.orderID]:
			c.err = ErrReservationLost
		case acked < int64(r.n):
			c.err = fmt.Errorf("%w: %d of %d replicas within two waits of %v", ErrNotReplicated, acked, r.n, r.timeout)
		}
	}
}

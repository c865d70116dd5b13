// Package worker is what cmd/worker runs: it writes queued orders to MySQL in batches
// and settles them in Redis.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"seckill/internal/outage"
	"seckill/internal/stock"
	"seckill/internal/stock/lifecycle"
	"seckill/internal/stock/settle"
	"seckill/internal/store"
	"seckill/internal/task"
	"seckill/internal/telemetry"
)

// Outages reads the MySQL outages as the shared record holds them now.
type Outages interface {
	Read(ctx context.Context) (outage.Outages, error)
}

var _ Outages = (*outage.Record)(nil)

// Persister writes the orders of a task (queue.TypePersist) to MySQL in
// transactions of up to Batch orders. Its handler returns only once every order is
// committed in MySQL and settled in Redis, so asynq acknowledges the task only then; a
// crash before leaves the task to be retried, and persisting again is harmless.
type Persister struct {
	store      *store.Batches
	orders     *store.Orders
	activities *store.Activities
	stock      *stock.Stock
	sales      *lifecycle.Rebuilds
	settle     *settle.Settler
	outages    Outages
	metrics    *metrics

	// Batch is the most orders written in one transaction.
	Batch int
	// LostSale, when set, is told of a sale Redis has lost that a task's orders belong
	// to (to start its rebuild; the task is retried meanwhile).
	LostSale func(activityID int64)
	// Tracer, when set, gives each order that came with a sampled trace (its task's
	// headers: queue.Traceparents) a span of its persisting, under the purchase's span,
	// with the Redis scripts and the MySQL transaction its batch ran (internal/telemetry).
	Tracer trace.TracerProvider

	// beforeWrite, set by tests, runs between a batch's claim and its write to MySQL.
	beforeWrite func()
}

// NewPersister returns a Persister that writes up to batch orders per transaction
// (SECKILL_PERSIST_BATCH; config.Load has its default), each with the deadline in force
// of its pay window as MySQL outages extended it.
func NewPersister(st *store.Batches, orders *store.Orders, activities *store.Activities, sk *stock.Stock, outages Outages, batch int) *Persister {
	return &Persister{store: st, orders: orders, activities: activities, stock: sk, sales: lifecycle.NewRebuilds(sk), settle: settle.New(sk), outages: outages, Batch: batch}
}

// HandleTask is the asynq handler of queue.TypePersist, and of queue.TypePersistV1 (the
// previous release's).
func (p *Persister) HandleTask(ctx context.Context, t *asynq.Task) error {
	orders, err := task.ParseOrders(t.Type(), t.Payload())
	if err != nil {
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	if p.Tracer == nil {
		return p.Persist(ctx, orders)
	}
	traced := telemetry.StartOrders(ctx, p.Tracer, task.Traceparents(t), "persist order",
		attribute.String("messaging.system", "asynq"), attribute.String("messaging.destination.name", task.Queue),
		attribute.Int("task.orders", len(orders)))
	err = p.Persist(telemetry.WithOrders(ctx, traced), orders)
	traced.End(err)
	return err
}

// Persist writes orders in transactions of up to Batch orders. It returns nil once every
// order is safely stored (or must not be stored), and otherwise the error of the first
// order to retry.
//
// A batch whose sale is being rebuilt (lost in Redis and not back yet, or claimed in
// the state the rebuild replaces: store.ErrClaimedBeforeRebuild) is tried again here,
// for up to rebuildWait, and claimed or adopted on the rebuilt state: the task is at
// hand, and a Redis that lost the sale may have lost the task's retry with it.
func (p *Persister) Persist(ctx context.Context, orders []stock.QueuedOrder) error {
	for len(orders) > 0 {
		n := min(len(orders), max(1, p.Batch))
		results := p.persistBatch(ctx, orders[:n])
		for pause := 10 * time.Millisecond; waitsForRebuild(results) && pause < rebuildWait; pause *= 2 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(pause):
			}
			results = p.persistBatch(ctx, orders[:n])
		}
		for id, err := range results {
			if err != nil {
				return fmt.Errorf("order %s: %w", id, err)
			}
		}
		orders = orders[n:]
	}
	return nil
}

// rebuildWait bounds how long Persist holds a batch whose sale is being rebuilt before
// it leaves it to a retry of the task; a rebuild takes milliseconds to a few seconds.
const rebuildWait = 10 * time.Second

// errSaleMissing is an order of a sale Redis has lost and not rebuilt yet.
var errSaleMissing = errors.New("its sale is lost in Redis and not rebuilt yet")

// waitsForRebuild reports whether an order of a batch waits for its sale's rebuild.
func waitsForRebuild(results map[string]error) bool {
	for _, err := range results {
		if errors.Is(err, errSaleMissing) || errors.Is(err, store.ErrClaimedBeforeRebuild) {
			return true
		}
	}
	return false
}

// persistBatch writes one batch of orders and returns, by order id, nil for an order
// that is safely stored (or must not be stored) and an error for one to retry.
//
//  1. Claim the orders in Redis, so the API can no longer give them back (the sale's
//     generation goes up; MySQL records it with the orders: see stock's rebuild.go). An order
//     that is not queued is either in MySQL already or was given back by the API
//     (its reserve script's reply was lost, and the buyer got 503) and must not be
//     stored.
//  2. Write the claimed ones in one transaction; MySQL's guards may fail some, and
//     MySQL refuses the whole batch if the sale was rebuilt since the claim (its
//     epoch: see stock's rebuild.go).
//  3. Settle them in Redis: they stop being queued; failed ones return their units.
func (p *Persister) persistBatch(ctx context.Context, batch []stock.QueuedOrder) map[string]error {
	results := make(map[string]error, len(batch))
	byActivity := map[int64][]stock.QueuedOrder{}
	for _, o := range batch {
		byActivity[o.ActivityID] = appendSized(byActivity[o.ActivityID], o, len(batch))
	}

	claimed := make([]store.NewOrder, 0, len(batch))
	var notQueued []stock.QueuedOrder
	for act, os := range byActivity {
		refs := make([]settle.OrderRef, len(os))
		for i, o := range os {
			refs[i] = settle.OrderRef{OrderID: o.OrderID, Buyer: o.Buyer}
		}
		step := telemetry.OrdersFrom(ctx).Step(orderIDs(os), "redis claim", telemetry.Redis...)
		got, err := p.settle.Claim(ctx, act, refs)
		step.End(err)
		for _, o := range os {
			c, ok := got[o.OrderID]
			switch {
			case err != nil:
				results[o.OrderID] = err
			case ok:
				n := store.RowOf(o)
				n.Bucket, n.Gen, n.Epoch = c.Bucket, c.Gen, c.Epoch
				claimed = append(claimed, n)
			default:
				notQueued = append(notQueued, o)
			}
		}
	}
	claimed = append(claimed, p.adoptOrphans(ctx, notQueued, results)...)
	if len(claimed) == 0 {
		return results
	}
	if p.beforeWrite != nil {
		p.beforeWrite()
	}

	traced := telemetry.OrdersFrom(ctx)
	ids := make([]string, len(claimed))
	for i := range claimed {
		ids[i] = claimed[i].ID
		claimed[i].Traceparent = traced.Traceparent(claimed[i].ID) // for its order.created event
	}
	outages, err := p.outages.Read(ctx)
	var outcomes map[string]store.Outcome
	if err == nil {
		step := traced.Step(ids, "mysql transaction", append(telemetry.MySQL, attribute.String("db.operation.name", "INSERT orders"))...)
		outcomes, err = p.store.PersistBatch(ctx, claimed, outages)
		step.End(err)
	}
	if err != nil {
		for _, o := range claimed {
			results[o.ID] = fmt.Errorf("persist orders: %w", err)
		}
		p.metrics.handled("retry", len(claimed))
		return results
	}
	p.metrics.batchWritten(len(claimed))
	settling := map[int64][]settle.Settlement{}
	handled := map[string]int{} // orders by outcome, counted once per batch
	for _, o := range claimed {
		out := outcomes[o.ID]
		switch {
		case out.Existed:
			handled["existed"]++
		case out.Status == store.StatusFailed:
			slog.WarnContext(traced.Context(ctx, o.ID), "order refused by MySQL", "order", o.ID, "reason", out.Reason)
			fallthrough
		default:
			handled[out.Status]++
			p.metrics.stored(o.CreatedAt)
		}
		s := settle.Settlement{OrderID: o.ID, Buyer: o.Buyer, Failed: out.Status == store.StatusFailed, Group: deref(o.GroupID)}
		if o.VariantIndex != nil {
			s.Variant = stock.VariantAt(*o.VariantIndex)
		}
		settling[o.ActivityID] = appendSized(settling[o.ActivityID], s, len(claimed))
	}
	for outcome, n := range handled {
		p.metrics.handled(outcome, n)
	}
	for act, ss := range settling {
		ids := make([]string, len(ss))
		for i, s := range ss {
			ids[i] = s.OrderID
		}
		step := traced.Step(ids, "redis settle", telemetry.Redis...)
		err := p.settle.Settle(ctx, act, ss)
		step.End(err)
		for _, s := range ss {
			results[s.OrderID] = err
		}
	}
	return results
}

// adoptOrphans decides about the orders of a batch that Redis no longer holds as
// queued: one MySQL has is done (a task delivered again); one the API gave back (its
// buyer got 503), or one of an archived sale, is dropped; one whose state Redis lost with its sale's, after it was
// acknowledged, is adopted (its units taken again on the rebuilt sale) and returned to
// be persisted, or stored failed if no units are left, if its buyer would pass a limit,
// or if it is a seat (its group was lost with the sale). A sale not rebuilt yet leaves its
// orders to a retry of the task. results gets each one decided here.
func (p *Persister) adoptOrphans(ctx context.Context, notQueued []stock.QueuedOrder, results map[string]error) []store.NewOrder {
	if len(notQueued) == 0 {
		return nil
	}
	ids := make([]string, len(notQueued))
	for i, o := range notQueued {
		ids[i] = o.OrderID
	}
	stored, err := p.orders.OrdersByID(ctx, ids)
	byActivity := map[int64][]stock.QueuedOrder{}
	for _, o := range notQueued {
		results[o.OrderID] = err
		if _, ok := stored[o.OrderID]; err == nil && !ok {
			byActivity[o.ActivityID] = append(byActivity[o.ActivityID], o)
		}
	}
	var adopted []store.NewOrder
	for act, qs := range byActivity {
		got, epoch, err := p.sales.Adopt(ctx, act, qs)
		if archived, aerr := p.archived(ctx, act, got); aerr != nil || archived {
			for _, q := range qs {
				results[q.OrderID] = aerr
			}
			if archived {
				slog.Warn("orders of an archived sale that MySQL does not have: given back by the API before; dropped",
					"activity", act, "orders", len(qs))
				p.metrics.handled("dropped", len(qs))
			}
			continue
		}
		for _, q := range qs {
			switch {
			case err != nil:
				results[q.OrderID] = err
			case got[q.OrderID] == lifecycle.Adopted:
				slog.Warn("order whose Redis state was lost with its sale's: adopted on the rebuilt sale", "order", q.OrderID)
				n := store.RowOf(q)
				n.Epoch = epoch
				adopted = append(adopted, n)
				p.metrics.handled("adopted", 1)
			case orphanReasons[got[q.OrderID]] != "":
				reason := orphanReasons[got[q.OrderID]]
				_, results[q.OrderID] = p.store.StoreFailed(ctx, store.RowOf(q), reason)
				p.metrics.handled(store.StatusFailed, 1)
			case got[q.OrderID] == lifecycle.SaleMissing:
				results[q.OrderID] = errSaleMissing
				if p.LostSale != nil {
					p.LostSale(act)
				}
			default:
				slog.Info("order given back by the API before it was persisted; dropped", "order", q.OrderID)
				p.metrics.handled("dropped", 1)
			}
		}
	}
	return adopted
}

// archived reports whether a sale whose orders Adopt found missing (got) is archived.
// An archived sale was settled when it was, with no order queued in Redis (every order
// it took in MySQL, each settled there after its write): an order of it that MySQL does
// not have was given back by the API (its buyer got 503), and is dropped.
func (p *Persister) archived(ctx context.Context, activityID int64, got map[string]lifecycle.Adoption) (bool, error) {
	missing := false
	for _, a := range got {
		missing = missing || a == lifecycle.SaleMissing
	}
	if !missing {
		return false, nil
	}
	a, err := p.activities.GetActivity(ctx, activityID)
	if err != nil {
		return false, err
	}
	return a.Archived(), nil
}

// orphanReasons are the failure reasons of the orphans Adopt did not adopt, each
// beginning with OrphanReasonPrefix.
var orphanReasons = map[lifecycle.Adoption]string{
	lifecycle.OrphanNoStock:   OrphanReasonPrefix + " order with its sale's state, and no units were left when it came back",
	lifecycle.OrphanOverLimit: OrphanReasonPrefix + " order with its sale's state, and by the time it came back its buyer had reached the sale's limit again",
	lifecycle.OrphanSeat:      OrphanReasonPrefix + " seat with its sale's state, and its group with it",
}

// OrphanReasonPrefix begins the failure reason of an acknowledged order that Redis lost
// with its sale's state and that could not be adopted on the rebuilt sale.
const OrphanReasonPrefix = "Redis lost this"

// appendSized appends v to s, which it makes with room for n when it has none: a
// batch's orders of one sale, most often all of them, without growing their slice.
func appendSized[T any](s []T, v T, n int) []T {
	if s == nil {
		s = make([]T, 0, n)
	}
	return append(s, v)
}

// orderIDs are the ids of orders.
func orderIDs(orders []stock.QueuedOrder) []string {
	ids := make([]string, len(orders))
	for i, o := range orders {
		ids[i] = o.OrderID
	}
	return ids
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

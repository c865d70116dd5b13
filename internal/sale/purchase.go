package sale

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"seckill/internal/apitime"
	"seckill/internal/stock"
	"seckill/internal/stock/group"
	"seckill/internal/stock/reserve"
	"seckill/internal/store"
	"seckill/internal/telemetry"
	"seckill/lock"
)

// BuyRequest is a buyer's purchase as the API takes it: the purchase (a seat in a group
// with Group or OpenGroup, which Seat sets; PassExpires the expiry of the buyer's
// verified pass in a waiting-room sale), and the variant its body names.
type BuyRequest struct {
	stock.Purchase
	// VariantName is the variant the body names, nil for none: Buy finds it among the
	// sale's variants (Purchase.Variant), or answers a *FieldError naming variant.
	VariantName *string
}

// Buy takes the units from stock and queues the order for MySQL. It returns the
// queued order; with replayed true it returns the order an earlier request with the
// same Idempotency-Key made, and nothing new happened.
//
// The units and the user's lock are taken by one script. While a purchase of the same
// user in the same sale is in flight, Buy waits up to LockWait, then returns
// stock.ErrBusy. Buy returns once that script has run: the order is then enqueued, and
// the lock released, in the background together with those of other purchases (see
// commit.go); an order whose enqueue fails is enqueued by the worker's repair pass.
// The purchase runs to its end even if ctx is cancelled (the client went away), so it
// never stops half-done. A variant named by name (VariantName) is found first: a name
// that is none of the sale's is a *FieldError.
func (s *Purchases) Buy(ctx context.Context, r BuyRequest) (o Order, replayed bool, err error) {
	o, _, replayed, err = s.buy(ctx, r)
	return o, replayed, err
}

// buy is Buy, for a purchase or a seat in a group; for a seat it returns the group as
// the seat left it (nil for a replay: GetOrder then tells the group).
func (s *Purchases) buy(ctx context.Context, r BuyRequest) (o Order, g *group.Group, replayed bool, err error) {
	if r.Quantity < 1 || r.Quantity > MaxPerUserLimit {
		return Order{}, nil, false, &FieldError{"quantity", "must be between 1 and the sale's per-user limit"}
	}
	if r.VariantName != nil {
		if r.Variant, err = s.variants.Variant(ctx, r.ActivityID, *r.VariantName); err != nil {
			return Order{}, nil, false, err
		}
	}
	ctx = context.WithoutCancel(ctx)
	if s.archived.known(r.ActivityID) {
		o, replayed, err := s.archivedPurchase(ctx, r)
		return o, nil, replayed, err
	}
	now := s.now()
	if r.IdempotencyKey == "" { // most of a crowd meets a sold-out sale: say so before minting ids
		if err := s.reserver.FlaggedSoldOut(reserve.Reservation{Purchase: r.Purchase, Now: now}); err != nil {
			return Order{}, nil, false, s.variants.namedSoldOut(ctx, r, err)
		}
	}
	res := reserve.Reservation{Purchase: r.Purchase, OrderID: newOrderID(r.ActivityID, now), Now: now,
		LockToken: lock.NewToken(), LockTTL: s.LockTTL, PerSecond: s.UserRate, RedisClock: !s.judgeByNow}
	if r.OpenGroup {
		res.Group = newOrderID(r.ActivityID, now) // a group id has an order id's form
	}
	rctx, span := telemetry.Child(ctx, "redis reserve", trace.SpanKindClient, telemetry.Redis...)
	traced := span.IsRecording() // the request's trace is sampled: the order carries it on
	if traced {
		span.SetAttributes(attribute.String("order.id", res.OrderID), attribute.Int64("activity.id", r.ActivityID))
	}
	got, err := s.reserve(rctx, &res)
	span.End()
	switch {
	case errors.Is(err, stock.ErrNoSale):
		if err := s.catalog.MissingSale(ctx, r.ActivityID); !errors.Is(err, errArchivedSale) {
			return Order{}, nil, false, err
		}
		o, replayed, err := s.archivedPurchase(ctx, r)
		return o, nil, replayed, err
	case errors.Is(err, stock.ErrNoVariant): // the body's field, named as it is spelled
		return Order{}, nil, false, &FieldError{"variant", "is required in a sale of variants, and must name one of them"}
	case err != nil:
		return Order{}, nil, false, s.variants.namedSoldOut(ctx, r, err)
	case got.Replayed:
		if err := s.confirmReplicated(ctx, got.Bucket, ""); err != nil {
			return Order{}, nil, false, err
		}
		o, err := s.orderViews.GetOrder(ctx, got.OrderID, Caller{Buyer: r.Buyer})
		return o, nil, true, err
	}
	// Before the commit, which may let the worker settle the order: the barrier looks
	// for it among the queued ones. A reservation the replicas do not confirm is given
	// back, so its 503 means, as any other, that nothing was taken. (If the master dies
	// before the rollback reaches a replica, the order may still appear; a retry with
	// the same Idempotency-Key then returns it.)
	if err := s.confirmReplicated(ctx, got.Bucket, res.OrderID); err != nil {
		s.abandon(ctx, res)
		return Order{}, nil, false, err
	}

	q := got.Order
	c := &commit{order: q, res: res, done: make(chan struct{})}
	if traced { // else Traceparent would look through ctx again to find no sampled span
		c.traceparent = telemetry.Traceparent(ctx)
	}
	if s.commits.add(c) {
		<-c.done
	}
	names, err := s.variants.namesOf(ctx, q) // the variant was found by its name: the sale's are known
	if err != nil {
		return Order{}, nil, false, err
	}
	return queuedView(q, names), got.Group, false, nil
}

// confirmReplicated waits until Replicas confirms a reservation in bucket b, when it is
// set.
func (s *Purchases) confirmReplicated(ctx context.Context, b stock.Bucket, orderID string) error {
	if s.Replicas == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.IOTimeout)
	defer cancel()
	if err := s.Replicas.Confirm(cctx, b, orderID); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// firstBackoff is the first wait for a busy user lock; waits double up to 50 ms.
const firstBackoff = 2 * time.Millisecond

// reserve runs the reserve script, waiting for the user's lock up to LockWait. A
// release wakes the waiter at once; short backoffs cover a release missed while
// subscribing. Each attempt runs at the current time, left in res.Now.
func (s *Purchases) reserve(ctx context.Context, res *reserve.Reservation) (reserve.Reserved, error) {
	start := time.Now()
	deadline := start.Add(s.LockWait)
	backoff := firstBackoff
	waited := false
	defer func() {
		if waited {
			s.metrics.waited(time.Since(start))
		}
	}()
	res.Timeout = s.IOTimeout
	for {
		got, err := s.reserver.Reserve(ctx, *res)
		switch {
		case errors.Is(err, stock.ErrBusy): // wait for the lock, below
		case err == nil, stock.IsRefusal(err):
			return got, err
		default:
			// The script may have run before its reply was lost: give back what it may
			// have taken and the lock.
			s.abandon(ctx, *res)
			return got, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return got, err
		}
		waited = true
		wctx, cancel := context.WithTimeout(ctx, min(backoff, left))
		_ = s.locks.WaitRelease(wctx, s.reserver.UserLockKey(res.ActivityID, res.Buyer))
		cancel()
		backoff = min(2*backoff, 50*time.Millisecond)
		res.Now = s.now()
		res.PerSecond = 0 // the same attempt, counted once against the user's allowance
	}
}

// abandon gives back a reservation that no answer stands for, and its user lock. That
// is done in the background, so a Redis that stopped answering delays the 503 by one
// timeout, not three; if Redis stays unreachable, the repair pass enqueues whatever
// the reservation took.
func (s *Purchases) abandon(ctx context.Context, res reserve.Reservation) {
	go func() {
		s.giveBack(ctx, res)
		s.releaseLocks(ctx, res)
	}()
}

// giveBack rolls back a reservation whose reserve script may have run without its
// reply reaching us (nothing was answered for it).
func (s *Purchases) giveBack(ctx context.Context, res reserve.Reservation) {
	rctx, cancel := context.WithTimeout(ctx, s.IOTimeout)
	defer cancel()
	if _, err := s.settle.Rollback(rctx, res.ActivityID, res.Buyer, res.OrderID, res.IdempotencyKey); err != nil {
		// Redis is gone: the reservation stays queued without a task; the worker's
		// repair pass enqueues it when Redis is back.
		slog.Error("roll back reservation", "order", res.OrderID, "err", err)
	}
}

// MissingSale is the answer for a sale Redis does not know: ErrNotFound when MySQL does
// not know it either; stock.ErrEnded when it is archived (Redis has it no more, and no
// rebuild brings it back); else ErrUnavailable, and its rebuild from MySQL starts. A
// sale unknown, or archived, is told by the public list's snapshot (listed), so that a
// crowd asking for sales that do not exist reaches MySQL at most once a second in this
// process, whatever the ids; only a sale MySQL lists live is read again.
func (s *Catalog) MissingSale(ctx context.Context, activityID int64) error {
	if s.archived.known(activityID) {
		return errArchivedSale
	}
	switch known, err := s.listed(ctx, activityID); {
	case err != nil:
		return err
	case known == nil:
		return ErrNotFound
	case known.ArchivedAt != nil:
		s.archived.remember(activityID)
		return errArchivedSale
	}
	a, err := s.store.Activities.GetActivity(ctx, activityID)
	switch {
	case errors.Is(err, ErrNotFound):
		return err
	case err != nil:
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case s.archived.is(a):
		return errArchivedSale
	}
	// Redis lost it: rebuild it from MySQL (once, whoever notices first); until then
	// its purchases answer 503.
	slog.Warn("sale is in MySQL but not in Redis: rebuilding it from MySQL", "activity", activityID)
	s.rebuild.Kick(activityID)
	return fmt.Errorf("%w: sale %d missing in Redis, being rebuilt", ErrUnavailable, activityID)
}

// errArchivedSale is stock.ErrEnded for a sale MissingSale found archived.
var errArchivedSale = fmt.Errorf("%w: it is archived", stock.ErrEnded)

// archivedSales are the sales this process found archived (an archived sale stays so):
// their purchases are answered from MySQL without asking Redis.
type archivedSales struct {
	ids   sync.Map // activity id -> struct{}
	stock *stock.Stock
}

// known reports whether the sale was found archived.
func (a *archivedSales) known(activityID int64) bool {
	_, ok := a.ids.Load(activityID)
	return ok
}

// is reports whether a stored sale is archived, and remembers it when it is.
func (a *archivedSales) is(sale store.Activity) bool {
	if !sale.Archived() {
		return false
	}
	a.remember(sale.ID)
	return true
}

// remember remembers that a sale is archived, and forgets its Redis figures.
func (a *archivedSales) remember(activityID int64) {
	if _, known := a.ids.LoadOrStore(activityID, struct{}{}); !known {
		a.stock.ForgetSale(activityID)
	}
}

// listed returns a sale as the public list's snapshot (at most CatalogAge old) shows
// it, or nil when MySQL has no such sale. A sale newer than the snapshot's newest (made
// since it was read) is looked up in MySQL, at most once per CatalogAge in this process
// for all such ids: a crowd of ever larger ids gets ErrNotFound meanwhile.
// ErrUnavailable when the list, or the sale, cannot be read.
func (s *Catalog) listed(ctx context.Context, activityID int64) (*Activity, error) {
	a, err := s.PublicActivity(ctx, activityID)
	if err == nil {
		return &a, nil
	}
	all, lerr := s.publicList(ctx) // newest first
	if !errors.Is(err, ErrNotFound) || lerr != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, errors.Join(err, lerr))
	}
	if len(all) > 0 && all[0].ID > activityID || !s.newerProbe.take(time.Now()) {
		return nil, nil // ids are never reused: one below the newest listed is no sale
	}
	stored, err := s.store.Activities.GetActivity(ctx, activityID)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	v := Activity{ID: stored.ID}
	if stored.Archived() {
		at := apitime.Of(*stored.ArchivedAt)
		v.ArchivedAt = &at
	}
	return &v, nil
}

// probe lets one call through per CatalogAge.
type probe struct{ last atomic.Int64 } // unix ns of the last call let through

// take reports whether a call may go through at now, and counts it if so.
func (p *probe) take(now time.Time) bool {
	last := p.last.Load()
	return now.UnixNano()-last >= int64(CatalogAge) && p.last.CompareAndSwap(last, now.UnixNano())
}

// archivedPurchase answers a purchase of an archived sale from MySQL: a replay of an
// Idempotency-Key that made an order in the last reserve.IdempotencyTTL gets that order
// (replayed true), as from Redis before (or stock.ErrKeyReused with another body);
// anything else is stock.ErrEnded. Nothing is written.
func (s *Purchases) archivedPurchase(ctx context.Context, r BuyRequest) (Order, bool, error) {
	if r.IdempotencyKey == "" {
		return Order{}, false, errArchivedSale
	}
	row, err := s.store.Orders.KeyedOrder(ctx, r.ActivityID, r.Buyer, r.IdempotencyKey, s.now().Add(-reserve.IdempotencyTTL))
	switch {
	case errors.Is(err, ErrNotFound):
		return Order{}, false, errArchivedSale
	case err != nil:
		return Order{}, false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	case row.RequestFingerprint == nil || *row.RequestFingerprint != r.Fingerprint():
		return Order{}, false, &stock.KeyReusedError{OrderID: row.ID}
	}
	o := []Order{storedView(row)}
	if err := s.orderViews.inForce(ctx, o, map[string]store.Order{row.ID: row}); err != nil {
		return Order{}, false, err
	}
	return o[0], true, nil
}

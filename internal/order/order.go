// Package order carries an order after MySQL has it: its payment (confirmed by the
// shop), its cancellation (by the buyer, the shop or an admin), its expiry when the pay
// window passes (as MySQL outages extend it), its refund by the shop (with or without
// restock), the failure of a group-buy group that did not fill, and the return of the
// units of every cancelled, expired or refunded order to Redis, exactly once, the
// sale's waitlist first. The API and the worker share it.
package order

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"seckill/internal/outage"
	"seckill/internal/stock"
	"seckill/internal/stock/group"
	"seckill/internal/stock/settle"
	"seckill/internal/store"
)

// Outages reads the MySQL outages as the shared record holds them now.
type Outages interface {
	Read(ctx context.Context) (outage.Outages, error)
}

var _ Outages = (*outage.Record)(nil)

// Lifecycle pays, cancels and expires stored orders.
type Lifecycle struct {
	store   *store.Lifecycle
	sales   *store.Activities
	stock   *stock.Stock
	groups  *group.Groups
	settle  *settle.Settler
	outages Outages
	now     func() time.Time
	// Offers, when set, enqueues the orders the waitlist makes of units that come back
	// (stock.Return); without it the worker's repair pass does, seconds later.
	Offers Enqueuer
}

// Enqueuer puts queued orders on the queue to MySQL.
type Enqueuer interface {
	EnqueueBatch(ctx context.Context, orders []stock.QueuedOrder) error
}

// New returns a Lifecycle that judges pay windows as MySQL outages extend them.
func New(st *store.Lifecycle, sales *store.Activities, sk *stock.Stock, outages Outages) *Lifecycle {
	return &Lifecycle{store: st, sales: sales, stock: sk, groups: group.New(sk), settle: settle.New(sk), outages: outages, now: time.Now}
}

// stamp is the time rows are stamped with: UTC, to the millisecond MySQL keeps.
func (l *Lifecycle) stamp() time.Time { return l.now().UTC().Truncate(time.Millisecond) }

// SetClock replaces the clock (tests).
func (l *Lifecycle) SetClock(now func() time.Time) { l.now = now }

// Pay marks a created order paid. Errors: store.ErrNotFound, store.ErrNotPayable,
// store.ErrExpired. A payment that comes once the pay window, as MySQL outages extended
// it, has passed loses to the expiry: the order is cancelled (by this call, if the
// expiry job has not done it yet), and its units go back to Redis only then. The
// outages are read before MySQL is asked: a payment that comes the instant MySQL
// answers again is judged with the outage still going on, or just ended, so by the
// extended window either way.
func (l *Lifecycle) Pay(ctx context.Context, id string, who store.Access) (store.Order, error) {
	outages, err := l.outages.Read(ctx)
	if err != nil {
		return store.Order{}, err
	}
	read := time.Now()
	o, cancelled, err := l.store.PayOrder(ctx, id, who, l.stamp(), outages)
	if cancelled {
		l.returnUnits(ctx, o, read)
	}
	return o, err
}

// Cancel cancels a created order and gives its units back to stock and to the user's
// allowance. Cancelling a cancelled order returns it unchanged. Errors:
// store.ErrNotFound, store.ErrNotCancellable.
//
// MySQL is changed first, then Redis. If Redis fails in between, the order stays
// marked return_pending and ReturnPending gives the units back later.
func (l *Lifecycle) Cancel(ctx context.Context, id string, who store.Access) (store.Order, error) {
	read := time.Now()
	o, changed, err := l.store.CancelOrder(ctx, id, who, l.stamp())
	if err != nil || !changed {
		return o, err
	}
	l.returnUnits(ctx, o, read)
	return o, nil
}

// Refund records the shop's refund of a paid order (store.Lifecycle.RefundOrder) and
// gives its units back to the buyer's allowance, and with restock to stock, as Cancel
// does. Refunding a refunded order returns it unchanged. Errors: store.ErrNotFound,
// store.ErrNotRefundable.
func (l *Lifecycle) Refund(ctx context.Context, id string, who store.Access, restock bool) (store.Order, error) {
	read := time.Now()
	o, changed, err := l.store.RefundOrder(ctx, id, who, restock, l.stamp())
	if err != nil || !changed {
		return o, err
	}
	l.returnUnits(ctx, o, read)
	return o, nil
}

// returnUnits gives a cancelled or refunded order's units back; if Redis fails, the
// order stays return_pending and ReturnPending retries.
func (l *Lifecycle) returnUnits(ctx context.Context, o store.Order, read time.Time) {
	if err := l.giveBack(ctx, []store.Order{o}, read); err != nil {
		slog.Warn("the order's units not yet back in Redis; the worker will retry", "order", o.ID, "status", o.Status, "err", err)
	}
}

// errStaleRead: the orders were read as return_pending too long ago to return their
// units on that word (settle.ReturnedRetention); they stay pending and a later pass
// reads again.
var errStaleRead = errors.New("the pending return was read too long ago; read again")

// giveBack returns cancelled and refunded orders' units to Redis (one script call per
// sale; the units of those kept off sale to their buyers' allowances only), records
// that in MySQL (one UPDATE), then lets Redis forget the orders after their retention.
// read is when MySQL said the returns were pending: Redis remembers a returned order
// ReturnedRetention after MySQL recorded it, so a caller within half of that of its
// read cannot return an order twice.
func (l *Lifecycle) giveBack(ctx context.Context, orders []store.Order, read time.Time) error {
	if time.Since(read) > settle.ReturnedRetention/2 {
		return errStaleRead
	}
	bySale := map[int64][]settle.Returning{}
	for _, o := range orders {
		r := settle.Returning{OrderID: o.ID, Buyer: o.Buyer, Quantity: o.Quantity, OffSale: o.OffSale()}
		if o.VariantIndex != nil {
			r.Variant = stock.VariantAt(*o.VariantIndex)
		}
		bySale[o.ActivityID] = append(bySale[o.ActivityID], r)
	}
	returned := map[int64][]settle.Returning{} // by sale, the orders whose units are back
	var all []string
	var errs []error
	for act, rs := range bySale {
		offered, err := l.settle.Return(ctx, act, rs...)
		if err != nil {
			errs = append(errs, fmt.Errorf("sale %d: %w", act, err))
			continue
		}
		l.enqueueOffers(ctx, offered)
		returned[act] = rs
		for _, r := range rs {
			all = append(all, r.OrderID)
		}
	}
	if err := l.store.ReturnedToStock(ctx, all...); err != nil {
		return errors.Join(append(errs, err)...)
	}
	for act, rs := range returned {
		if err := l.settle.Forget(ctx, act, rs...); err != nil {
			// Remembered until the sale's next rebuild: no harm to the units.
			slog.Warn("returned orders not forgotten by Redis", "activity", act, "orders", len(rs), "err", err)
		}
	}
	return errors.Join(errs...)
}

// enqueueOffers puts the orders the waitlist offered on the queue to MySQL, with Offers
// when set; otherwise, or when it fails, the worker's repair pass enqueues them (they
// are queued in Redis as any purchase's order).
func (l *Lifecycle) enqueueOffers(ctx context.Context, offered []stock.QueuedOrder) {
	if len(offered) == 0 || l.Offers == nil {
		return
	}
	if err := l.Offers.EnqueueBatch(ctx, offered); err != nil {
		slog.Warn("orders offered to the waitlist not enqueued: the repair pass will", "orders", len(offered), "err", err)
	}
}

// expireBatch is how many due orders one transaction expires, and one script call per
// sale gives back.
const expireBatch = 200

// ExpireDue cancels up to limit created orders whose pay window has passed, and
// returns how many it cancelled. A window that MySQL outages extended is cancelled
// only once its extended deadline has passed; until then that deadline is written to
// the order (which is then no longer due). A payment racing with the expiry of the
// same order is decided by the order's row lock: one of them wins. Orders go in
// batches: one MySQL transaction cancels a batch, one script call per sale gives its
// units back, and one UPDATE records that.
func (l *Lifecycle) ExpireDue(ctx context.Context, limit int) (int, error) {
	n, _, err := l.expireDue(ctx, limit)
	return n, err
}

// expireDue is ExpireDue, which also returns how many due orders it found.
func (l *Lifecycle) expireDue(ctx context.Context, limit int) (cancelled, due int, err error) {
	outages, err := l.outages.Read(ctx) // before the due orders: an outage under way counts
	if err != nil {
		return 0, 0, fmt.Errorf("expire orders: %w", err)
	}
	ids, err := l.store.DueOrders(ctx, l.stamp(), limit)
	if err != nil {
		return 0, 0, fmt.Errorf("find expired orders: %w", err)
	}
	for batch := range slices.Chunk(ids, expireBatch) {
		read := time.Now()
		expired, extended, err := l.store.ExpireOrders(ctx, batch, l.stamp(), outages)
		if err != nil {
			return cancelled, len(ids), fmt.Errorf("expire orders: %w", err)
		}
		if extended > 0 {
			slog.Info("pay windows extended by the time MySQL outages took from them", "orders", extended)
		}
		cancelled += len(expired)
		if err := l.giveBack(ctx, expired, read); err != nil {
			return cancelled, len(ids), fmt.Errorf("expired orders' units: %w", err)
		}
	}
	return cancelled, len(ids), nil
}

// ExpireDueFor runs ExpireDue in pages of page orders until a page comes back short
// or d has passed, and returns how many it cancelled: a backlog of due orders (or of
// windows an outage extended) drains at the rate the batches go, not at one page per
// run of the periodic job.
func (l *Lifecycle) ExpireDueFor(ctx context.Context, page int, d time.Duration) (int, error) {
	n := 0
	for start := time.Now(); ; {
		m, due, err := l.expireDue(ctx, page)
		n += m
		if err != nil || due < page || time.Since(start) >= d {
			return n, err
		}
	}
}

// ReturnPending gives back the units of up to limit cancelled or refunded orders whose
// return to Redis was interrupted, and returns how many it handled.
func (l *Lifecycle) ReturnPending(ctx context.Context, limit int) (int, error) {
	read := time.Now()
	os, err := l.store.PendingReturns(ctx, limit)
	if err != nil {
		return 0, fmt.Errorf("find pending returns: %w", err)
	}
	if err := l.giveBack(ctx, os, read); err != nil {
		return 0, err
	}
	return len(os), nil
}

// FailDueGroups fails the open groups of live group-buy sales whose window has passed
// unfilled, and returns how many it failed. A window that MySQL outages extended is
// given its extended end first (stock.ExtendGroup), and the group stays open until
// then. Redis decides, in one step per group: the group turns failed and every seat's
// units and participation come back, once (a group that filled in time is complete,
// and stays so). MySQL follows: the group's grouping orders are cancelled and its units
// taken out of the sold units. A group failed in Redis is listed as failing until MySQL
// has done so, so a worker killed in between leaves it to the next run. A group a seat
// of which is still on its way to MySQL waits for the next run.
func (l *Lifecycle) FailDueGroups(ctx context.Context, limit int) (int, error) {
	outages, err := l.outages.Read(ctx) // before the due groups: an outage under way counts
	if err != nil {
		return 0, fmt.Errorf("fail groups: %w", err)
	}
	acts, err := l.sales.UnarchivedActivities(ctx) // an archived sale's groups all had their outcome
	if err != nil {
		return 0, fmt.Errorf("fail groups: %w", err)
	}
	n := 0
	var errs []error
	for _, a := range acts {
		if a.Kind != "group" || l.now().After(a.EndsAt.Add(time.Duration(*a.GroupWindowSeconds)*time.Second+outage.MaxGrace+time.Hour)) {
			continue // long over: every group of it has had its outcome
		}
		due, err := l.groups.DueGroups(ctx, a.ID, l.now(), limit)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, id := range due {
			end, err := l.groups.Extend(ctx, a.ID, id, outages, l.now())
			switch {
			case err != nil:
				errs = append(errs, err)
				continue
			case end.After(l.now()):
				slog.Info("group window extended by the time MySQL outages took from it", "group", id, "until", end)
				continue
			}
			failed, err := l.groups.Fail(ctx, a.ID, id, l.now())
			switch {
			case errors.Is(err, group.ErrGroupPending):
			case err != nil:
				errs = append(errs, err)
			case failed:
				n++
			}
		}
		failing, err := l.groups.Failing(ctx, a.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, id := range failing {
			errs = append(errs, l.recordFailed(ctx, a.ID, id))
		}
	}
	return n, errors.Join(errs...)
}

// recordFailed cancels in MySQL the orders of a group that failed in Redis.
func (l *Lifecycle) recordFailed(ctx context.Context, activityID int64, id string) error {
	g, err := l.groups.Get(ctx, activityID, id, false)
	if err != nil {
		return err
	}
	cancelled, err := l.store.FailGroup(ctx, activityID, id, g.Size, g.ExpiresAt, l.stamp())
	if err != nil {
		return fmt.Errorf("fail group %s in MySQL: %w", id, err)
	}
	slog.Info("group failed: its window passed unfilled", "activity", activityID, "group", id,
		"members", g.Members, "size", g.Size, "orders_cancelled", len(cancelled))
	return l.groups.DoneFailing(ctx, activityID, id)
}

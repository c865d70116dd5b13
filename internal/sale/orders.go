package sale

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/oklog/ulid/v2"

	"seckill/internal/buyer"
	"seckill/internal/stock/lifecycle"
	"seckill/internal/store"
)

// GetOrder returns an order to its owner or an admin; anyone else gets ErrNotFound.
// A queued order is read from Redis, before MySQL: the worker settles an order in
// Redis only after MySQL has it, so one of the two reads always finds it.
func (s *Orders) GetOrder(ctx context.Context, id string, c Caller) (Order, error) {
	activityID, ok := ActivityOf(id)
	if !ok {
		return Order{}, ErrNotFound
	}
	var o []Order
	var stored map[string]store.Order
	var owner buyer.ID
	q, err := s.sales.Queued(ctx, activityID, id)
	switch {
	case err == nil:
		sales, err := s.sales.Read(ctx, []int64{activityID})
		if err != nil {
			return Order{}, err
		}
		names, err := s.variants.namesOf(ctx, q)
		if err != nil {
			return Order{}, err
		}
		o, owner = []Order{queuedView(q.Priced(sales[activityID]), names)}, q.Buyer
	case errors.Is(err, lifecycle.ErrNotQueued):
		row, err := s.store.Orders.GetOrder(ctx, id)
		if err != nil {
			return Order{}, fmt.Errorf("get order: %w", err)
		}
		o, stored, owner = []Order{storedView(row)}, map[string]store.Order{id: row}, row.Buyer
	default:
		return Order{}, err
	}
	if !c.reads(owner) {
		return Order{}, ErrNotFound
	}
	if err := s.inForce(ctx, o, stored); err != nil {
		return Order{}, err
	}
	return o[0], nil
}

// ListOrders returns the caller's newest orders (at most 500), queued ones included;
// a service caller has none.
func (s *Orders) ListOrders(ctx context.Context, c Caller) ([]Order, error) {
	if c.Service {
		return []Order{}, nil
	}
	ids, err := s.store.Activities.UnarchivedIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	queued, err := s.sales.UserQueued(ctx, ids, c.Buyer)
	if err != nil {
		return nil, err
	}
	stored, err := s.store.Orders.ListUserOrders(ctx, c.Buyer, maxListedOrders)
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	out := make([]Order, 0, len(queued)+len(stored))
	seen := make(map[string]store.Order, len(stored))
	for _, o := range stored {
		seen[o.ID] = o
		out = append(out, storedView(o))
	}
	var queuedSales []int64
	for _, q := range queued {
		queuedSales = append(queuedSales, q.ActivityID)
	}
	sales, err := s.sales.Read(ctx, queuedSales)
	if err != nil {
		return nil, err
	}
	for _, q := range queued {
		if _, ok := seen[q.OrderID]; !ok {
			names, err := s.variants.namesOf(ctx, q)
			if err != nil {
				return nil, err
			}
			out = append(out, queuedView(q.Priced(sales[q.ActivityID]), names))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt.Time) })
	out = out[:min(len(out), maxListedOrders)]
	return out, s.inForce(ctx, out, seen)
}

// OrderPage asks for a page of a sale's orders (SaleOrders).
type OrderPage struct {
	ActivityID int64
	// Status keeps the orders of one status (store.StatusCreated, ...); "" keeps all.
	Status string
	// After is the id of the last order of the page before; "" for the first page.
	After string
	// Limit is the most orders of the page, 1..MaxOrderPage.
	Limit int
}

// Bounds of a page of a sale's orders.
const (
	DefaultOrderPage = 100
	MaxOrderPage     = 1000
)

// ListedStatuses are the statuses a page of a sale's orders can keep: those of the
// orders MySQL has (a queued order is listed once it is stored).
var ListedStatuses = []string{store.StatusGrouping, store.StatusCreated, store.StatusPaid, store.StatusCancelled,
	store.StatusFailed, store.StatusRefunded}

// SaleOrders returns a page of the orders MySQL has of a sale, in id order: every
// buyer's to an admin or service caller, the caller's own to a buyer. Errors:
// ErrNotFound (no such sale), a *FieldError naming status or limit, ErrUnavailable
// while Redis lost the sale (its rebuild starts).
//
// A page is stable under writes: it stops before the horizon, an id below which no order
// can still reach MySQL: the oldest order the sale holds as queued in Redis (the worker
// settles an order there only after MySQL has it) or now, whichever is earlier, less
// ListMargin (an id is minted before its order is queued, by an API whose clock may
// differ a little). An order written to MySQL after a page was read therefore has an id
// after the horizon that page was cut at, and so after the page's last order: paging on
// from the last order shown, now or later, shows it, and shows no order twice.
func (s *Orders) SaleOrders(ctx context.Context, c Caller, p OrderPage) ([]Order, error) {
	switch {
	case p.Status != "" && !slices.Contains(ListedStatuses, p.Status):
		return nil, &FieldError{"status", "must be one of " + strings.Join(ListedStatuses, ", ") +
			" (a queued order is listed once MySQL has it)"}
	case p.Limit < 1 || p.Limit > MaxOrderPage:
		return nil, &FieldError{"limit", "must be an integer from 1 to " + strconv.Itoa(MaxOrderPage)}
	}
	a, err := s.store.Activities.GetActivity(ctx, p.ActivityID)
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	horizon := "" // an archived sale's orders are all in MySQL, final: every one is listed
	if !s.archived.is(a) {
		if horizon, err = s.horizon(ctx, p.ActivityID); err != nil {
			return nil, err
		}
	}
	r := store.OrderRange{ActivityID: p.ActivityID, Status: p.Status, After: p.After, Before: horizon, Limit: p.Limit}
	if !c.actsOnAnyOrder() {
		r.Buyer = c.Buyer
	}
	rows, err := s.store.Orders.SaleOrders(ctx, r)
	if err != nil {
		return nil, err
	}
	views := make([]Order, len(rows))
	stored := make(map[string]store.Order, len(rows))
	for i, o := range rows {
		views[i], stored[o.ID] = storedView(o), o
	}
	return views, s.inForce(ctx, views, stored)
}

// horizon is the smallest order id a page of a sale's orders may not reach (SaleOrders):
// the ULID of the earlier of the oldest order queued and now, less ListMargin, with no
// randomness, so every id minted at or after that instant is above it. (The queued
// index is by the instant a purchase's last attempt ran, which is within LockWait after
// its id was minted.)
func (s *Orders) horizon(ctx context.Context, activityID int64) (string, error) {
	sales, err := s.sales.Read(ctx, []int64{activityID})
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if _, ok := sales[activityID]; !ok {
		return "", s.catalog.MissingSale(ctx, activityID)
	}
	at := s.now()
	oldest, err := s.sales.OldestQueued(ctx, activityID)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if !oldest.IsZero() && oldest.Before(at) {
		at = oldest
	}
	var id ulid.ULID
	if err := id.SetTime(ulid.Timestamp(at.Add(-s.ListMargin))); err != nil {
		return "", err
	}
	return id.String(), nil
}

// Pay marks a created order paid: a shop's confirmation of its payment (an admin or
// service caller, for any buyer's order), or, with BuyerPays, the buyer's own
// simulated payment. A paid order is returned as it is (a confirmation sent again).
// Errors: ErrNotFound (also for an id not as issued, before any other answer, and for
// another buyer's order), ErrPaymentByShop (a buyer's own order, without BuyerPays;
// nothing is written),
// store.ErrNotPayable (including a queued order, not yet in MySQL), store.ErrExpired:
// the pay window ended first, and the order is cancelled.
func (s *Orders) Pay(ctx context.Context, id string, c Caller) (Order, error) {
	if _, ok := ActivityOf(id); !ok {
		return Order{}, ErrNotFound // a path that names no order, whoever calls
	}
	if !c.actsOnAnyOrder() && !s.BuyerPays {
		if _, err := s.GetOrder(ctx, id, c); err != nil { // not theirs: 404, as for any order
			return Order{}, err
		}
		return Order{}, ErrPaymentByShop
	}
	return s.afterCreated(ctx, id, c, store.ErrNotPayable, s.orders.Pay)
}

// Cancel cancels a created order (its buyer's, or any for an admin or service caller);
// its units go back to stock and to the user's allowance. Cancelling a cancelled order
// returns it again. Errors: ErrNotFound, store.ErrNotCancellable (paid, failed, or
// still queued).
func (s *Orders) Cancel(ctx context.Context, id string, c Caller) (Order, error) {
	return s.afterCreated(ctx, id, c, store.ErrNotCancellable, s.orders.Cancel)
}

// Refund records the shop's refund of a paid order: the order turns refunded, its
// units leave its buyer's limit, and with restock they go back on sale, unless the sale
// has ended (the order then says restock false). Refunding a refunded order returns it
// again. The handler lets only the shop's back end and admins call it. Errors:
// ErrNotFound, store.ErrNotRefundable (not paid, including a queued order).
func (s *Orders) Refund(ctx context.Context, id string, c Caller, restock bool) (Order, error) {
	return s.afterCreated(ctx, id, c, store.ErrNotRefundable, func(ctx context.Context, id string, who store.Access) (store.Order, error) {
		return s.orders.Refund(ctx, id, who, restock)
	})
}

// afterCreated runs an action on an order MySQL has; a queued order (still only in
// Redis) gets errQueued. The action checks who may act on the order.
func (s *Orders) afterCreated(ctx context.Context, id string, c Caller, errQueued error,
	act func(context.Context, string, store.Access) (store.Order, error)) (Order, error) {
	activityID, ok := ActivityOf(id)
	if !ok {
		return Order{}, ErrNotFound
	}
	q, err := s.sales.Queued(ctx, activityID, id)
	switch {
	case err == nil && !c.actsOnAnyOrder() && q.Buyer != c.Buyer:
		return Order{}, ErrNotFound
	case err == nil:
		return Order{}, errQueued
	case !errors.Is(err, lifecycle.ErrNotQueued):
		return Order{}, err
	}
	stored, err := act(context.WithoutCancel(ctx), id, c.access())
	if err != nil {
		return Order{}, err
	}
	return storedView(stored), nil
}

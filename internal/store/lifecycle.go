package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"seckill/internal/buyer"
	"seckill/internal/outbox"
)

// ErrNotCancellable means the order is paid or failed, so it cannot be cancelled.
var ErrNotCancellable = errors.New("the order can no longer be cancelled")

// RefundOrder records, at now, the shop's refund of a paid order, in one transaction:
// the order turns refunded (refunded_at, restock), its units and participation leave
// its buyer's user_purchases (the buyer may buy them again), and with restock they
// leave the sale's sold units too, to go back on sale. Either way it is marked
// return_pending until ReturnedToStock confirms that Redis has the buyer's holding back
// (and, with restock, the units in stock). A sale that has ended (by its ends_at) takes
// no units back: the refund is recorded with restock false. Its order.refunded event is
// recorded with it. A refunded order is returned as it is with changed false (the
// refund sent again, whatever its restock); an order that is not paid is
// ErrNotRefundable. The row lock on the order makes a refund and the order's payment,
// cancel or expiry exclude each other; rows are touched in the order cancelCreated
// touches them.
func (s *Lifecycle) RefundOrder(ctx context.Context, id string, who Access, restock bool, now time.Time) (o Order, changed bool, err error) {
	err = transaction(ctx, s.db, func(tx *gorm.DB) error {
		var err error
		if o, changed, err = lockToChange(tx, id, who, StatusPaid, StatusRefunded, ErrNotRefundable); err != nil || !changed {
			return err
		}
		back := restock
		if back {
			var ends time.Time
			if err := tx.Raw("SELECT ends_at FROM activities WHERE id = ?", o.ActivityID).Scan(&ends).Error; err != nil {
				return fmt.Errorf("read the sale's end: %w", err)
			}
			back = now.Before(ends)
		}
		res := tx.Model(&Order{}).Where("id = ? AND status = ?", id, StatusPaid).Updates(map[string]any{
			"status": StatusRefunded, "refunded_at": now, "restock": back, "return_pending": true})
		if res.Error != nil {
			return fmt.Errorf("refund order: %w", res.Error)
		}
		if res.RowsAffected != 1 { // the row lock makes this certain; the check keeps it so
			return fmt.Errorf("order %s changed under its row lock", id)
		}
		if err := takeBackFromUsers(tx, []Order{o}); err != nil {
			return err
		}
		if back {
			if err := tx.Exec("UPDATE activities SET sold = sold - ? WHERE id = ?", o.Quantity, o.ActivityID).Error; err != nil {
				return fmt.Errorf("take back sold units: %w", err)
			}
			if err := takeBackVariantSold(tx, []Order{o}); err != nil {
				return err
			}
		}
		o.Status, o.RefundedAt, o.Restock = StatusRefunded, &now, &back
		return record(tx, orderEvent(s.views, outbox.OrderRefunded, o, now))
	})
	return o, changed, err
}

// Access says who acts on an order: its buyer, or an admin or the shop's back end
// (Service), who may act on any buyer's order.
type Access struct {
	Buyer   buyer.ID
	Admin   bool
	Service bool
}

// anyOrder reports whether the caller may act on any buyer's order.
func (a Access) anyOrder() bool { return a.Admin || a.Service }

func (a Access) allows(o Order) bool { return a.anyOrder() || o.Buyer == a.Buyer }

// payer is who a payment by the caller is recorded as paid by (orders.paid_by).
func (a Access) payer() string {
	switch {
	case a.Service:
		return PaidByService
	case a.Admin:
		return PaidByAdmin
	}
	return PaidByBuyer
}

// lockOrder reads an order for update, hiding it from callers who may not see it.
func lockOrder(tx *gorm.DB, id string, who Access) (Order, error) {
	var o Order
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("id = ?", id).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || err == nil && !who.allows(o) {
		return o, ErrNotFound
	}
	return o, err
}

// lockToChange reads an order for update, to change it from status from to status to:
// change is true when it is in from. An order already in to is returned with change
// false (the change asked again); an order in any other status is refused.
func lockToChange(tx *gorm.DB, id string, who Access, from, to string, refused error) (o Order, change bool, err error) {
	if o, err = lockOrder(tx, id, who); err != nil {
		return o, false, err
	}
	switch o.Status {
	case from:
		return o, true, nil
	case to:
		return o, false, nil
	}
	return o, false, refused
}

// PayOrder marks a created order paid at now, paid by who (Access.payer), if its pay
// window is still open, as MySQL outages extended it (w). One conditional UPDATE decides
// while the deadline the row shows has not passed (status created and expires_at after
// now); past it, the order's row lock is taken and its deadline in force
// (Order.Deadline) decides, and a payment within it is recorded with that deadline.
// Either way a payment and the order's expiry, cancel or refund exclude each other,
// whichever comes first. A payment that comes once the window has passed loses: if the
// expiry has not cancelled the order yet, this transaction does, and PayOrder returns
// ErrExpired with the cancelled order and cancelled true (its units are then to go back
// to Redis). A paid order is returned as it is, with no error and no event: a
// confirmation sent again. A failed, refunded or cancelled order is ErrNotPayable,
// except one cancelled by its expiry, which is ErrExpired.
func (s *Lifecycle) PayOrder(ctx context.Context, id string, who Access, now time.Time, w Windows) (o Order, cancelled bool, err error) {
	var lost error
	paid := map[string]any{"status": StatusPaid, "paid_at": now, "paid_by": who.payer()}
	err = transaction(ctx, s.db, func(tx *gorm.DB) error {
		cancelled, lost = false, nil
		pay := tx.Model(&Order{}).Where("id = ? AND status = ? AND expires_at > ?", id, StatusCreated, now)
		if !who.anyOrder() {
			pay = pay.Where("buyer = ?", who.Buyer)
		}
		res := pay.Updates(paid)
		if res.Error != nil {
			return fmt.Errorf("pay order: %w", res.Error)
		}
		var err error
		if o, err = lockOrder(tx, id, who); err != nil {
			return err
		}
		if res.RowsAffected == 1 {
			return record(tx, orderEvent(s.views, outbox.OrderPaid, o, now))
		}
		deadline := o.Deadline(w, now)
		switch {
		case o.Status == StatusCreated && now.Before(deadline): // an outage gave the window back its time
			if err := extend(tx, map[string]time.Time{o.ID: deadline}); err != nil {
				return err
			}
			if err := tx.Model(&Order{}).Where("id = ?", id).Updates(paid).Error; err != nil {
				return fmt.Errorf("pay order: %w", err)
			}
			by := who.payer()
			o.Status, o.PaidAt, o.PaidBy, o.ExpiresAt = StatusPaid, &now, &by, deadline
			return record(tx, orderEvent(s.views, outbox.OrderPaid, o, now))
		case o.Status == StatusPaid: // a confirmation sent again: the order as it was paid
		case o.Status == StatusCreated: // the UPDATE missed it: its window has passed
			cancelled, lost = true, ErrExpired
			if err := extend(tx, map[string]time.Time{o.ID: deadline}); err != nil {
				return err
			}
			o.ExpiresAt = deadline
			return s.cancelOne(tx, &o, now)
		case o.Status == StatusCancelled && (!now.Before(deadline) || o.CancelledAt != nil && !o.CancelledAt.Before(deadline)):
			lost = ErrExpired
		default:
			lost = ErrNotPayable
		}
		return nil
	})
	if err == nil {
		err = lost
	}
	return o, cancelled, err
}

// extend writes orders' deadlines in force (by id; expires_at never goes back), keeping
// their pay windows as set in window_starts_at and window_ends_at.
func extend(tx *gorm.DB, deadlines map[string]time.Time) error {
	if len(deadlines) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(deadlines))
	var cases strings.Builder
	args := make([]any, 0, 2*len(ids)+1)
	for _, id := range ids {
		cases.WriteString(" WHEN ? THEN ?")
		args = append(args, id, deadlines[id])
	}
	args = append(args, ids)
	// The window's columns come first: MySQL assigns left to right, and they keep
	// expires_at as it was before.
	err := tx.Exec("UPDATE orders SET window_starts_at = COALESCE(window_starts_at, created_at), "+
		"window_ends_at = COALESCE(window_ends_at, expires_at), "+
		"expires_at = GREATEST(expires_at, CASE id"+cases.String()+" END) WHERE id IN ?", args...).Error
	if err != nil {
		return fmt.Errorf("extend pay windows: %w", err)
	}
	return nil
}

// CancelOrder cancels a created order at now and takes its units out of the sale's
// sold units and the user's total, in one transaction. The order is marked
// return_pending until ReturnedToStock confirms its units are back in Redis. Cancelling
// a cancelled order changes nothing and returns it with changed false; a paid or failed
// order is ErrNotCancellable.
func (s *Lifecycle) CancelOrder(ctx context.Context, id string, who Access, now time.Time) (o Order, changed bool, err error) {
	err = transaction(ctx, s.db, func(tx *gorm.DB) error {
		var err error
		if o, changed, err = lockToChange(tx, id, who, StatusCreated, StatusCancelled, ErrNotCancellable); err != nil || !changed {
			return err
		}
		return s.cancelOne(tx, &o, now)
	})
	return o, changed, err
}

// cancelCreated cancels orders, created orders locked by tx, at now: they are marked
// return_pending, their units taken out of the sales' sold units and their buyers'
// totals, and their order.cancelled events recorded. Rows are touched in the order the
// worker's batches touch them (user_purchases by activity and buyer, then activities by
// id; store/persist.go), so the two cannot deadlock.
func (s *Lifecycle) cancelCreated(tx *gorm.DB, orders []Order, now time.Time) error {
	if len(orders) == 0 {
		return nil
	}
	ids := make([]string, len(orders))
	sold := map[int64]int64{}
	events := make([]outbox.Event, len(orders))
	for i := range orders {
		o := &orders[i]
		o.Status, o.CancelledAt = StatusCancelled, &now
		ids[i] = o.ID
		sold[o.ActivityID] += int64(o.Quantity)
		events[i] = orderEvent(s.views, outbox.OrderCancelled, *o, now)
	}
	res := tx.Model(&Order{}).Where("id IN ? AND status = ?", ids, StatusCreated).Updates(map[string]any{
		"status": StatusCancelled, "cancelled_at": now, "return_pending": true})
	if res.Error != nil {
		return fmt.Errorf("cancel orders: %w", res.Error)
	}
	if res.RowsAffected != int64(len(orders)) { // the row locks make this certain; the check keeps it so
		return fmt.Errorf("orders changed under their row locks (%d of %d rows updated)", res.RowsAffected, len(orders))
	}
	if err := takeBackFromUsers(tx, orders); err != nil {
		return err
	}
	for _, act := range slices.Sorted(maps.Keys(sold)) {
		if err := tx.Exec("UPDATE activities SET sold = sold - ? WHERE id = ?", sold[act], act).Error; err != nil {
			return fmt.Errorf("take back sold units: %w", err)
		}
	}
	if err := takeBackVariantSold(tx, orders); err != nil {
		return err
	}
	return record(tx, events...)
}

// ExpireOrders cancels, in one transaction, those of the given orders that are still
// created and whose pay window, as MySQL outages extended it (w), had passed by now, as
// CancelOrder does one, and returns them (return_pending: their units are to go back to
// Redis) with the deadline in force. An order whose extended window is still open gets
// that deadline written instead, and is counted in extended. An order paid or cancelled
// meanwhile is left out. The rows are locked by their ids alone: a condition on status
// and expiry let MySQL lock through the expiry's index (orders_sweeps) instead, every due
// order in the range and its gaps, which deadlocked with payments of orders outside the
// batch.
func (s *Lifecycle) ExpireOrders(ctx context.Context, ids []string, now time.Time, w Windows) (expired []Order, extended int, err error) {
	err = transaction(ctx, s.db, func(tx *gorm.DB) error {
		expired, extended = nil, 0
		var locked []Order
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Order("id").
			Where("id IN ?", ids).Find(&locked).Error; err != nil {
			return fmt.Errorf("lock expired orders: %w", err)
		}
		deadlines := map[string]time.Time{}
		for _, o := range locked {
			if o.Status != StatusCreated {
				continue
			}
			d := o.Deadline(w, now)
			if d.After(o.ExpiresAt) {
				deadlines[o.ID] = d
			}
			if now.Before(d) {
				extended++
				continue
			}
			o.ExpiresAt = d
			expired = append(expired, o)
		}
		if err := extend(tx, deadlines); err != nil {
			return err
		}
		return s.cancelCreated(tx, expired, now)
	})
	if err != nil {
		return nil, 0, err
	}
	return expired, extended, nil
}

// cancelOne is cancelCreated for one order, left cancelled in *o.
func (s *Lifecycle) cancelOne(tx *gorm.DB, o *Order, now time.Time) error {
	os := []Order{*o}
	if err := s.cancelCreated(tx, os, now); err != nil {
		return err
	}
	*o = os[0]
	return nil
}

// FailGroup records in MySQL that a group failed (its window passed unfilled; Redis has
// given its units and participations back): the group is marked failed and its grouping
// orders cancelled, their units taken out of the sale's sold units and the users'
// totals, and the events of the group and its orders recorded, in one transaction. It
// returns the orders it cancelled; a group failed before changes nothing. A group none
// of whose orders reached MySQL gets its row here.
func (s *Lifecycle) FailGroup(ctx context.Context, activityID int64, id string, size int, expiresAt, now time.Time) ([]Order, error) {
	var cancelled []Order
	err := transaction(ctx, s.db, func(tx *gorm.DB) error {
		cancelled = nil
		if err := tx.Exec("INSERT INTO sale_groups (id, activity_id, size, members, status, expires_at, created_at) "+
			"VALUES (?, ?, ?, 0, 'open', ?, ?) ON DUPLICATE KEY UPDATE id = id", id, activityID, size, expiresAt, now).Error; err != nil {
			return fmt.Errorf("record group: %w", err)
		}
		var g Group
		if err := tx.Raw("SELECT id, activity_id, size, members, status, expires_at FROM sale_groups WHERE id = ? FOR UPDATE", id).
			Scan(&g).Error; err != nil {
			return fmt.Errorf("lock group: %w", err)
		}
		if g.Status != "open" {
			return nil
		}
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).
			Where("group_id = ? AND status = ?", id, StatusGrouping).Order("id").Find(&cancelled).Error; err != nil {
			return fmt.Errorf("read group orders: %w", err)
		}
		if err := tx.Exec("UPDATE sale_groups SET status = ?, failed_at = ? WHERE id = ?", groupFailed, now, id).Error; err != nil {
			return fmt.Errorf("fail group: %w", err)
		}
		units := int64(0)
		events := make([]outbox.Event, 0, len(cancelled)+1)
		for i := range cancelled {
			o := &cancelled[i]
			o.Status, o.CancelledAt = StatusCancelled, &now
			units += int64(o.Quantity)
			events = append(events, orderEvent(s.views, outbox.OrderCancelled, *o, now))
		}
		g.Status = groupFailed
		if err := record(tx, append(events, groupEvent(s.views, outbox.GroupFailed, g, now))...); err != nil {
			return err
		}
		if len(cancelled) == 0 {
			return nil
		}
		if err := takeBackFromUsers(tx, cancelled); err != nil {
			return err
		}
		if err := tx.Model(&Order{}).Where("group_id = ? AND status = ?", id, StatusGrouping).
			Updates(map[string]any{"status": StatusCancelled, "cancelled_at": now}).Error; err != nil {
			return fmt.Errorf("cancel group orders: %w", err)
		}
		return tx.Exec("UPDATE activities SET sold = sold - ? WHERE id = ?", units, activityID).Error
	})
	return cancelled, err
}

// DueOrders returns up to limit created orders whose pay window ended by now, oldest
// first: a range of the index orders_sweeps (return_pending, status, expires_at). A
// created order is never return_pending (only cancelCreated and RefundOrder set it, with
// a status that does not change again), so NOT return_pending leaves none out.
func (s *Lifecycle) DueOrders(ctx context.Context, now time.Time, limit int) ([]string, error) {
	var ids []string
	err := s.db.WithContext(ctx).Model(&Order{}).Where("NOT return_pending AND status = ? AND expires_at <= ?", StatusCreated, now).
		Order("expires_at").Limit(limit).Pluck("id", &ids).Error
	return ids, err
}

// PendingReturns returns up to limit cancelled or refunded orders whose units are not
// yet confirmed back in Redis, through the index orders_sweeps.
func (s *Lifecycle) PendingReturns(ctx context.Context, limit int) ([]Order, error) {
	var os []Order
	err := s.db.WithContext(ctx).Where("return_pending = ?", true).Limit(limit).Find(&os).Error
	return os, err
}

// ReturnedToStock records that the orders' units are back in Redis.
func (s *Lifecycle) ReturnedToStock(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	return s.db.WithContext(ctx).Model(&Order{}).Where("id IN ?", ids).Update("return_pending", false).Error
}

// Group is one row of sale_groups, with the buyers whose orders hold its seats.
type Group struct {
	ID         string
	ActivityID int64
	Size       int
	Members    int
	Status     string
	ExpiresAt  time.Time
	// Buyers are the members (of orders of the group that are grouping, created, paid,
	// or cancelled with the group when it failed).
	Buyers []buyer.ID `gorm:"-"`
}

// ListGroups returns up to limit of the groups of a sale MySQL has (a group gets its
// row with its first stored seat), newest first, with their members, in two queries.
func (s *Orders) ListGroups(ctx context.Context, activityID int64, limit int) ([]Group, error) {
	var gs []Group
	if err := s.db.WithContext(ctx).Table("sale_groups").Where("activity_id = ?", activityID).
		Order("created_at DESC").Limit(limit).Find(&gs).Error; err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	if len(gs) == 0 {
		return gs, nil
	}
	ids := make([]string, len(gs))
	for i, g := range gs {
		ids[i] = g.ID
	}
	var members []struct {
		GroupID string
		Buyer   buyer.ID
	}
	if err := s.db.WithContext(ctx).Model(&Order{}).Select("group_id, buyer").
		Where("group_id IN ? AND status <> ?", ids, StatusFailed).Order("created_at").Scan(&members).Error; err != nil {
		return nil, fmt.Errorf("list group members: %w", err)
	}
	byID := map[string]*Group{}
	for i := range gs {
		byID[gs[i].ID] = &gs[i]
	}
	for _, m := range members {
		if g := byID[m.GroupID]; g != nil {
			g.Buyers = append(g.Buyers, m.Buyer)
		}
	}
	return gs, nil
}

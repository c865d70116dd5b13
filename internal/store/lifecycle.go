package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ErrNotCancellable means the order is paid or failed, so it cannot be cancelled.
var ErrNotCancellable = errors.New("the order can no longer be cancelled")

// Access says who may act on an order: its owner, or anyone when Admin is true.
type Access struct {
	UserID int64
	Admin  bool
}

func (a Access) allows(o Order) bool { return a.Admin || o.UserID == a.UserID }

// lockOrder reads an order for update, hiding it from callers who may not see it.
func lockOrder(tx *gorm.DB, id string, who Access) (Order, error) {
	var o Order
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("id = ?", id).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || err == nil && !who.allows(o) {
		return o, ErrNotFound
	}
	return o, err
}

// PayOrder marks a created order paid at now. A paid, cancelled or failed order is
// ErrNotPayable, except one whose pay window has passed, which is ErrExpired. The row
// lock makes a payment and an expiry of the same order exclude each other.
func (s *Store) PayOrder(ctx context.Context, id string, who Access, now time.Time) (Order, error) {
	var o Order
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		if o, err = lockOrder(tx, id, who); err != nil {
			return err
		}
		expired := !now.Before(o.ExpiresAt)
		switch {
		case o.Status == StatusCreated && expired, o.Status == StatusCancelled && expired:
			return ErrExpired
		case o.Status != StatusCreated:
			return ErrNotPayable
		}
		o.Status, o.PaidAt = StatusPaid, &now
		return guarded(tx.Model(&Order{}).Where("id = ? AND status = ?", id, StatusCreated).
			Updates(map[string]any{"status": StatusPaid, "paid_at": now}))
	})
	return o, err
}

// CancelOrder cancels a created order at now and takes its units out of the sale's
// sold units and the user's total, in one transaction. The order is marked
// return_pending until ReturnedToStock confirms its units are back in Redis. Cancelling
// a cancelled order changes nothing and returns it with changed false; a paid or failed
// order is ErrNotCancellable.
func (s *Store) CancelOrder(ctx context.Context, id string, who Access, now time.Time) (o Order, changed bool, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if o, err = lockOrder(tx, id, who); err != nil {
			return err
		}
		switch o.Status {
		case StatusCancelled:
			return nil
		case StatusCreated:
		default:
			return ErrNotCancellable
		}
		o.Status, o.CancelledAt, changed = StatusCancelled, &now, true
		if err := guarded(tx.Model(&Order{}).Where("id = ? AND status = ?", id, StatusCreated).Updates(map[string]any{
			"status": StatusCancelled, "cancelled_at": now, "return_pending": true})); err != nil {
			return err
		}
		if err := tx.Exec("UPDATE activities SET sold = sold - ? WHERE id = ?", o.Quantity, o.ActivityID).Error; err != nil {
			return fmt.Errorf("take back sold units: %w", err)
		}
		return tx.Exec("UPDATE user_purchases SET units = units - ? WHERE activity_id = ? AND user_id = ?",
			o.Quantity, o.ActivityID, o.UserID).Error
	})
	return o, changed, err
}

// guarded checks that an update guarded by the order's status changed its row; the
// row lock makes this certain, the check keeps it so if the lock is ever lost.
func guarded(res *gorm.DB) error {
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("order changed under its row lock (%d rows updated)", res.RowsAffected)
	}
	return nil
}

// DueOrders returns up to limit created orders whose pay window ended by now, oldest first.
func (s *Store) DueOrders(ctx context.Context, now time.Time, limit int) ([]string, error) {
	var ids []string
	err := s.db.WithContext(ctx).Model(&Order{}).Where("status = ? AND expires_at <= ?", StatusCreated, now).
		Order("expires_at").Limit(limit).Pluck("id", &ids).Error
	return ids, err
}

// PendingReturns returns up to limit cancelled orders whose units are not yet
// confirmed back in Redis.
func (s *Store) PendingReturns(ctx context.Context, limit int) ([]Order, error) {
	var os []Order
	err := s.db.WithContext(ctx).Where("return_pending = ?", true).Limit(limit).Find(&os).Error
	return os, err
}

// ReturnedToStock records that the order's units are back in Redis.
func (s *Store) ReturnedToStock(ctx context.Context, id string) error {
	return s.db.WithContext(ctx).Model(&Order{}).Where("id = ?", id).Update("return_pending", false).Error
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"seckill/internal/buyer"
)

// A sale that is over is archived (internal/upkeep/archive.go): MySQL marks it
// (activities.archived_at), and from then on answers for it alone; then its Redis state
// is removed, and activities.redis_removed_at says it is gone. An archived sale never
// changes again: UpdateActivity and NextRedisEpoch (a rebuild's first write) refuse it.

// Errors of archiving.
var (
	// ErrArchived means the sale is archived: it is over, MySQL answers for it, and it
	// can no longer change (no purchase, no PATCH, no rebuild of its Redis state).
	ErrArchived = errors.New("the sale is archived: it is over and can no longer change")
	// ErrNotSettled means the sale cannot be archived yet: it has not ended by the time
	// asked, or an order of it is not final, or a cancelled order's units are still on
	// their way back.
	ErrNotSettled = errors.New("the sale is not over: an order of it is not final yet")
)

// unsettled are the statuses of an order that is not final yet: the worker, the pay
// window or a group has still to decide it. Every other status (paid, cancelled,
// failed, refunded) is final.
var unsettled = []string{StatusQueued, StatusGrouping, StatusCreated}

// Archived reports whether the activity is archived.
func (a Activity) Archived() bool { return a.ArchivedAt != nil }

// ArchiveCandidates returns up to limit sales whose Redis state is not removed yet and
// that ended at or before endedBy, the earliest end first: the sales to archive and
// those whose removal stopped half-way (ArchivedAt set). It reads the index
// activities_to_archive only.
func (s *Upkeep) ArchiveCandidates(ctx context.Context, endedBy time.Time, limit int) ([]Activity, error) {
	var as []Activity
	err := s.db.WithContext(ctx).Where("redis_removed_at IS NULL AND ends_at <= ?", endedBy).
		Order("ends_at, id").Limit(limit).Find(&as).Error
	if err != nil {
		return nil, fmt.Errorf("sales to archive: %w", err)
	}
	return as, nil
}

// Unsettled reports whether an order of the sale is not final yet, or is cancelled with
// its units still on their way back, through the index orders_by_activity and an index
// that leads with return_pending or activity_id.
func (s *Upkeep) Unsettled(ctx context.Context, activityID int64) (bool, error) {
	return unsettledOrder(s.db.WithContext(ctx), activityID)
}

// LastFinal returns when the last order of a sale became final (paid, cancelled,
// refunded, or stored failed; the zero time for a sale without orders). It reads every
// order of the sale, page by page (salePages): ask it once the sale is settled
// (Unsettled), and remember it; a settled sale changes after that only by a refund,
// which LastRefund tells.
func (s *Upkeep) LastFinal(ctx context.Context, activityID int64) (time.Time, error) {
	var last time.Time
	err := salePages(s.db.WithContext(ctx), activityID, func(page *gorm.DB) error {
		var at sql.NullTime
		err := page.Select("MAX(GREATEST(persisted_at, COALESCE(paid_at, persisted_at), " +
			"COALESCE(cancelled_at, persisted_at), COALESCE(refunded_at, persisted_at)))").Row().Scan(&at)
		if at.Time.After(last) {
			last = at.Time
		}
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("when the orders of activity %d became final: %w", activityID, err)
	}
	return last, nil
}

// LastRefund returns when the last refund of a sale's orders was recorded (the zero
// time for none). It reads the sale's refunded orders alone, through the index
// orders_by_activity.
func (s *Upkeep) LastRefund(ctx context.Context, activityID int64) (time.Time, error) {
	return lastRefund(s.db.WithContext(ctx), activityID)
}

func lastRefund(db *gorm.DB, activityID int64) (time.Time, error) {
	var at sql.NullTime
	err := db.Model(&Order{}).Select("MAX(refunded_at)").Where("activity_id = ? AND status = ?", activityID, StatusRefunded).
		Row().Scan(&at)
	if err != nil {
		return time.Time{}, fmt.Errorf("the last refund of activity %d: %w", activityID, err)
	}
	return at.Time, nil
}

// unsettledOrder reports whether an order of the sale is not final, or is cancelled
// with its units still on their way back.
func unsettledOrder(db *gorm.DB, activityID int64) (bool, error) {
	// Two queries, each on an index (orders_by_activity; orders_sweeps, which leads with
	// return_pending, or an index on the sale's orders): their OR would read every order
	// of the sale.
	for _, q := range []struct {
		where string
		arg   any
	}{{"activity_id = ? AND status IN ?", unsettled}, {"return_pending AND activity_id = ?", nil}} {
		args := []any{activityID}
		if q.arg != nil {
			args = append(args, q.arg)
		}
		var found []string
		if err := db.Model(&Order{}).Where(q.where, args...).Limit(1).Pluck("id", &found).Error; err != nil {
			return false, fmt.Errorf("unsettled orders of activity %d: %w", activityID, err)
		}
		if len(found) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// MarkArchived archives a sale at now: under the sale's row lock (which the writes of
// its orders and every change of the sale take), it checks that the sale ended at or
// before endedBy, that every order of it is final, and that none was refunded after
// endedBy (else ErrNotSettled, nothing written), and sets archived_at. A sale archived before is left as it is. ErrNotFound
// for an unknown sale.
func (s *Upkeep) MarkArchived(ctx context.Context, activityID int64, endedBy, now time.Time) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var a Activity
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&a, activityID).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			return ErrNotFound
		case err != nil:
			return err
		case a.Archived():
			return nil
		case a.EndsAt.After(endedBy):
			return fmt.Errorf("activity %d ends at %v: %w", activityID, a.EndsAt, ErrNotSettled)
		}
		open, err := unsettledOrder(tx, activityID)
		if err != nil {
			return err
		}
		if open {
			return fmt.Errorf("activity %d: %w", activityID, ErrNotSettled)
		}
		refunded, err := lastRefund(tx, activityID)
		if err != nil {
			return err
		}
		if refunded.After(endedBy) {
			return fmt.Errorf("activity %d refunded an order at %v: %w", activityID, refunded, ErrNotSettled)
		}
		return tx.Model(&Activity{}).Where("id = ?", activityID).Update("archived_at", now).Error
	})
}

// MarkRedisRemoved records that the last of an archived sale's Redis keys is gone.
func (s *Upkeep) MarkRedisRemoved(ctx context.Context, activityID int64, now time.Time) error {
	err := s.db.WithContext(ctx).Model(&Activity{}).Where("id = ? AND archived_at IS NOT NULL", activityID).
		Update("redis_removed_at", now).Error
	if err != nil {
		return fmt.Errorf("record the Redis state of activity %d removed: %w", activityID, err)
	}
	return nil
}

// SaleNames are what names an archived sale's keys in Redis beyond its fixed ones, as
// MySQL records them: the buyers of its orders, the Idempotency-Keys of its orders made
// since a time (older ones have expired), and its groups.
type SaleNames struct {
	Buyers []buyer.ID
	// Keys are orders with their buyer, idempotency_key and request_fingerprint only.
	Keys   []Order
	Groups []string
}

// SaleNames reads the names of a sale's keys (SaleNames): the buyers through the index
// orders_holdings alone, the keys of orders made since keysSince, the groups from
// sale_groups and from the orders that name one.
func (s *Upkeep) SaleNames(ctx context.Context, activityID int64, keysSince time.Time) (SaleNames, error) {
	var n SaleNames
	db := s.db.WithContext(ctx)
	if err := db.Model(&Order{}).Distinct("buyer").Where("activity_id = ?", activityID).Pluck("buyer", &n.Buyers).Error; err != nil {
		return n, fmt.Errorf("buyers of activity %d: %w", activityID, err)
	}
	var err error
	if n.Keys, err = s.KeyedOrders(ctx, activityID, keysSince); err != nil {
		return n, err
	}
	err = db.Raw("SELECT id FROM sale_groups WHERE activity_id = ? UNION "+
		"SELECT DISTINCT group_id FROM orders WHERE activity_id = ? AND group_id IS NOT NULL", activityID, activityID).
		Scan(&n.Groups).Error
	if err != nil {
		return n, fmt.Errorf("groups of activity %d: %w", activityID, err)
	}
	return n, nil
}

// KeyedOrder returns the order of a sale that a buyer's Idempotency-Key made at since
// or later (a replay's answer once MySQL alone answers for the sale), or ErrNotFound.
func (s *Orders) KeyedOrder(ctx context.Context, activityID int64, who buyer.ID, key string, since time.Time) (Order, error) {
	var o Order
	err := s.db.WithContext(ctx).Where("buyer = ? AND activity_id = ? AND idempotency_key = ? AND created_at >= ?",
		who, activityID, key, since).Order("created_at").Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return o, ErrNotFound
	}
	return o, err
}

// GetGroup returns one group of sale_groups, without its members, or ErrNotFound.
func (s *Orders) GetGroup(ctx context.Context, id string) (Group, error) {
	var g Group
	err := s.db.WithContext(ctx).Table("sale_groups").Where("id = ?", id).Take(&g).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return g, ErrNotFound
	}
	return g, err
}

// UnarchivedActivities returns every sale not archived, newest first: the sales whose
// Redis state the periodic jobs look after.
func (s *Activities) UnarchivedActivities(ctx context.Context) ([]Activity, error) {
	var as []Activity
	err := s.db.WithContext(ctx).Where("archived_at IS NULL").Order("id DESC").Find(&as).Error
	return as, err
}

package store

import (
	"context"
	"fmt"
	"time"
)

// OrderFact is what the funnel of a sale (internal/funnel) reads of one of its orders:
// the times and facts that say which statuses it went through.
type OrderFact struct {
	ID       string
	Quantity int
	Status   string
	Offered  bool
	// EarlyAccess: bought in the sale's early window, with an access code.
	EarlyAccess bool
	Group       bool // an order of a group-buy sale's group
	CreatedAt   time.Time
	// WindowStartsAt is when its pay window began (nil for an order never payable: a
	// seat of a group that failed; and in rows written before it was kept).
	WindowStartsAt *time.Time
	ExpiresAt      time.Time
	PaidAt         *time.Time
	CancelledAt    *time.Time
	RefundedAt     *time.Time
	Restock        *bool
	PersistedAt    time.Time
}

// OrderFacts returns the facts of every order of a sale in MySQL, through the index
// orders_by_activity, named: left to itself MariaDB reads the whole table once a sale
// holds a tenth of it (TestOrdersQueriesReadThroughIndexes). It reads the whole sale: an
// admin's question, not a buyer's.
func (s *Orders) OrderFacts(ctx context.Context, activityID int64) ([]OrderFact, error) {
	var facts []OrderFact
	err := s.db.WithContext(ctx).Table("orders FORCE INDEX (orders_by_activity)").Select("id, quantity, status, offered, early_access, group_id IS NOT NULL AS `group`, "+
		"created_at, window_starts_at, expires_at, paid_at, cancelled_at, refunded_at, restock, persisted_at").
		Where("activity_id = ?", activityID).Scan(&facts).Error
	if err != nil {
		return nil, fmt.Errorf("read the orders of activity %d: %w", activityID, err)
	}
	return facts, nil
}

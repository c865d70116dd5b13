package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
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

// OrderFacts returns the facts of every order of a sale in MySQL, page by page
// (salePages). It reads the whole sale: an admin's question, not a buyer's.
func (s *Orders) OrderFacts(ctx context.Context, activityID int64) ([]OrderFact, error) {
	var facts []OrderFact
	err := salePages(s.db.WithContext(ctx), activityID, func(page *gorm.DB) error {
		var got []OrderFact
		err := page.Select("id, quantity, status, offered, early_access, group_id IS NOT NULL AS `group`, " +
			"created_at, window_starts_at, expires_at, paid_at, cancelled_at, refunded_at, restock, persisted_at").
			Scan(&got).Error
		facts = append(facts, got...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the orders of activity %d: %w", activityID, err)
	}
	return facts, nil
}

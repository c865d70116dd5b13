package stock

import (
	"context"
	"fmt"
	"time"
)

// earlyAt is the instant the sale's early window opens, as its hash's field early
// holds it (unix ms): StartsAt when it has none.
func (sale Sale) earlyAt() time.Time {
	if sale.EarlyAt.IsZero() || sale.EarlyAt.After(sale.StartsAt) {
		return sale.StartsAt
	}
	return sale.EarlyAt
}

// SetEarlyAccess moves the opening of a sale's early window to at (the sale's start for
// none); every API instance and the line see it at their next script.
func (s *Stock) SetEarlyAccess(ctx context.Context, activityID int64, at time.Time) error {
	if err := s.rdb.HSet(ctx, saleKey(one(activityID)), "early", at.UnixMilli()).Err(); err != nil {
		return fmt.Errorf("set early access of sale %d: %w", activityID, err)
	}
	return nil
}

package store

import (
	"context"
	"time"

	"seckill/internal/stock"
)

// Room is a sale's waiting room, columns of activities (migration 00007).
type Room struct {
	WaitingRoom     bool
	AdmitPerSecond  *int // set whenever WaitingRoom is
	PassTTLSeconds  int
	PrequeueSeconds int
	Challenge       bool
	ChallengeCost   int
}

// Stock is the room as the sale's hash holds it.
func (r Room) Stock() stock.Room {
	admit := 0
	if r.AdmitPerSecond != nil {
		admit = *r.AdmitPerSecond
	}
	return stock.Room{On: r.WaitingRoom, AdmitPerSecond: admit, PassTTL: time.Duration(r.PassTTLSeconds) * time.Second,
		Prequeue: time.Duration(r.PrequeueSeconds) * time.Second, Challenge: r.Challenge, ChallengeCost: r.ChallengeCost}
}

// columns are the room's columns as UpdateActivity writes them.
func (r Room) columns() map[string]any {
	return map[string]any{"waiting_room": r.WaitingRoom, "admit_per_second": r.AdmitPerSecond,
		"pass_ttl_seconds": r.PassTTLSeconds, "prequeue_seconds": r.PrequeueSeconds,
		"challenge": r.Challenge, "challenge_cost": r.ChallengeCost}
}

// WaitingRooms returns the ids of the sales with a waiting room that have not ended
// by now.
func (s *Activities) WaitingRooms(ctx context.Context, now time.Time) ([]int64, error) {
	var ids []int64
	err := s.db.WithContext(ctx).Model(&Activity{}).Where("waiting_room AND ends_at > ?", now).
		Order("id").Pluck("id", &ids).Error
	return ids, err
}

// SaleOf is the state a stored sale loads into Redis (stock.Sale), with available units
// left: what a create loads, and what a rebuild writes again with the units MySQL says
// are left.
func SaleOf(a Activity, available int64) stock.Sale {
	sale := stock.Sale{ActivityID: a.ID, Available: available, Total: a.StockTotal,
		Limit: a.PerUserLimit, StartsAt: a.StartsAt, EndsAt: a.EndsAt, PriceCents: a.PriceCents,
		PayWindow: time.Duration(a.PayWindowSeconds) * time.Second, Kind: a.Kind, Room: a.Room.Stock(),
		Buckets: max(1, a.StockBuckets), EarlyAt: a.EarlyAccessAt()}
	if a.GroupSize != nil && a.GroupWindowSeconds != nil {
		sale.GroupSize, sale.GroupWindow = *a.GroupSize, time.Duration(*a.GroupWindowSeconds)*time.Second
	}
	if a.PerUserParticipations != nil {
		sale.ParticipationCap = *a.PerUserParticipations
	}
	for _, v := range a.Variants {
		sale.Variants = append(sale.Variants, stock.VariantStock{Total: v.StockTotal, Available: v.StockTotal - v.Sold})
	}
	if a.PerVariantLimit != nil {
		sale.VariantLimit = *a.PerVariantLimit
	}
	return sale
}

// EarlyAccessAt is when the sale's early window opens: its start less
// early_access_seconds (its start for none).
func (a Activity) EarlyAccessAt() time.Time {
	return a.StartsAt.Add(-time.Duration(a.EarlyAccessSeconds) * time.Second)
}

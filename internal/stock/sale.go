package stock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Room is a sale's waiting room as its sale hash holds it. The reserve script reads
// only the flag (room); internal/waitingroom reads the rest and owns the line itself.
type Room struct {
	On             bool
	AdmitPerSecond int
	PassTTL        time.Duration
	Prequeue       time.Duration
	// Challenge asks a proof-of-work of joiners; ChallengeCost is its maxnumber.
	Challenge     bool
	ChallengeCost int
}

// Fields are the room's fields of the sale hash: room (1 on, 0 off), admit (per
// second), pttl and preq (seconds), chal (1 on) and cost (the challenge's maxnumber).
func (r Room) Fields() []any {
	return []any{"room", flag(r.On), "admit", r.AdmitPerSecond, "pttl", int64(r.PassTTL / time.Second),
		"preq", int64(r.Prequeue / time.Second), "chal", flag(r.Challenge), "cost", r.ChallengeCost}
}

func flag(on bool) int {
	if on {
		return 1
	}
	return 0
}

// PassesUsed reads, on c (a pipeline), how many buyers of a sale made their first
// purchase with a pass (sale_state's passes_used).
func PassesUsed(ctx context.Context, c redis.Cmdable, activityID int64) *redis.StringCmd {
	return c.HGet(ctx, SaleKey(One(activityID)), "rused")
}

// Sale is the state Redis checks purchases against.
type Sale struct {
	ActivityID int64
	Available  int64
	Total      int64
	Limit      int
	StartsAt   time.Time
	EndsAt     time.Time
	PriceCents int64
	PayWindow  time.Duration
	// Gen is the sale's generation in Redis, and Epoch its state's epoch, which the last
	// rebuild from MySQL wrote (see rebuild.go).
	Gen, Epoch int64
	// Group-buy: Kind is "group" for a sale of seats in groups of GroupSize that fill
	// within GroupWindow, else "sale". ParticipationCap caps the orders one buyer holds
	// (0: no cap), in a sale of either kind.
	Kind             string
	GroupSize        int
	GroupWindow      time.Duration
	ParticipationCap int
	// Room is the sale's waiting room (room.go).
	Room Room
	// EarlyAt is when the holders of the sale's access codes may begin to buy (early
	// access: internal/stock/codes, and the reserve script); zero for no early window.
	EarlyAt time.Time
	// Buckets is how many buckets hold the sale's stock and buyers (bucket.go); 0 or 1
	// for one.
	Buckets int
	// Reserve is, of Available, the units in the reserve (a sale of several buckets).
	Reserve int64
	// Variants are a sale of variants' units by index (variants.go), none for a sale
	// without; Total and Available are then their sums. VariantLimit caps the units of
	// one variant a buyer holds (0: no cap but the per-user limit).
	Variants     []VariantStock
	VariantLimit int
}

// Fields are the settings of a sale's hash, as Load and Rebuild write them.
func (sale Sale) Fields() []any {
	kind := sale.Kind
	if kind == "" {
		kind = "sale"
	}
	fields := []any{"total", sale.Total, "limit", sale.Limit,
		"start", sale.StartsAt.UnixMilli(), "end", sale.EndsAt.UnixMilli(),
		"price", sale.PriceCents, "paywin", int64(sale.PayWindow / time.Second),
		"kind", kind, "gsize", sale.GroupSize, "gwin", int64(sale.GroupWindow / time.Second),
		"plimit", sale.ParticipationCap, "early", sale.earlyAt().UnixMilli()}
	if sale.Buckets > 1 {
		fields = append(fields, "buckets", sale.Buckets)
	}
	if len(sale.Variants) > 0 {
		fields = append(fields, "variants", len(sale.Variants), "vlimit", sale.VariantLimit, tableField, tableValue)
		for i, v := range sale.Variants {
			fields = append(fields, VariantField("total", VariantAt(i)), v.Total)
		}
	}
	return append(fields, sale.Room.Fields()...)
}

// earlyAt is the instant the sale's early window opens, as its hash's field early
// holds it (unix ms): StartsAt when it has none.
func (sale Sale) earlyAt() time.Time {
	if sale.EarlyAt.IsZero() || sale.EarlyAt.After(sale.StartsAt) {
		return sale.StartsAt
	}
	return sale.EarlyAt
}

// Share is bucket n's share of units spread evenly over k buckets.
func Share(units int64, n, k int) int64 {
	s := units / int64(k)
	if int64(n) < units%int64(k) {
		s++
	}
	return s
}

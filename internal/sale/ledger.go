package sale

import (
	"context"
	"errors"
	"fmt"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/store"
)

// Ledger is the stock balance of a sale: every unit is either available, held by an
// order that is queued, grouping, created or paid (or, for a moment after a cancel or a
// refund, on its way back to Redis), or kept off sale by a refund without restock.
type Ledger struct {
	ActivityID     int64 `json:"activity_id"`
	StockTotal     int64 `json:"stock_total"`
	RedisTotal     int64 `json:"redis_stock_total"`
	Available      int64 `json:"available"`
	QueuedUnits    int64 `json:"queued_units"`
	GroupingUnits  int64 `json:"grouping_units"`
	CreatedUnits   int64 `json:"created_units"`
	PaidUnits      int64 `json:"paid_units"`
	ReturningUnits int64 `json:"returning_units"`
	// OffSaleUnits are the units of orders refunded without restock: neither sold nor
	// available.
	OffSaleUnits int64 `json:"off_sale_units"`
	// Difference is stock_total - (available + queued + grouping + created + paid +
	// returning + off sale).
	Difference int64 `json:"difference"`
	// SoldColumn is activities.sold, which must equal grouping + created + paid + off
	// sale units (MySQL's guard keeps units off sale out of what it lets be sold).
	SoldColumn int64 `json:"sold_column"`
	// UserDifferences lists buyers whose units in Redis differ from MySQL's
	// user_purchases plus their queued units (at most 20).
	UserDifferences []UserDifference `json:"user_differences"`
	// Variants are a sale of variants' balances, one per variant, in its order.
	Variants []VariantLedger `json:"variants,omitempty"`
	Balanced bool            `json:"balanced"`
	// Archived is true for an archived sale, whose balance is MySQL's alone: its units
	// available are stock_total less those its orders hold, redis_stock_total is
	// stock_total, and user_differences hold user_purchases against its orders.
	Archived bool `json:"archived"`
	// Attempts is how many reads it took to see a stable balance (orders moving from
	// queued to created between the Redis and MySQL reads can unbalance one read).
	Attempts int `json:"attempts"`
}

// VariantLedger is one variant's balance: its units available in Redis, and those its
// orders hold (queued, grouping, created, paid, returning).
type VariantLedger struct {
	Name       string `json:"name"`
	StockTotal int64  `json:"stock_total"`
	RedisTotal int64  `json:"redis_stock_total"`
	Available  int64  `json:"available"`
	HeldUnits  int64  `json:"held_units"`
	// OffSaleUnits are the units of its orders refunded without restock.
	OffSaleUnits int64 `json:"off_sale_units"`
	// Difference is stock_total - (available + held + off sale).
	Difference int64 `json:"difference"`
	// SoldColumn is activity_variants.sold, which must equal the units of its orders
	// that hold stock in MySQL and of those kept off sale.
	SoldColumn int64 `json:"sold_column"`
}

// UserDifference is one buyer's units in Redis and in MySQL.
type UserDifference struct {
	buyer.Named
	Redis int64 `json:"redis"`
	MySQL int64 `json:"mysql"`
}

// Ledger checks that a sale's stock balances, in Redis and MySQL. While orders flow it
// reads up to five times, 200 ms apart, until one read balances; run it on a quiet
// sale for a certain answer.
func (s *Catalog) Ledger(ctx context.Context, id int64) (Ledger, error) {
	var l Ledger
	var err error
	for attempt := 1; attempt <= 5; attempt++ {
		if l, err = s.ledgerOnce(ctx, id); err != nil || l.Balanced {
			l.Attempts = attempt
			return l, err
		}
		l.Attempts = attempt
		select {
		case <-ctx.Done():
			return l, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return l, nil
}

func (s *Catalog) ledgerOnce(ctx context.Context, id int64) (Ledger, error) {
	a, err := s.store.Activities.GetActivity(ctx, id)
	if err != nil {
		return Ledger{}, fmt.Errorf("ledger: %w", err)
	}
	if s.archived.is(a) {
		return s.archivedLedger(ctx, a)
	}
	snap, err := s.sales.Snapshot(ctx, id)
	if errors.Is(err, stock.ErrNoSale) {
		return Ledger{}, fmt.Errorf("%w: sale %d missing in Redis", ErrUnavailable, id)
	}
	if err != nil {
		return Ledger{}, err
	}
	f, err := s.store.Orders.Figures(ctx, id)
	if err != nil {
		return Ledger{}, fmt.Errorf("ledger: %w", err)
	}
	ids := make([]string, len(snap.Queued))
	for i, q := range snap.Queued {
		ids[i] = q.OrderID
	}
	stored, err := s.store.Orders.OrdersByID(ctx, ids)
	if err != nil {
		return Ledger{}, fmt.Errorf("ledger: %w", err)
	}
	l := Ledger{ActivityID: id, StockTotal: a.StockTotal, RedisTotal: snap.Sale.Total,
		Available: snap.Sale.Available, CreatedUnits: f.Units[store.StatusCreated], GroupingUnits: f.Units[store.StatusGrouping],
		PaidUnits: f.Units[store.StatusPaid], ReturningUnits: f.ReturnPending, OffSaleUnits: f.OffSale, SoldColumn: f.Sold,
		UserDifferences: []UserDifference{}}
	expect := make(map[buyer.ID]int64, len(f.Users))
	for u, n := range f.Users {
		expect[u] = n
	}
	variantsBalanced := true
	for i, vf := range f.Variants {
		vl := VariantLedger{Name: vf.Name, StockTotal: vf.StockTotal, HeldUnits: vf.Held + vf.ReturnPending,
			OffSaleUnits: vf.OffSale, SoldColumn: vf.Sold}
		if i < len(snap.Sale.Variants) {
			vl.RedisTotal, vl.Available = snap.Sale.Variants[i].Total, snap.Sale.Variants[i].Available
		}
		l.Variants = append(l.Variants, vl)
		variantsBalanced = variantsBalanced && vl.SoldColumn == vf.Held+vf.OffSale
	}
	for _, q := range snap.Queued {
		var vl *VariantLedger
		if i, ok := q.Variant.Index(); ok && i < len(l.Variants) {
			vl = &l.Variants[i]
		}
		// Written to MySQL after the Redis read: count it once, as queued.
		if o, inMySQL := stored[q.OrderID]; inMySQL {
			switch o.Status {
			case store.StatusCreated, store.StatusPaid:
				l.CreatedUnits -= int64(o.Quantity)
				expect[q.Buyer] -= stock.Holds(o.Quantity)
			case store.StatusGrouping:
				l.GroupingUnits -= int64(o.Quantity)
				expect[q.Buyer] -= stock.Holds(o.Quantity)
			}
			if vl != nil && (o.Status == store.StatusCreated || o.Status == store.StatusPaid) {
				vl.HeldUnits -= int64(o.Quantity)
			}
		}
		l.QueuedUnits += int64(q.Quantity)
		expect[q.Buyer] += stock.Holds(q.Quantity)
		if vl != nil {
			vl.HeldUnits += int64(q.Quantity)
		}
	}
	for i := range l.Variants {
		vl := &l.Variants[i]
		vl.Difference = vl.StockTotal - (vl.Available + vl.HeldUnits + vl.OffSaleUnits)
		variantsBalanced = variantsBalanced && vl.Difference == 0 && vl.RedisTotal == vl.StockTotal
	}
	l.Difference = l.StockTotal - (l.Available + l.QueuedUnits + l.GroupingUnits + l.CreatedUnits + l.PaidUnits +
		l.ReturningUnits + l.OffSaleUnits)
	for u, want := range expect {
		if got := snap.Users[u]; got != want && len(l.UserDifferences) < 20 {
			l.UserDifferences = append(l.UserDifferences, UserDifference{Named: u.Named(), Redis: got, MySQL: want})
		}
	}
	for u, got := range snap.Users {
		if _, known := expect[u]; !known && got != 0 && len(l.UserDifferences) < 20 {
			l.UserDifferences = append(l.UserDifferences, UserDifference{Named: u.Named(), Redis: got})
		}
	}
	l.Balanced = l.Difference == 0 && l.RedisTotal == l.StockTotal && variantsBalanced &&
		l.SoldColumn == f.Units[store.StatusGrouping]+f.Units[store.StatusCreated]+f.Units[store.StatusPaid]+f.OffSale &&
		len(l.UserDifferences) == 0
	return l, nil
}

// archivedLedger is the ledger of an archived sale, from MySQL alone: what its orders
// hold against activities.sold and each buyer's user_purchases.
func (s *Catalog) archivedLedger(ctx context.Context, a store.Activity) (Ledger, error) {
	f, err := s.store.Orders.Figures(ctx, a.ID)
	if err != nil {
		return Ledger{}, fmt.Errorf("ledger: %w", err)
	}
	held, err := s.store.Orders.Holdings(ctx, a.ID)
	if err != nil {
		return Ledger{}, fmt.Errorf("ledger: %w", err)
	}
	l := Ledger{ActivityID: a.ID, StockTotal: a.StockTotal, RedisTotal: a.StockTotal, GroupingUnits: f.Units[store.StatusGrouping],
		CreatedUnits: f.Units[store.StatusCreated], PaidUnits: f.Units[store.StatusPaid], ReturningUnits: f.ReturnPending,
		OffSaleUnits: f.OffSale, SoldColumn: f.Sold, UserDifferences: []UserDifference{}, Archived: true}
	l.Available = l.StockTotal - (l.GroupingUnits + l.CreatedUnits + l.PaidUnits + l.ReturningUnits + l.OffSaleUnits)
	balanced := true
	for _, vf := range f.Variants {
		vl := VariantLedger{Name: vf.Name, StockTotal: vf.StockTotal, RedisTotal: vf.StockTotal,
			HeldUnits: vf.Held + vf.ReturnPending, OffSaleUnits: vf.OffSale, SoldColumn: vf.Sold}
		vl.Available = vl.StockTotal - (vl.HeldUnits + vl.OffSaleUnits)
		l.Variants = append(l.Variants, vl)
		balanced = balanced && vl.SoldColumn == vf.Held+vf.OffSale
	}
	for u, n := range f.Users {
		if held[u] != n && len(l.UserDifferences) < 20 {
			l.UserDifferences = append(l.UserDifferences, UserDifference{Named: u.Named(), Redis: held[u], MySQL: n})
		}
	}
	for u, n := range held {
		if _, known := f.Users[u]; !known && len(l.UserDifferences) < 20 {
			l.UserDifferences = append(l.UserDifferences, UserDifference{Named: u.Named(), Redis: n})
		}
	}
	l.Balanced = balanced && l.SoldColumn == l.GroupingUnits+l.CreatedUnits+l.PaidUnits+l.OffSaleUnits &&
		len(l.UserDifferences) == 0
	return l, nil
}

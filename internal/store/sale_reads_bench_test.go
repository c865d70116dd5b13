package store_test

import (
	"context"
	"testing"
	"time"

	"seckill/internal/sale"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

// BenchmarkWholeSaleReads measures the reads over every order of a sale of 1,000,000
// (beside a second one, seedTwoSales) through the service's MySQL client (config.MySQL:
// 2 s for a read, and for a statement or a transaction without a deadline): the
// admin's stats and ledger, the funnel, a rebuild's and the archive's reads. Each must
// answer: one that runs past a bound fails the benchmark.
//
//	go test -run - -bench WholeSaleReads -benchtime 1x ./internal/store   # seeds 2M orders, about a minute
func BenchmarkWholeSaleReads(b *testing.B) {
	ctx := context.Background()
	testDB := testutil.MySQL(b)
	st := store.New(testDB.ServiceGorm(b), sale.EventViews{})
	start := time.Now()
	_, sales := seedTwoSales(b, testDB.Gorm, store.New(testDB.Gorm, sale.EventViews{}), 1_000_000, 100_000)
	b.Logf("seeded 2 x 1,000,000 orders in %v", time.Since(start).Round(time.Millisecond))
	a, day := sales[0], time.Now().Add(-24*time.Hour)
	for _, tc := range []struct {
		name string
		read func() error
	}{
		{"CountOrders (stats)", func() error { _, err := st.Orders.CountOrders(ctx, a); return err }},
		{"Figures (ledger)", func() error { _, err := st.Orders.Figures(ctx, a); return err }},
		{"OrderFacts (funnel)", func() error { _, err := st.Orders.OrderFacts(ctx, a); return err }},
		{"Holdings (rebuild)", func() error { _, err := st.Orders.Holdings(ctx, a); return err }},
		{"RebuildFacts (rebuild)", func() error { _, err := st.Upkeep.RebuildFacts(ctx, a, nil); return err }},
		{"KeyedOrders (rebuild)", func() error { _, err := st.Upkeep.KeyedOrders(ctx, a, day); return err }},
		{"LastFinal (archive)", func() error { _, err := st.Upkeep.LastFinal(ctx, a); return err }},
		{"SaleNames (archive)", func() error { _, err := st.Upkeep.SaleNames(ctx, a, day); return err }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if err := tc.read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

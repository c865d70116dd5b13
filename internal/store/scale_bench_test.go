package store_test

import (
	"context"
	"testing"
	"time"

	"seckill/internal/sale"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

// BenchmarkActivityList measures a read of the public list's sales (ActivityList.Read)
// in a shop with a history of 8,192 archived sales and 8 live ones: a first read (every
// sale from MySQL), and a later one (the live sales from MySQL, none archived within
// the hour, merged with the archived ones it keeps). MySQL's client is the API's
// (config.MySQL).
//
//	go test -run - -bench ActivityList -benchtime 20x ./internal/store
func BenchmarkActivityList(b *testing.B) {
	ctx := context.Background()
	testDB := testutil.MySQL(b)
	db := testDB.ServiceGorm(b)
	st := store.New(db, sale.EventViews{})
	now := time.Now()
	archived := &store.Activity{Name: "a sale of last year", ProductName: "p", PriceCents: 100, StockTotal: 100,
		PerUserLimit: 1, StartsAt: now.Add(-24 * time.Hour), EndsAt: now.Add(-23 * time.Hour), Kind: "sale"}
	if err := st.Activities.CreateActivity(ctx, archived, func(store.Activity) error { return nil }); err != nil {
		b.Fatal(err)
	}
	if err := db.Exec("UPDATE activities SET archived_at = ?", now.Add(-22*time.Hour)).Error; err != nil {
		b.Fatal(err)
	}
	testDB.DoubleRows(b, "activities", 13) // 8,192 archived sales, copies of the first
	for range 8 {
		live := &store.Activity{Name: "a live sale", ProductName: "p", PriceCents: 100, StockTotal: 100,
			PerUserLimit: 1, StartsAt: now, EndsAt: now.Add(time.Hour), Kind: "sale"}
		if err := st.Activities.CreateActivity(ctx, live, func(store.Activity) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	read := func(l *store.ActivityList) {
		if as, err := l.Read(ctx); err != nil || len(as) != 8192+8 {
			b.Fatalf("%d sales, %v; want %d", len(as), err, 8192+8)
		}
	}
	b.Run("a first read", func(b *testing.B) {
		for b.Loop() {
			read(st.Activities.NewList())
		}
	})
	b.Run("a later read", func(b *testing.B) {
		l := st.Activities.NewList()
		read(l)
		for b.Loop() {
			read(l)
		}
	})
}

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

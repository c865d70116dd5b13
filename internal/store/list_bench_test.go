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

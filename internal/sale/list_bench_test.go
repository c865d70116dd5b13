package sale_test

import (
	"context"
	"testing"
	"time"

	"seckill/internal/sale"
	"seckill/internal/testutil"
)

// BenchmarkPublicListLoad measures a load of the public list's snapshot after an API's
// first (each op waits, untimed, for the snapshot's next interval, then asks the list),
// in a shop with a history of 8,192 archived sales and one live sale: MySQL, Redis for
// the live sale, and the views of every sale.
//
//	go test -run - -bench PublicListLoad -benchtime 10x ./internal/sale
func BenchmarkPublicListLoad(b *testing.B) {
	testDB := testutil.MySQL(b)
	db := testDB.Gorm
	f := newFixtureOn(b, db, 5, 1)
	ctx := context.Background()
	if err := db.Exec("UPDATE activities SET archived_at = ?", time.Now().Add(-48*time.Hour)).Error; err != nil {
		b.Fatal(err)
	}
	testDB.DoubleRows(b, "activities", 13) // 8,192 archived sales, copies of the first
	if _, err := f.svc.Catalog.CreateActivity(ctx, sale.NewActivity{Name: "live", ProductName: "p", PriceCents: 100, Stock: 5,
		PerUserLimit: 1, StartsAt: time.Now().Add(-time.Minute), EndsAt: time.Now().Add(time.Hour)}); err != nil {
		b.Fatal(err)
	}
	list := func() {
		if l, _, err := f.svc.Catalog.PublicActivities(ctx, sale.Page{Limit: 10}); err != nil || len(l) != 10 {
			b.Fatalf("%d sales, %v", len(l), err)
		}
	}
	list() // the first load reads every sale
	for b.Loop() {
		b.StopTimer()
		time.Sleep(sale.CatalogAge)
		b.StartTimer()
		list()
	}
}

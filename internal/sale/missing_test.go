package sale_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"seckill/internal/order"
	"seckill/internal/outage"
	"seckill/internal/sale"
	"seckill/internal/testutil"
	"seckill/lock"
)

// statements counts the statements a GORM session runs, and logs none.
type statements struct {
	logger.Interface
	n atomic.Int64
}

func (s *statements) Trace(context.Context, time.Time, func() (string, int64), error) { s.n.Add(1) }

// A crowd asking for sales that do not exist (their groups, their line's challenge, a
// purchase: each meets MissingSale; a purchase naming a variant), however many ids it
// tries, and for groups of a live
// sale that do not exist, reaches MySQL about once a second in this process, not once a
// request: the public list's snapshot tells a sale that does not exist, and one newer
// than it is looked up once per second for all ids.
func TestUnknownSalesReachMySQLOnceASecond(t *testing.T) {
	count := &statements{Interface: logger.Discard}
	db := testutil.MySQL(t).Gorm.Session(&gorm.Session{Logger: count})
	f := newFixtureOn(t, db, 5, 1)
	ctx := context.Background()
	if err := f.svc.Catalog.MissingSale(ctx, f.act+1); !errors.Is(err, sale.ErrNotFound) {
		t.Fatalf("a sale that does not exist: %v, want ErrNotFound", err)
	}

	const clients, each = 20, 100
	start, before := time.Now(), count.n.Load()
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				var err error
				switch unknown := f.act + 1 + rand.Int64N(1_000_000); i % 4 {
				case 0:
					_, err = f.svc.Groups.OpenGroups(ctx, unknown, 10)
				case 1:
					err = f.svc.Catalog.MissingSale(ctx, unknown)
				case 2: // a purchase naming a variant finds it first
					_, err = f.svc.Variants.Variant(ctx, unknown, "EU 42")
				default: // a group of the live sale that does not exist
					_, err = f.svc.Groups.GetGroup(ctx, fmt.Sprintf("01ARZ3NDEKTSV4RRFFQ69G5F%02d%d", c, f.act))
				}
				if !errors.Is(err, sale.ErrNotFound) {
					wrong.Add(1)
				}
			}
		})
	}
	wg.Wait()
	ran, seconds := count.n.Load()-before, time.Since(start).Seconds()
	if wrong.Load() > 0 {
		t.Errorf("%d of %d answers were not ErrNotFound", wrong.Load(), clients*each)
	}
	if limit := 3 * (int64(seconds) + 2); ran > limit { // the list, its variants, one probe: per second
		t.Errorf("%d requests for unknown sales and groups ran %d MySQL statements in %.1f s, want at most %d",
			clients*each, ran, seconds, limit)
	}
	t.Logf("%d requests, %d MySQL statements in %.2f s", clients*each, ran, seconds)
}

// A sale another API made after this one read the public list's snapshot is found by
// a purchase naming its variant at once, even while a crowd of made-up ids keeps the
// once-a-second MySQL probe taken: Redis knows it.
func TestVariantOfASaleNewerThanTheSnapshot(t *testing.T) {
	f := newFixture(t, 5, 1)
	ctx := context.Background()
	if _, _, err := f.svc.Catalog.PublicActivities(ctx, sale.Page{Limit: 10}); err != nil { // the snapshot, without the new sale
		t.Fatal(err)
	}
	other := sale.New(f.store, f.stock.Stock, order.New(f.store.Lifecycle, f.store.Activities, f.stock.Stock, outage.NewRecord(f.rdb)),
		outage.NewRecord(f.rdb), f.queue, lock.New(f.rdb))
	a, err := other.Catalog.CreateActivity(ctx, sale.NewActivity{Name: "sizes", ProductName: "shoe", PriceCents: 100,
		PerUserLimit: 1, StartsAt: time.Now().Add(-time.Minute), EndsAt: time.Now().Add(time.Hour),
		Variants: []sale.NewVariant{{Name: "EU 41", Stock: 3}, {Name: "EU 42", Stock: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id      int64
		name    string
		wantErr error
	}{
		{a.ID + 1000, "EU 42", sale.ErrNotFound}, // takes the probe
		{a.ID, "EU 42", nil},
		{a.ID + 1001, "EU 42", sale.ErrNotFound},
	} {
		_, err := f.svc.Variants.Variant(ctx, tc.id, tc.name)
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("variant %q of sale %d: %v, want %v", tc.name, tc.id, err, tc.wantErr)
		}
	}
}

package sale_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"seckill/internal/sale"
	"seckill/internal/stock"
	"seckill/internal/testutil"
)

// A sale's times are kept to the millisecond, as both stores keep them: a start or an
// end set with finer digits opens and closes the sale at the instant its answer shows,
// in its answer, in MySQL, in Redis and at the purchase, never a fraction earlier.
// The database rounds a finer time to the millisecond, as MySQL does (MariaDB cuts it).
func TestSaleTimesKeptToTheMillisecond(t *testing.T) {
	db := testutil.MySQL(t).GormWith(t, map[string]string{"sql_mode": "CONCAT(@@sql_mode, ',TIME_ROUND_FRACTIONAL')"})
	f := newFixtureOn(t, db, 10, 1)
	ctx := context.Background()
	base := time.Now().Add(time.Hour).Truncate(time.Second)
	starts, ends := base.Add(123*time.Millisecond+999_999), base.Add(time.Hour+456*time.Millisecond+789_000)
	wantStarts, wantEnds := base.Add(123*time.Millisecond).UTC(), base.Add(time.Hour+456*time.Millisecond).UTC()

	created, err := f.svc.Catalog.CreateActivity(ctx, sale.NewActivity{Name: "ms", ProductName: "p", PriceCents: 100,
		Stock: 10, PerUserLimit: 1, StartsAt: starts, EndsAt: ends})
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string, wantEnds time.Time) {
		t.Helper()
		stored, err := f.store.Activities.GetActivity(ctx, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		live, err := f.stock.Read(ctx, []int64{created.ID})
		if err != nil {
			t.Fatal(err)
		}
		read, err := f.svc.Catalog.GetActivity(ctx, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range []struct {
			where        string
			starts, ends time.Time
		}{
			{"the answer", created.StartsAt.Time, created.EndsAt.Time},
			{"a read", read.StartsAt.Time, read.EndsAt.Time},
			{"MySQL", stored.StartsAt, stored.EndsAt},
			{"Redis", live[created.ID].StartsAt, live[created.ID].EndsAt},
		} {
			if !got.starts.Equal(wantStarts) || !got.ends.Equal(wantEnds) {
				t.Errorf("%s, %s: %v to %v, want %v to %v", when, got.where, got.starts, got.ends, wantStarts, wantEnds)
			}
		}
	}
	check("created", wantEnds)

	newEnds := base.Add(2*time.Hour + 7*time.Millisecond + 999_999)
	patched, err := f.svc.Catalog.PatchActivity(ctx, created.ID, sale.ActivityPatch{EndsAt: &newEnds})
	if err != nil {
		t.Fatal(err)
	}
	wantEnds = base.Add(2*time.Hour + 7*time.Millisecond).UTC()
	created = patched // the patch's answer is checked as the answer
	check("patched", wantEnds)

	// The purchase opens at the start the answer showed, to the nanosecond.
	buy := func(at time.Time) error {
		f.svc.SetClock(func() time.Time { return at })
		_, _, err := f.svc.Purchases.Buy(ctx, sale.BuyRequest{Purchase: stock.Purchase{ActivityID: created.ID, Buyer: "9", Quantity: 1}})
		return err
	}
	if err := buy(wantStarts.Add(-time.Nanosecond)); !errors.Is(err, stock.ErrNotStarted) {
		t.Errorf("a nanosecond before the shown start: %v, want stock.ErrNotStarted", err)
	}
	if err := buy(wantStarts); err != nil {
		t.Errorf("at the shown start: %v, want a purchase", err)
	}
}

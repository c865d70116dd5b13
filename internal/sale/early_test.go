package sale_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"seckill/internal/accesscode"
	"seckill/internal/buyer"
	"seckill/internal/sale"
	"seckill/internal/stock"
	stockcodes "seckill/internal/stock/codes"
)

// A sale in its early window, whose Redis state is lost and rebuilt from MySQL (as the
// API does when a purchase finds the sale missing): its early window comes back, its
// codes come back with the owners MySQL recorded, a revoked one stays revoked, and the
// purchases of the window go on as before the loss: the owner's code serves its owner,
// and no other buyer; a buyer without a code still waits for the start.
func TestRebuildBringsBackEarlyAccess(t *testing.T) {
	f := newFixture(t, 10, 2)
	ctx := context.Background()
	now := time.Now()
	a, err := f.svc.Catalog.CreateActivity(ctx, sale.NewActivity{Name: "early", ProductName: "p", PriceCents: 100, Stock: 10,
		PerUserLimit: 2, StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), EarlyAccessSeconds: 7200})
	if err != nil {
		t.Fatal(err)
	}
	codes := accesscode.New(f.db, f.store.Activities, stockcodes.New(f.stock.Stock))
	f.svc.SetCodes(codes)
	if _, err := codes.Add(ctx, a.ID, []string{"OWNED-1", "FREE-2", "GONE-3"}); err != nil {
		t.Fatal(err)
	}
	buy := func(user int64, code string) error {
		_, _, err := f.svc.Purchases.Buy(ctx, sale.BuyRequest{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(user), Quantity: 1, AccessCode: code}})
		return err
	}
	if err := buy(1, "OWNED-1"); err != nil {
		t.Fatalf("buyer 1 in the window: %v", err)
	}
	if err := codes.Revoke(ctx, a.ID, "GONE-3"); err != nil {
		t.Fatal(err)
	}
	if n, err := codes.Record(ctx); err != nil || n != 1 {
		t.Fatalf("record: %d, %v", n, err)
	}
	if err := f.rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	f.stock.ForgetSale(a.ID)
	if _, err := f.svc.Catalog.Rebuild(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user int64
		code string
		want error
	}{
		{2, "", stock.ErrNotStarted},
		{2, "OWNED-1", stock.ErrCodeTaken},
		{2, "GONE-3", stock.ErrCodeInvalid},
		{2, "FREE-2", nil},
		{1, "OWNED-1", nil},
	} {
		if err := buy(tc.user, tc.code); !errors.Is(err, tc.want) {
			t.Errorf("after the rebuild, buyer %d with %q: %v, want %v", tc.user, tc.code, err, tc.want)
		}
	}
	st, err := f.svc.Catalog.Stats(ctx, a.ID)
	// The first purchase's order was queued only (no worker here): Redis lost it, as it
	// loses any order it alone held.
	if err != nil || st.StockAvailable != 8 || st.Orders.Queued != 2 {
		t.Errorf("after the rebuild and two early purchases: %+v, %v; want 8 units left, 2 queued", st, err)
	}
}

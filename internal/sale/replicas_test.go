package sale_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"seckill/internal/sale"
	"seckill/internal/stock"
	"seckill/internal/stock/replicas"
)

// A purchase whose reservation the replicas do not confirm answers ErrUnavailable with
// nothing taken: its units, the user's allowance and lock are given back.
func TestUnreplicatedPurchaseIsGivenBack(t *testing.T) {
	f := newFixture(t, 10, 2)
	ctx := context.Background()
	// The fixture's Redis has no replica, so WAIT 1 never succeeds.
	f.svc.Replicas = replicas.New(f.rdb, 1, 50*time.Millisecond)
	for i := range 3 {
		_, _, err := f.svc.Purchases.Buy(ctx, sale.BuyRequest{Purchase: stock.Purchase{ActivityID: f.act, Buyer: "7", Quantity: 2, IdempotencyKey: "k"}})
		if !errors.Is(err, sale.ErrUnavailable) || !errors.Is(err, replicas.ErrNotReplicated) {
			t.Fatalf("attempt %d: err = %v, want ErrUnavailable from ErrNotReplicated", i, err)
		}
		// The give-back runs in the background; the user's lock goes last.
		held := func() bool {
			locks, err := f.stock.UserLocks(ctx, f.act)
			if err != nil {
				t.Fatal(err)
			}
			return locks["7"] != ""
		}
		for deadline := time.Now().Add(5 * time.Second); held(); {
			if time.Now().After(deadline) {
				t.Fatalf("attempt %d: the user lock is still held", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
		snap, err := f.stock.Snapshot(ctx, f.act)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Sale.Available != 10 || len(snap.Queued) != 0 || snap.Users["7"] != 0 {
			t.Fatalf("after unconfirmed purchase %d: available %d, queued %d, user holds %d; want 10, 0, 0",
				i, snap.Sale.Available, len(snap.Queued), snap.Users["7"])
		}
	}
	f.svc.Replicas = nil
	o, replayed, err := f.svc.Purchases.Buy(ctx, sale.BuyRequest{Purchase: stock.Purchase{ActivityID: f.act, Buyer: "7", Quantity: 2, IdempotencyKey: "k"}})
	if err != nil || replayed || o.Quantity != 2 {
		t.Fatalf("without Replicas: %+v replayed=%v err=%v; want a new order (the key was given back)", o, replayed, err)
	}
}

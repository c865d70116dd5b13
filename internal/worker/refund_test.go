package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/order"
	"seckill/internal/outage"
	"seckill/internal/sale"
	"seckill/internal/stock"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/stocktest"
	"seckill/internal/store"
	"seckill/internal/testutil"
	"seckill/internal/upkeep"
	"seckill/internal/worker"
	"seckill/lock"
)

// Units a refund kept off sale stay off sale through a rebuild from MySQL, and a
// refund's give-back that was pending when Redis lost the sale happens once, on the
// rebuilt sale: four buyers of 2 units each (of 10), all paid; the first refunded with
// restock, the second and third without, the third's give-back not yet made when Redis
// loses everything. After the rebuild and the pending give-back, 4 units are for sale
// (10 - 2 paid - 4 off sale), the refunded buyers hold nothing, and the ledger balances.
func TestRebuildKeepsRefundsOffSale(t *testing.T) {
	db := testutil.MySQL(t)
	for _, buckets := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d buckets", buckets), func(t *testing.T) {
			ctx := context.Background()
			rdb := testutil.StartRedis(t).Client(t)
			st, sk := store.New(db.Gorm, sale.EventViews{}), stocktest.New(rdb)
			outages := outage.NewRecord(rdb)
			life := order.New(st.Lifecycle, st.Activities, sk.Stock, outages)
			svc := sale.New(st, sk.Stock, life, outages, nil, nil)
			now := time.Now()
			a, err := svc.Catalog.CreateActivity(ctx, sale.NewActivity{Name: "s", ProductName: "p", PriceCents: 100, Stock: 10,
				PerUserLimit: 3, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), StockBuckets: buckets})
			if err != nil {
				t.Fatal(err)
			}
			buy := func(user int64, id string, quantity int) error {
				_, err := sk.Reserve(ctx, reserve.Reservation{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(user), Quantity: quantity},
					OrderID: id, Now: time.Now(), LockToken: lock.NewToken(), LockTTL: time.Millisecond})
				return err
			}
			var queued []stock.QueuedOrder
			for u := int64(1); u <= 4; u++ {
				id := fmt.Sprintf("01KRRRRRRRRRRRRRRRRRRRRRR%d%d", buckets, u)
				if err := buy(u, id, 2); err != nil {
					t.Fatal(err)
				}
				queued = append(queued, stock.QueuedOrder{OrderID: id, ActivityID: a.ID, Buyer: buyer.Of(u), Quantity: 2, AmountCents: 200,
					Limit: 3, CreatedAt: now, ExpiresAt: now.Add(time.Minute)})
			}
			if err := worker.NewPersister(st.Batches, st.Orders, st.Activities, sk.Stock, outages, 10).Persist(ctx, queued); err != nil {
				t.Fatal(err)
			}
			shop := store.Access{Service: true}
			for _, q := range queued {
				if _, err := life.Pay(ctx, q.OrderID, shop); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := life.Refund(ctx, queued[0].OrderID, shop, true); err != nil {
				t.Fatal(err)
			}
			if _, err := life.Refund(ctx, queued[1].OrderID, shop, false); err != nil {
				t.Fatal(err)
			}
			// The third refund is recorded in MySQL; its give-back to Redis has not run.
			if _, _, err := st.Lifecycle.RefundOrder(ctx, queued[2].OrderID, shop, false, time.Now()); err != nil {
				t.Fatal(err)
			}

			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if rebuilt, err := upkeep.NewRebuilder(st.Upkeep, st.Activities, sk.Stock).Rebuild(ctx, a.ID, false); err != nil || !rebuilt {
				t.Fatalf("rebuild: %v, %v", rebuilt, err)
			}
			if n, err := life.ReturnPending(ctx, 10); err != nil || n != 1 {
				t.Fatalf("the pending give-back: %d, %v; want 1", n, err)
			}
			l, err := svc.Catalog.Ledger(ctx, a.ID)
			if err != nil || !l.Balanced || l.Available != 4 || l.OffSaleUnits != 4 || l.PaidUnits != 2 || l.SoldColumn != 6 {
				t.Errorf("ledger: %+v, %v; want balanced, 4 available, 4 off sale, 2 paid, sold 6", l, err)
			}
			figures, err := svc.Catalog.Stats(ctx, a.ID)
			if err != nil || figures.StockAvailable != 4 || figures.Sold != 2 || figures.OffSale != 4 || figures.Orders.Refunded != 3 ||
				figures.StockTotal != figures.StockAvailable+figures.Sold+figures.OffSale {
				t.Errorf("stats: %+v, %v; want 4 available, 2 sold, 4 off sale, 3 refunded", figures, err)
			}
			// The buyers refunded buy up to their limit again: 3 units each, of the 4 left.
			if err := buy(3, "again3", 3); err != nil {
				t.Errorf("the buyer refunded while Redis was lost buys 3: %v", err)
			}
			if err := buy(2, "again2", 3); err == nil {
				t.Error("a buyer got 3 units of the 1 left")
			}
		})
	}
}

package worker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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

// A worker claims an order, and before it writes the order to MySQL the sale is rebuilt
// from MySQL, which does not have the order yet: Redis lost the sale (and the order's
// queued state with it), or an admin forced the rebuild. Whichever way the two meet,
// the order is stored created, counted once in Redis (its buyer cannot buy past the
// limit with it), and the ledger balances.
func TestPersistAcrossARebuild(t *testing.T) {
	db := testutil.MySQL(t)
	for i, tc := range []struct {
		name    string
		buckets int
		lost    bool // Redis lost everything before the rebuild; else a forced rebuild of a sale Redis has
	}{
		{"Redis lost a one-bucket sale", 1, true},
		{"Redis lost a sale of four buckets", 4, true},
		{"a forced rebuild of a sale Redis has", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rdb := testutil.StartRedis(t).Client(t)
			st, sk := store.New(db.Gorm, sale.EventViews{}), stocktest.New(rdb)
			svc := sale.New(st, sk.Stock, nil, nil, nil, nil) // the ledger needs neither orders nor a queue
			now := time.Now()
			a, err := svc.Catalog.CreateActivity(ctx, sale.NewActivity{Name: "s", ProductName: "p", PriceCents: 100, Stock: 10,
				PerUserLimit: 3, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), StockBuckets: tc.buckets})
			if err != nil {
				t.Fatal(err)
			}
			const who = "7"
			buy := func(id string, quantity int) error {
				_, err := sk.Reserve(ctx, reserve.Reservation{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: who, Quantity: quantity},
					OrderID: id, Now: time.Now(), LockToken: lock.NewToken(), LockTTL: time.Millisecond})
				return err
			}
			id := fmt.Sprintf("01KBBBBBBBBBBBBBBBBBBBBBB%d", i)
			if err := buy(id, 2); err != nil {
				t.Fatal(err)
			}
			o := stock.QueuedOrder{OrderID: id, ActivityID: a.ID, Buyer: who, Quantity: 2, AmountCents: 200, Limit: 3,
				CreatedAt: now, ExpiresAt: now.Add(time.Minute)}

			p := worker.NewPersister(st.Batches, st.Orders, st.Activities, sk.Stock, outage.NewRecord(rdb), 10)
			held := false
			worker.HoldBeforeWrite(p, func() { // the first write waits for a whole rebuild
				if held {
					return
				}
				held = true
				if tc.lost {
					if err := rdb.FlushAll(ctx).Err(); err != nil {
						t.Fatal(err)
					}
				}
				if rebuilt, err := upkeep.NewRebuilder(st.Upkeep, st.Activities, sk.Stock).Rebuild(ctx, a.ID, !tc.lost); err != nil || !rebuilt {
					t.Fatalf("rebuild while the order is claimed: %v, %v", rebuilt, err)
				}
			})
			if err := p.Persist(ctx, []stock.QueuedOrder{o}); err != nil {
				t.Fatal(err)
			}
			if !held {
				t.Fatal("the persister never reached its write")
			}

			stored, err := st.Orders.OrdersByID(ctx, []string{id})
			if err != nil || stored[id].Status != store.StatusCreated {
				t.Errorf("the order in MySQL: %+v, %v; want created", stored[id], err)
			}
			l, err := svc.Catalog.Ledger(ctx, a.ID)
			if err != nil || !l.Balanced {
				t.Errorf("ledger after the rebuild: %+v, %v; want balanced", l, err)
			}
			if err := buy(id+"x", 2); !errors.Is(err, stock.ErrLimitExceeded) {
				t.Errorf("the buyer holds 2 of 3; 2 more: %v, want %v", err, stock.ErrLimitExceeded)
			}
		})
	}
}

package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"seckill/internal/buyer"
	"seckill/internal/outage"
	"seckill/internal/sale"
	"seckill/internal/stock"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/stocktest"
	"seckill/internal/store"
	"seckill/internal/task"
	"seckill/internal/testutil"
	"seckill/internal/worker"
	"seckill/lock"
)

// A task holds the orders of an API's batch; the persister writes them in transactions
// of at most Batch orders, and every order ends created and settled.
func TestPersisterWritesATaskInBatches(t *testing.T) {
	ctx := context.Background()
	rdb := testutil.StartRedis(t).Client(t)
	st, sk := store.New(testutil.MySQL(t).Gorm, sale.EventViews{}), stocktest.New(rdb)
	now := time.Now()
	a := store.Activity{Name: "s", ProductName: "p", PriceCents: 100, StockTotal: 10, PerUserLimit: 1,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PayWindowSeconds: 60}
	if err := st.Activities.CreateActivity(ctx, &a, func(a store.Activity) error {
		return sk.Load(ctx, stock.Sale{ActivityID: a.ID, Available: 10, Total: 10, Limit: 1,
			StartsAt: a.StartsAt, EndsAt: a.EndsAt, PriceCents: 100, PayWindow: time.Minute})
	}); err != nil {
		t.Fatal(err)
	}
	var orders []stock.QueuedOrder
	for u := int64(1); u <= 5; u++ {
		id := fmt.Sprintf("01KAAAAAAAAAAAAAAAAAAAAAA%d%d", u, a.ID)
		if _, err := sk.Reserve(ctx, reserve.Reservation{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(u), Quantity: 1},
			OrderID: id, Now: now, LockToken: lock.NewToken(), LockTTL: time.Second}); err != nil {
			t.Fatal(err)
		}
		orders = append(orders, stock.QueuedOrder{OrderID: id, ActivityID: a.ID, Buyer: buyer.Of(u), Quantity: 1, AmountCents: 100,
			CreatedAt: now, ExpiresAt: now.Add(time.Minute), Limit: 1})
	}
	batch := task.NewBatchTask(orders, nil)

	p := worker.NewPersister(st.Batches, st.Orders, st.Activities, sk.Stock, outage.NewRecord(rdb), 2)
	reg := prometheus.NewRegistry()
	p.Register(reg)
	if err := p.HandleTask(ctx, asynq.NewTask(batch.Type(), batch.Payload())); err != nil {
		t.Fatal(err)
	}

	ids := make([]string, len(orders))
	for i, o := range orders {
		ids[i] = o.OrderID
	}
	stored, err := st.Orders.OrdersByID(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if stored[id].Status != store.StatusCreated {
			t.Errorf("order %s: status %q, want created", id, stored[id].Status)
		}
	}
	if snap, err := sk.Snapshot(ctx, a.ID); err != nil || len(snap.Queued) != 0 {
		t.Errorf("queued in Redis after the task: %v %v, want none", snap.Queued, err)
	}
	if n, sum := histogram(t, reg, "seckill_persist_batch_size"); n != 3 || sum != 5 {
		t.Errorf("%v orders in %v transactions, want 5 in 3 (2, 2, 1)", sum, n)
	}
	// Each order's wait from its creation (the 202) to its row: at least the time since
	// the orders were made above.
	if n, sum := histogram(t, reg, "seckill_order_persist_delay_seconds"); n != 5 || sum < 0 || sum > 5*time.Since(now).Seconds() {
		t.Errorf("persist delay: %v orders, %v s in all; want 5 orders within %v s each", n, sum, time.Since(now).Seconds())
	}
}

// histogram reads a histogram of reg: its samples and their sum.
func histogram(t *testing.T, reg *prometheus.Registry, name string) (count uint64, sum float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatalf("no %s metric", name)
	return 0, 0
}

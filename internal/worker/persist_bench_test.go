package worker_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"seckill/internal/buyer"
	"seckill/internal/config"
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

// BenchmarkPersisterHandleTask runs the worker's handling of its tasks as under a crowd,
// metrics kept and asynq's own work left out: tasks of 100 orders (about what an API process's commits
// give one) of new buyers of one sale, each parsed, claimed in Redis, written to MySQL in
// one transaction (on a private MariaDB, reached as the service reaches it) and settled
// in Redis, from two goroutines. The orders are reserved in Redis before the timer
// starts. It reports this process's CPU per order (worker-µs/order): the whole worker's
// share of a purchase, where BenchmarkPersistBatch (internal/store) measures its MySQL
// writes alone.
//
//	go test -run '^$' -bench HandleTask -benchtime 20000x ./internal/worker/
func BenchmarkPersisterHandleTask(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400)) // as the worker runs (GOGC, config.Vars)
	ctx := context.Background()
	rdb := testutil.StartRedis(b).Client(b)
	gdb, err := config.Config{MySQLDSN: testutil.StartMariaDB(b).Database(b).DSN}.MySQL()
	if err != nil {
		b.Fatal(err)
	}
	st, sk := store.New(gdb, sale.EventViews{}), stocktest.New(rdb)
	now := time.Now()
	units := int64(b.N + 100)
	a := store.Activity{Name: "sale", ProductName: "phone", PriceCents: 100, StockTotal: units, PerUserLimit: 1,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PayWindowSeconds: 900}
	if err := st.Activities.CreateActivity(ctx, &a, func(a store.Activity) error {
		return sk.Load(ctx, stock.Sale{ActivityID: a.ID, Available: units, Total: units, Limit: 1,
			StartsAt: a.StartsAt, EndsAt: a.EndsAt, PriceCents: 100, PayWindow: 15 * time.Minute})
	}); err != nil {
		b.Fatal(err)
	}
	const batch, writers = 100, 2
	var tasks []*asynq.Task
	for first := 1; first <= b.N+batch; first += batch { // a first task for the statements' first runs
		var orders []stock.QueuedOrder
		for u := int64(first); u < int64(min(first+batch, b.N+batch+1)); u++ {
			id := fmt.Sprintf("01K%022d%d", u, a.ID)
			if _, err := sk.Reserve(ctx, reserve.Reservation{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(u),
				Quantity: 1}, OrderID: id, Now: now, LockToken: lock.NewToken(), LockTTL: time.Second}); err != nil {
				b.Fatal(err)
			}
			orders = append(orders, stock.QueuedOrder{OrderID: id, ActivityID: a.ID, Buyer: buyer.Of(u), Quantity: 1,
				AmountCents: 100, CreatedAt: now, ExpiresAt: now.Add(15 * time.Minute), Limit: 1})
		}
		t := task.NewBatchTask(orders, nil)
		tasks = append(tasks, asynq.NewTask(t.Type(), t.Payload()))
	}
	p := worker.NewPersister(st.Batches, st.Orders, st.Activities, sk.Stock, outage.NewRecord(rdb), batch)
	p.Register(prometheus.NewRegistry())
	handle := func(tasks []*asynq.Task) {
		queue := make(chan *asynq.Task)
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				for t := range queue {
					if err := p.HandleTask(ctx, t); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for _, t := range tasks {
			queue <- t
		}
		close(queue)
		wg.Wait()
	}
	handle(tasks[:1])
	runtime.GC()
	own0 := testutil.OwnCPU()
	b.ResetTimer()
	handle(tasks[1:])
	b.StopTimer()
	b.ReportMetric(float64((testutil.OwnCPU()-own0).Microseconds())/float64(b.N), "worker-µs/order")
	if snap, err := sk.Snapshot(ctx, a.ID); err != nil || len(snap.Queued) != 0 {
		b.Errorf("%d orders still queued in Redis (%v), want none", len(snap.Queued), err)
	}
}

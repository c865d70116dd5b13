package reserve

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"seckill/internal/stock"
	"seckill/internal/stock/settle"
	"seckill/internal/task"
	"seckill/internal/testutil"
)

// BenchmarkPurchasePhases is BenchmarkPurchaseCycle's work on the Redis master one step
// at a time, each step alone on the server, so that each one's CPU per purchase shows:
// the reserve script (purchases of new buyers from 64 goroutines through Reserve,
// coalesced), the release of their user locks (ReleaseUserLocks), asynq's enqueue of
// their orders (one task per commit batch, task.Enqueuer), asynq's dequeue and
// completion of those tasks (an asynq server whose handler does nothing), the
// worker's claim and settle, and the repair pass that then drops the settled orders'
// entries of the queued-since index (Stale, one pass over them all). Commits and tasks are of -commit purchases (100, what a
// crowd of `make loadtest` on this machine gets), each task claimed and settled whole.
// A server with AOF and appendfsync always; clients auto-pipelined as the service's.
//
//	go test -run '^$' -bench PurchasePhases -benchtime 40000x ./internal/stock/reserve/
func BenchmarkPurchasePhases(b *testing.B) {
	const commit = 100
	srv := testutil.StartRedis(b, "--appendonly", "yes", "--appendfsync", "always")
	plain := srv.Client(b)
	ap := autoPipelined(b, plain)
	s := newSide(ap)
	ctx := context.Background()
	act := orderSeq.Add(1)
	loadSale(b, s, act, 1<<40, 1)
	warm := purchase(act, 0, 1) // every script loaded before the first step
	if _, err := s.Reserve(ctx, warm); err != nil {
		b.Fatal(err)
	}
	if err := s.ReleaseUserLocks(ctx, warm); err != nil {
		b.Fatal(err)
	}
	rs := make([]Reservation, b.N)
	for i := range rs {
		rs[i] = purchase(act, int64(i+1), 1)
	}
	batches := func(f func([]Reservation)) {
		for i := 0; i < len(rs); i += commit {
			f(rs[i:min(len(rs), i+commit)])
		}
	}
	enqueuer := task.NewEnqueuer(asynq.NewClientFromRedisClient(ap))
	var handled atomic.Int64
	tasks := asynq.NewServerFromRedisClient(ap, asynq.Config{Concurrency: 8, Queues: map[string]int{task.Queue: 1},
		TaskCheckInterval: 50 * time.Millisecond, LogLevel: asynq.FatalLevel})

	b.ResetTimer()
	step(b, plain, "reserve", func() {
		work := make(chan Reservation)
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for r := range work {
					if _, err := s.Reserve(ctx, r); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for _, r := range rs {
			work <- r
		}
		close(work)
		wg.Wait()
	})
	step(b, plain, "release", func() {
		batches(func(rs []Reservation) {
			if err := s.ReleaseUserLocks(ctx, rs...); err != nil {
				b.Fatal(err)
			}
		})
	})
	step(b, plain, "enqueue", func() {
		batches(func(rs []Reservation) {
			orders := make([]stock.QueuedOrder, len(rs))
			for i, r := range rs {
				orders[i] = stock.QueuedOrder{OrderID: r.OrderID, ActivityID: act, Buyer: r.Buyer, Quantity: 1,
					CreatedAt: r.Now, Limit: 1}
			}
			if err := enqueuer.EnqueueBatch(ctx, orders); err != nil {
				b.Fatal(err)
			}
		})
	})
	want := int64((len(rs) + commit - 1) / commit)
	step(b, plain, "dequeue", func() {
		mux := asynq.NewServeMux()
		mux.HandleFunc(task.TypePersist, func(context.Context, *asynq.Task) error { handled.Add(1); return nil })
		if err := tasks.Start(mux); err != nil {
			b.Fatal(err)
		}
		for handled.Load() < want {
			time.Sleep(time.Millisecond)
		}
		tasks.Shutdown()
	})
	step(b, plain, "claim", func() {
		batches(func(rs []Reservation) {
			refs := make([]settle.OrderRef, len(rs))
			for i, r := range rs {
				refs[i] = settle.OrderRef{OrderID: r.OrderID, Buyer: r.Buyer}
			}
			if got, err := s.Claim(ctx, act, refs); err != nil || len(got) != len(rs) {
				b.Fatalf("claimed %d of %d: %v", len(got), len(rs), err)
			}
		})
	})
	step(b, plain, "settle", func() {
		batches(func(rs []Reservation) {
			ss := make([]settle.Settlement, len(rs))
			for i, r := range rs {
				ss[i] = settle.Settlement{OrderID: r.OrderID, Buyer: r.Buyer}
			}
			if err := s.Settle(ctx, act, ss); err != nil {
				b.Fatal(err)
			}
		})
	})
	step(b, plain, "repair", func() {
		if stale, err := s.Stale(ctx, act, warm.Now, 500); err != nil || len(stale) != 1 || stale[0].OrderID != warm.OrderID {
			b.Fatalf("stale = %+v, %v; want the warm-up's order alone", stale, err)
		}
	})
	b.StopTimer()
	if left, err := plain.HLen(ctx, stock.QueuedKey(stock.One(act))).Result(); err != nil || left != 1 { // the warm-up's
		b.Fatalf("%d orders left queued, want 1 (%v)", left, err)
	}
	if left, err := plain.ZCard(ctx, stock.QueuedSinceKey(stock.One(act))).Result(); err != nil || left != 1 {
		b.Fatalf("%d members left in the since index, want the warm-up's (%v)", left, err)
	}
}

// step runs one step and reports the server's CPU per purchase in it (INFO cpu).
func step(b *testing.B, rdb *redis.Client, name string, run func()) {
	sys, user := redisCPUSplit(b, rdb)
	run()
	sys2, user2 := redisCPUSplit(b, rdb)
	b.ReportMetric((sys2-sys+user2-user)*1e6/float64(b.N), name+"-µs/purchase")
}

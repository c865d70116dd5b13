package stock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"seckill/internal/stock"
	"seckill/internal/testutil"
)

// BenchmarkRedisMemory reports what a sale, and an order while it is queued (from its
// 202 until the worker settles it), hold in Redis: used_memory before and after b.N
// of them, divided by b.N (docs/sizing.md).
//
//	go test -run '^$' -bench RedisMemory -benchtime 20000x ./internal/stock/
func BenchmarkRedisMemory(b *testing.B) {
	ctx := context.Background()
	b.Run("sale", func(b *testing.B) {
		rdb := testutil.StartRedis(b).Client(b)
		s := stock.New(rdb)
		before := testutil.UsedMemory(b, rdb)
		for i := range b.N {
			newSaleB(b, s, int64(i+1))
		}
		b.ReportMetric(float64(testutil.UsedMemory(b, rdb)-before)/float64(b.N), "bytes/sale")
	})
	b.Run("queued-order", func(b *testing.B) {
		rdb := testutil.StartRedis(b).Client(b)
		s := stock.New(rdb)
		newSaleB(b, s, 1)
		before := testutil.UsedMemory(b, rdb)
		now := t0.Add(time.Minute)
		for i := range b.N {
			// A buyer of its own, with an Idempotency-Key, as a crowd's purchase is.
			r := reservation(1, int64(i+1), 1, "key-"+strconv.Itoa(i), now)
			if _, err := s.Reserve(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		// The purchases' user locks are still held, as they are until their commit: the
		// figure is an order's with its buyer's lock, the most it holds while queued.
		b.StopTimer()
		b.ReportMetric(float64(testutil.UsedMemory(b, rdb)-before)/float64(b.N), "bytes/order")
	})
}

func newSaleB(b *testing.B, s *stock.Stock, id int64) {
	b.Helper()
	err := s.Load(context.Background(), stock.Sale{ActivityID: id, Available: 1 << 30, Total: 1 << 30,
		Limit: 1, StartsAt: t0, EndsAt: t0.Add(time.Hour), PriceCents: 1999, PayWindow: 15 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
}

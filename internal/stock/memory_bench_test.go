package stock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/stock"
	"seckill/internal/stock/lifecycle"
	"seckill/internal/stock/settle"
	"seckill/internal/stock/stocktest"
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
		s := stocktest.New(rdb)
		before := testutil.UsedMemory(b, rdb)
		for i := range b.N {
			newSaleB(b, s, int64(i+1))
		}
		b.ReportMetric(float64(testutil.UsedMemory(b, rdb)-before)/float64(b.N), "bytes/sale")
	})
	b.Run("queued-order", func(b *testing.B) {
		rdb := testutil.StartRedis(b).Client(b)
		s := stocktest.New(rdb)
		newSaleB(b, s, 1)
		before := testutil.UsedMemory(b, rdb)
		now := stocktest.T0.Add(time.Minute)
		for i := range b.N {
			// A buyer of its own, with an Idempotency-Key, as a crowd's purchase is.
			r := stocktest.Reservation(1, int64(i+1), 1, "key-"+strconv.Itoa(i), now)
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

// BenchmarkBuyerMemory reports what a buyer of a sale holds in Redis once their order
// is in MySQL (its pay window running, their Idempotency-Key still kept), and once the
// sale is archived (docs/sizing.md): used_memory before the sale, with b.N buyers
// settled, and after the archive's removal, each divided by b.N.
//
//	go test -run '^$' -bench BuyerMemory -benchtime 100000x ./internal/stock/
func BenchmarkBuyerMemory(b *testing.B) {
	ctx := context.Background()
	rdb := testutil.StartRedis(b).Client(b)
	s := stocktest.New(rdb)
	before := testutil.UsedMemory(b, rdb)
	newSaleB(b, s, 1)
	now := stocktest.T0.Add(time.Minute)
	var names lifecycle.Names
	for start := 0; start < b.N; start += 1000 {
		var refs []settle.OrderRef
		var settled []settle.Settlement
		for i := start; i < min(start+1000, b.N); i++ {
			r := stocktest.Reservation(1, int64(i+1), 1, "key-"+strconv.Itoa(i), now)
			if _, err := s.Reserve(ctx, r); err != nil {
				b.Fatal(err)
			}
			refs = append(refs, settle.OrderRef{OrderID: r.OrderID, Buyer: r.Buyer})
			settled = append(settled, settle.Settlement{OrderID: r.OrderID, Buyer: r.Buyer})
			names.Buyers = append(names.Buyers, r.Buyer)
			names.Keys = append(names.Keys, lifecycle.KeptKey{Buyer: r.Buyer, Key: r.IdempotencyKey})
		}
		if _, err := s.Claim(ctx, 1, refs); err != nil {
			b.Fatal(err)
		}
		if err := s.Settle(ctx, 1, settled); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	time.Sleep(2 * time.Second) // the purchases' user locks (a 1 ms lease) expire
	live := testutil.UsedMemory(b, rdb)
	b.StartTimer()
	closing, err := s.Close(ctx, 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.MarkArchived(ctx, 1, 1, closing); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Remove(ctx, 1, 1, names); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	time.Sleep(time.Second) // UNLINK frees large values on another thread
	archived := testutil.UsedMemory(b, rdb)
	b.ReportMetric(float64(live-before)/float64(b.N), "bytes/buyer-live")
	b.ReportMetric(float64(archived-before)/float64(b.N), "bytes/buyer-archived")
	b.ReportMetric(unlinkMicros(b, rdb), "µs/unlink") // the longest Redis is held by the removal, on average
}

// unlinkMicros is the mean time Redis spent in one UNLINK (INFO commandstats).
func unlinkMicros(b *testing.B, rdb *redis.Client) float64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if rest, ok := strings.CutPrefix(l, "cmdstat_unlink:"); ok {
			for _, f := range strings.Split(rest, ",") {
				if v, ok := strings.CutPrefix(f, "usec_per_call="); ok {
					n, err := strconv.ParseFloat(v, 64)
					if err != nil {
						b.Fatal(err)
					}
					return n
				}
			}
		}
	}
	b.Fatal("no UNLINK in INFO commandstats")
	return 0
}

func newSaleB(b *testing.B, s *stocktest.Side, id int64) {
	b.Helper()
	err := s.Load(context.Background(), stock.Sale{ActivityID: id, Available: 1 << 30, Total: 1 << 30,
		Limit: 1, StartsAt: stocktest.T0, EndsAt: stocktest.T0.Add(time.Hour), PriceCents: 1999, PayWindow: 15 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
}

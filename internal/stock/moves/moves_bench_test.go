package moves_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// BenchmarkMoves sells a sale of K buckets to buyers who all live in one bucket, so all
// but that bucket's share of the units has to move to them: units moved per second,
// and the units stranded once the buyers meet sold out (none may be). Each op is one
// sale of 3,000 units bought by 16 buyers at a time, a unit each, on a server with AOF
// always. moves/op counts take+apply pairs.
//
//	go test -run '^$' -bench Moves -benchtime 5x ./internal/stock/moves/
//
// saleSeq numbers the benchmark's sales.
var saleSeq atomic.Int64

func BenchmarkMoves(b *testing.B) {
	s := stocktest.New(testutil.StartRedis(b, "--appendonly", "yes", "--appendfsync", "always").Client(b))
	ctx := context.Background()
	const units, buyers = 3000, 16
	for _, k := range []int{3, 8} {
		b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) {
			var moved, moves, stranded, elapsed int64
			for range b.N {
				act := saleSeq.Add(1)
				stocktest.LoadBuckets(b, s, act, units, 1, k)
				var user atomic.Int64
				next := func() int64 { // the next buyer whose home is bucket 0
					for {
						if u := user.Add(1); stock.HomeBucket(buyer.Of(u), k) == 0 {
							return u
						}
					}
				}
				t0 := time.Now()
				var wg sync.WaitGroup
				var sold atomic.Int64
				for range buyers {
					wg.Go(func() {
						for {
							_, err := s.Reserve(ctx, stocktest.Purchase(act, next(), 1))
							if err != nil {
								return // sold out
							}
							sold.Add(1)
						}
					})
				}
				wg.Wait()
				elapsed += int64(time.Since(t0))
				applied, err := s.Redis().ZCard(ctx, stock.AppliedKey(stock.Whole(act, k))).Result()
				if err != nil {
					b.Fatal(err)
				}
				moves += applied
				moved += units - units/int64(k) // what the other buckets held
				stranded += units - sold.Load()
			}
			b.ReportMetric(float64(moved)/time.Duration(elapsed).Seconds(), "units-moved/s")
			b.ReportMetric(float64(moves)/float64(b.N), "moves/op")
			b.ReportMetric(float64(stranded)/float64(b.N), "stranded/op")
		})
	}
}

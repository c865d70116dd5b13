package reserve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/stock"
	"seckill/internal/testutil"
)

// BenchmarkReserveVariants measures the reserve step of a purchase of a sale without
// variants, of one variant, and of 100 variants (each purchase of one at random), in one
// run on one Redis (AOF off: the script's work, not the disk's): one script call for
// batches of 1 and of 16 purchases, sent by 8 goroutines, with the server's CPU per
// purchase. A purchase of a variant reads and writes its variant's units beside the
// sale's, so 100 variants cost a purchase what one does.
//
//	go test -run '^$' -bench ReserveVariants -benchtime 20000x -count 6 ./internal/stock | tee new.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /variants new.txt
func BenchmarkReserveVariants(b *testing.B) {
	s := newSide(testutil.StartRedis(b).Client(b))
	for _, size := range []int{1, 16} {
		for _, n := range []int{0, 1, 100} {
			name := fmt.Sprint(n)
			if n == 0 {
				name = "none"
			}
			b.Run(fmt.Sprintf("batch=%d/variants=%s", size, name), func(b *testing.B) {
				act := orderSeq.Add(1)
				sale := stock.Sale{ActivityID: act, Limit: 1, StartsAt: start, EndsAt: start.Add(time.Hour), PriceCents: 100,
					PayWindow: time.Minute}
				for range n {
					sale.Variants = append(sale.Variants, stock.VariantStock{Total: 1 << 30, Available: 1 << 30})
				}
				sale.Total = 1 << 40
				if n > 0 {
					sale.Total = int64(n) << 30
				}
				sale.Available = sale.Total
				if err := s.Load(context.Background(), sale); err != nil {
					b.Fatal(err)
				}
				var user atomic.Int64
				cpu := redisCPU(b, s)
				b.SetParallelism(4) // 8 senders on 2 cores
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					rng := rand.New(rand.NewPCG(uint64(user.Add(1<<32)), 1))
					calls := make([]*reserveCall, 0, size)
					for pb.Next() {
						r := purchase(act, user.Add(1), 1)
						if n > 0 {
							r.Variant = stock.VariantAt(rng.IntN(n))
						}
						calls = append(calls, &reserveCall{ctx: context.Background(), r: r, b: stock.One(act)})
						if len(calls) == size {
							s.reserveAll(context.Background(), calls)
							for _, c := range calls {
								if c.err != nil || c.reply[0] != int64(0) {
									b.Fatalf("%v %v", c.reply, c.err)
								}
							}
							calls = calls[:0]
						}
					}
				})
				b.ReportMetric(float64((redisCPU(b, s)-cpu).Microseconds())/float64(b.N), "redis-µs/purchase")
			})
		}
	}
}

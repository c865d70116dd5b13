package waitingroom_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/altcha"
	"seckill/internal/auth"
	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
	"seckill/internal/waitingroom"
)

// BenchmarkLineOf200000 fills a sale's line with 200,000 buyers before the start (the
// lottery's draws), then starts the sale and advances the line every 100 ms, as the
// worker does, on Redis' own clock, until everyone is admitted. It reports Redis'
// memory per waiting ticket and per admitted one (used_memory before and after, over
// the tickets), the joins per second of 16 goroutines, and the seconds from the start
// to the last admission beside what the rate alone takes. The sale has a unit per
// buyer, so the inventory cap does not hold admission back.
//
//	go test -run '^$' -bench LineOf200000 -benchtime 1x ./internal/waitingroom/
func BenchmarkLineOf200000(b *testing.B) {
	const buyers, rate = 200_000, 20_000
	ctx := context.Background()
	for range b.N {
		srv := testutil.StartRedis(b)
		rdb := srv.Client(b)
		st := stocktest.New(rdb)
		l := waitingroom.New(rdb, auth.NewPasses(secret), altcha.New(auth.DeriveKey(secret, "altcha")))
		now, err := rdb.Time(ctx).Result()
		if err != nil {
			b.Fatal(err)
		}
		sale := stock.Sale{ActivityID: 1, Available: buyers, Total: buyers, Limit: 1, StartsAt: now.Add(time.Hour),
			EndsAt: now.Add(2 * time.Hour), PriceCents: 100, PayWindow: time.Minute,
			Room: stock.Room{On: true, AdmitPerSecond: rate, PassTTL: time.Hour, Prequeue: 2 * time.Hour, ChallengeCost: 1000}}
		if err := st.Load(ctx, sale); err != nil {
			b.Fatal(err)
		}
		before := testutil.UsedMemory(b, rdb)

		joinStart := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for u := next.Add(1); u <= buyers; u = next.Add(1) {
					if _, _, err := l.Join(ctx, 1, buyer.Of(u), "", ""); err != nil {
						b.Errorf("user %d joins: %v", u, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		joinSecs := time.Since(joinStart).Seconds()
		waiting := testutil.UsedMemory(b, rdb)

		// The start is now, by Redis' clock.
		if now, err = rdb.Time(ctx).Result(); err != nil {
			b.Fatal(err)
		}
		sale.StartsAt = now
		if err := st.Load(ctx, sale); err != nil {
			b.Fatal(err)
		}
		var last time.Time
		for left := int64(buyers); left > 0; {
			step, err := l.Admit(ctx, 1)
			if err != nil {
				b.Fatal(err)
			}
			if step.Admitted > 0 {
				if last, err = rdb.Time(ctx).Result(); err != nil {
					b.Fatal(err)
				}
			}
			left = step.Waiting
			// The admission job's own period, as the worker runs it: part of what is measured.
			time.Sleep(100 * time.Millisecond)
		}
		admitted := testutil.UsedMemory(b, rdb)
		f, err := l.Figures(ctx, 1)
		if err != nil || f.Admitted != buyers || f.Waiting != 0 {
			b.Fatalf("figures %+v (%v), want all %d admitted", f, err, buyers)
		}
		b.ReportMetric(float64(waiting-before)/buyers, "B/waiting-ticket")
		b.ReportMetric(float64(admitted-before)/buyers, "B/admitted-ticket")
		b.ReportMetric(buyers/joinSecs, "joins/s")
		b.ReportMetric(last.Sub(now).Seconds(), "s-start-to-last-admission")
		b.ReportMetric(float64(buyers)/rate, "s-at-the-rate")
	}
}

package reserve

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/stock"
	"seckill/internal/stock/settle"
	"seckill/internal/testutil"
)

// BenchmarkPurchaseCycle runs what one purchase costs the Redis master, start to end, as
// the service runs it on one server with AOF and appendfsync always: purchases of one
// sale by new buyers (a unit each) from 64 goroutines through Reserve (coalesced), the
// commit's release of their user locks (ReleaseUserLocks, in batches of up to 500 after
// a 5 ms linger below 250, as internal/sale's committer), and the worker's
// Claim and Settle of each batch in chunks of 250 (8 at a time, as SECKILL_PERSIST_BATCH
// and SECKILL_WORKER_CONCURRENCY; MySQL is left out). The API's and the worker's
// clients auto-pipeline, full duplex, as config.RedisPipelined. It reports the server's
// CPU per purchase (INFO cpu, and its system part) once every purchase is settled; with
// SECKILL_CYCLE_STATS=1 it prints INFO commandstats per purchase, and
// SECKILL_CYCLE_REDIS_ARGS adds redis-server arguments (a setting to compare). The asynq
// task of each batch is not in it (one per commit batch of up to 500 purchases). It runs
// twice, each on a server of its own: limits=off, and limits=on with each purchase
// counted against its buyer's allowance as SECKILL_RATE_USER's default (20/s) has the
// API send it, so the two give what the allowance costs the master in one run.
//
//	go test -run '^$' -bench PurchaseCycle -benchtime 40000x ./internal/stock/reserve/
func BenchmarkPurchaseCycle(b *testing.B) {
	for _, bc := range []struct {
		name      string
		perSecond float64
	}{{"limits=off", 0}, {"limits=on", 20}} {
		b.Run(bc.name, func(b *testing.B) { benchmarkPurchaseCycle(b, bc.perSecond) })
	}
}

func benchmarkPurchaseCycle(b *testing.B, perSecond float64) {
	args := append([]string{"--appendonly", "yes", "--appendfsync", "always"},
		strings.Fields(os.Getenv("SECKILL_CYCLE_REDIS_ARGS"))...)
	srv := testutil.StartRedis(b, args...)
	plain := srv.Client(b)
	apiRedis, workerRedis := autoPipelined(b, plain), autoPipelined(b, plain)
	api, worker := newSide(apiRedis), newSide(workerRedis)
	ctx := context.Background()

	act := orderSeq.Add(1)
	loadSale(b, api, act, 1<<40, 1)
	// One purchase first, so every script is loaded and the sale known to both.
	cycle := newPurchaseCycle(b, api, worker, act)
	cycle.perSecond = perSecond
	cycle.run(1)
	if err := plain.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	sys, user := redisCPUSplit(b, plain)
	b.ResetTimer()
	cycle.run(b.N)
	b.StopTimer()
	sys2, user2 := redisCPUSplit(b, plain)
	perPurchase := func(d float64) float64 { return d * 1e6 / float64(b.N) }
	b.ReportMetric(perPurchase(sys2-sys+user2-user), "redis-µs/purchase")
	b.ReportMetric(perPurchase(sys2-sys), "sys-µs/purchase")
	b.ReportMetric(float64(cycle.reserveCalls.Load())/float64(b.N), "reserve-calls/purchase")
	if os.Getenv("SECKILL_CYCLE_STATS") != "" && b.N > 1 {
		printCommandStats(b, plain, b.N)
	}
	left, err := plain.HLen(ctx, stock.QueuedKey(stock.One(act))).Result()
	if err != nil || left != 0 {
		b.Fatalf("%d orders left queued (%v)", left, err)
	}
}

// purchaseCycle is BenchmarkPurchaseCycle's API and worker.
type purchaseCycle struct {
	b            *testing.B
	api, worker  *side
	act          int64
	user         atomic.Int64
	reserveCalls atomic.Int64
	perSecond    float64 // each purchase's allowance (Reservation.PerSecond); 0: none
}

func newPurchaseCycle(b *testing.B, api, worker *side, act int64) *purchaseCycle {
	c := &purchaseCycle{b: b, api: api, worker: worker, act: act}
	send := api.reserving.send
	api.reserving.send = func(ctx context.Context, calls []*reserveCall) {
		c.reserveCalls.Add(1)
		send(ctx, calls)
	}
	return c
}

// run makes n purchases and returns once every one is settled.
func (c *purchaseCycle) run(n int) {
	const buyers, maxBatch, lingerBelow, linger, persistBatch, workers = 64, 500, 250, 5 * time.Millisecond, 250, 8
	ctx := context.Background()
	committed := make(chan Reservation, 4*maxBatch)
	tasks := make(chan []Reservation, 64)

	var left atomic.Int64
	left.Store(int64(n))
	var buying sync.WaitGroup
	for range buyers {
		buying.Go(func() {
			for left.Add(-1) >= 0 {
				r := purchase(c.act, c.user.Add(1), 1)
				r.PerSecond = c.perSecond
				if _, err := c.api.Reserve(ctx, r); err != nil {
					c.b.Error(err)
					return
				}
				committed <- r
			}
		})
	}
	go func() { buying.Wait(); close(committed) }()

	var committing sync.WaitGroup
	committing.Go(func() { // the committer: one batch at a time
		defer close(tasks)
		var batch []Reservation
		open := true
		for open {
			r, ok := <-committed
			if !ok {
				break
			}
			batch = append(batch[:0:0], r)
			deadline := time.After(linger)
		gather:
			for len(batch) < maxBatch {
				if len(batch) >= lingerBelow {
					select {
					case r, ok := <-committed:
						if !ok {
							open = false
							break gather
						}
						batch = append(batch, r)
						continue
					default:
						break gather
					}
				}
				select {
				case r, ok := <-committed:
					if !ok {
						open = false
						break gather
					}
					batch = append(batch, r)
				case <-deadline:
					break gather
				}
			}
			tasks <- batch
			if err := c.api.ReleaseUserLocks(ctx, batch...); err != nil {
				c.b.Error(err)
			}
		}
	})

	var persisting sync.WaitGroup
	for range workers {
		persisting.Go(func() {
			for task := range tasks {
				for len(task) > 0 {
					chunk := task[:min(len(task), persistBatch)]
					task = task[len(chunk):]
					refs := make([]settle.OrderRef, len(chunk))
					settled := make([]settle.Settlement, len(chunk))
					for i, r := range chunk {
						refs[i] = settle.OrderRef{OrderID: r.OrderID, Buyer: r.Buyer}
						settled[i] = settle.Settlement{OrderID: r.OrderID, Buyer: r.Buyer}
					}
					claimed, err := c.worker.Claim(ctx, c.act, refs)
					if err != nil || len(claimed) != len(chunk) {
						c.b.Errorf("claimed %d of %d: %v", len(claimed), len(chunk), err)
						return
					}
					if err := c.worker.Settle(ctx, c.act, settled); err != nil {
						c.b.Error(err)
						return
					}
				}
			}
		})
	}
	committing.Wait()
	persisting.Wait()
}

// autoPipelined is a client on rdb's server that auto-pipelines as the service's do.
func autoPipelined(b testing.TB, rdb *redis.Client) *redis.AutoPipeliner {
	opts := redis.DefaultBlockingAutoPipelineOptions()
	opts.FullDuplex = true
	ap, err := rdb.AutoPipelineWithOptions(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ap.Close() })
	return ap
}

// redisCPUSplit is the server's system and user CPU time so far, in seconds (INFO cpu).
func redisCPUSplit(b testing.TB, rdb *redis.Client) (sys, user float64) {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "used_cpu_sys":
			sys, err = strconv.ParseFloat(v, 64)
		case "used_cpu_user":
			user, err = strconv.ParseFloat(v, 64)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	return sys, user
}

// printCommandStats prints INFO commandstats: each command's calls and µs per purchase.
func printCommandStats(b *testing.B, rdb *redis.Client, purchases int) {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	type stat struct {
		name        string
		calls, usec float64
	}
	var stats []stat
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		s := stat{name: strings.TrimPrefix(name, "cmdstat_")}
		for _, f := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				s.calls, _ = strconv.ParseFloat(v, 64)
			case "usec":
				s.usec, _ = strconv.ParseFloat(v, 64)
			}
		}
		stats = append(stats, s)
	}
	sort.Slice(stats, func(i, j int) bool { return stats[i].usec > stats[j].usec })
	var out strings.Builder
	n := float64(purchases)
	for _, s := range stats {
		fmt.Fprintf(&out, "\n  %-12s %7.3f calls  %6.2f µs per purchase", s.name, s.calls/n, s.usec/n)
	}
	fmt.Printf("commandstats per purchase (%d purchases):%s\n", purchases, out.String())
}

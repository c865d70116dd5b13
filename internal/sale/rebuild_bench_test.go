package sale_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/internal/buyer"
	"seckill/internal/config"
	"seckill/internal/sale"
	"seckill/internal/stock/stocktest"
	"seckill/internal/store"
	"seckill/internal/testutil"
	"seckill/internal/upkeep"
)

// BenchmarkRebuild measures rebuilding one sale's Redis state from MySQL
// (Rebuilder.Rebuild) with 10k and 1M orders of the sale in MySQL. Besides the time of
// the whole rebuild it reports its script's share: script-ms/op as the caller sees it
// (EVALSHA/EVAL, arguments sent and reply read) and redis-busy-ms/op, the time Redis
// itself ran it (INFO commandstats), during which it serves no other client. The
// sub-benchmark mysql-holdings times the GROUP BY query (store.Orders.Holdings) alone. MySQL's
// and Redis's clients are the API's (config.MySQL, config.Redis: Redis reads and writes
// with a one-second timeout, which every call of a rebuild must fit: the users are
// written in chunks before the script). How it works: docs/internals/rebuild-and-archive.md.
//
//	go test -run - -bench Rebuild -benchtime 3x ./internal/sale
func BenchmarkRebuild(b *testing.B) {
	logger := slog.Default()
	slog.SetDefault(slog.New(slog.DiscardHandler)) // Rebuild logs a warning per rebuild
	b.Cleanup(func() { slog.SetDefault(logger) })
	for _, size := range []struct {
		name   string
		orders int
	}{{"orders=10k", 10_000}, {"orders=1M", 1_000_000}} {
		b.Run(size.name, func(b *testing.B) { benchmarkRebuild(b, size.orders) })
	}
}

func benchmarkRebuild(b *testing.B, orders int) {
	ctx := context.Background()
	srv := testutil.StartRedis(b)
	rdb := config.Config{RedisAddrs: []string{srv.Addr}}.Redis()
	b.Cleanup(func() { _ = rdb.Close() })
	// The benchmark's own reads of the whole state and its FLUSHDB take longer than the
	// API's second: they go through a client of their own.
	slow := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	b.Cleanup(func() { _ = slow.Close() })
	scripts := &scriptTimer{}
	rdb.AddHook(scripts)
	testDB := testutil.MySQL(b)
	db := testDB.ServiceGorm(b)
	st, sk := store.New(db, sale.EventViews{}), stocktest.New(rdb)
	rebuilder := upkeep.NewRebuilder(st.Upkeep, st.Activities, sk.Stock)

	start := time.Now()
	seed := seedOrders(b, testDB.Gorm, st, orders)
	b.Logf("seeded %d orders, %d users holding units, in %v", orders, len(seed.held), time.Since(start).Round(time.Millisecond))

	// Once, untimed: the rebuilt state is what the seed says it must be.
	if rebuilt, err := rebuilder.Rebuild(ctx, seed.act.ID, false); err != nil || !rebuilt {
		b.Fatalf("rebuild: rebuilt %v, %v; want true", rebuilt, err)
	}
	checkRebuilt(b, stocktest.New(slow), seed)

	b.Run("rebuild", func(b *testing.B) {
		busy, script := scriptMicros(b, rdb), scripts.total.Load()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if err := slow.FlushDB(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if rebuilt, err := rebuilder.Rebuild(ctx, seed.act.ID, false); err != nil || !rebuilt {
				b.Fatalf("rebuild: rebuilt %v, %v; want true", rebuilt, err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(scripts.total.Load()-script)/1e6/float64(b.N), "script-ms/op")
		b.ReportMetric(float64(scriptMicros(b, rdb)-busy)/1e3/float64(b.N), "redis-busy-ms/op")
		b.ReportMetric(float64(len(seed.held)), "users")
	})
	b.Run("mysql-holdings", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			users, err := st.Orders.Holdings(ctx, seed.act.ID)
			if err != nil || len(users) != len(seed.held) {
				b.Fatalf("holdings: %d users, %v; want %d", len(users), err, len(seed.held))
			}
		}
		b.ReportMetric(float64(len(seed.held)), "users")
	})
}

// scriptTimer adds up the time a client spends in script calls, from the command's
// encoding to its reply.
type scriptTimer struct{ total atomic.Int64 } // nanoseconds

var _ redis.Hook = (*scriptTimer)(nil)

func (h *scriptTimer) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptTimer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		switch cmd.Name() {
		case "eval", "evalsha", "eval_ro", "evalsha_ro":
			h.total.Add(int64(time.Since(start)))
		}
		return err
	}
}

func (h *scriptTimer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// seeded is a sale with its orders in MySQL and what a rebuild must find from them.
type seeded struct {
	act       store.Activity
	held      map[int64]int64 // user -> units in created, paid and return_pending orders
	heldTotal int64
}

// seedOrders writes a sale and n orders of it in multi-row INSERTs: 1 to 3 units each,
// from n/2 users (so most users have several orders), 30% created, 50% paid, 18%
// cancelled (a tenth of those with their return still pending) and 2% failed.
func seedOrders(b *testing.B, db *gorm.DB, st *store.Store, n int) seeded {
	b.Helper()
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	a := store.Activity{Name: "bench", ProductName: "p", PriceCents: 100, StockTotal: int64(3*n + 1000),
		PerUserLimit: 10, StartsAt: t0.Add(-time.Hour), EndsAt: t0.Add(time.Hour), PayWindowSeconds: 900}
	if err := st.Activities.CreateActivity(ctx, &a, func(store.Activity) error { return nil }); err != nil {
		b.Fatal(err)
	}
	seed := seeded{act: a, held: make(map[int64]int64, n/2)}
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	stamp := func(d time.Duration) string { return "'" + t0.Add(d).Format("2006-01-02 15:04:05.000") + "'" }
	at, expires, cancelled := stamp(-5*time.Minute), stamp(10*time.Minute), stamp(-time.Minute)
	const batch = 5000
	var sql strings.Builder
	sold := int64(0)
	for first := 0; first < n; first += batch {
		sql.Reset()
		sql.WriteString("INSERT INTO orders (id, activity_id, user_id, buyer, quantity, amount_cents, status, " +
			"created_at, expires_at, paid_at, cancelled_at, persisted_at, return_pending) VALUES ")
		for i := first; i < min(first+batch, n); i++ {
			user := 1 + rng.Int64N(int64(max(1, n/2)))
			qty := 1 + rng.Int64N(3)
			status, paidAt, cancelledAt, pending := store.StatusCreated, "NULL", "NULL", 0
			switch p := rng.IntN(100); {
			case p < 30:
			case p < 80:
				status, paidAt = store.StatusPaid, at
			case p < 98:
				status, cancelledAt = store.StatusCancelled, cancelled
				if rng.IntN(10) == 0 {
					pending = 1
				}
			default:
				status = store.StatusFailed
			}
			if status == store.StatusCreated || status == store.StatusPaid {
				sold += qty
			}
			if status == store.StatusCreated || status == store.StatusPaid || pending == 1 {
				seed.held[user] += qty
				seed.heldTotal += qty
			}
			if i > first {
				sql.WriteByte(',')
			}
			fmt.Fprintf(&sql, "('bench-%d-%09d',%d,%d,'%d',%d,%d,'%s',%s,%s,%s,%s,%s,%d)", a.ID, i, a.ID, user, user, qty,
				qty*a.PriceCents, status, at, expires, paidAt, cancelledAt, at, pending)
		}
		if err := db.WithContext(ctx).Exec(sql.String()).Error; err != nil {
			b.Fatalf("insert orders %d..: %v", first, err)
		}
	}
	if err := db.WithContext(ctx).Exec("UPDATE activities SET sold = ? WHERE id = ?", sold, a.ID).Error; err != nil {
		b.Fatal(err)
	}
	// Fresh index statistics, so the query is planned as on a table that grew slowly.
	if err := db.WithContext(ctx).Exec("ANALYZE TABLE orders").Error; err != nil {
		b.Fatal(err)
	}
	return seed
}

// checkRebuilt fails the benchmark unless Redis holds the sale with stock_total minus
// the held units available, and every user with the units the seed gave them.
func checkRebuilt(b *testing.B, sk *stocktest.Side, seed seeded) {
	b.Helper()
	snap, err := sk.Snapshot(context.Background(), seed.act.ID)
	if err != nil {
		b.Fatal(err)
	}
	if want := seed.act.StockTotal - seed.heldTotal; snap.Sale.Available != want || snap.Sale.Total != seed.act.StockTotal {
		b.Fatalf("rebuilt sale: available %d of %d, want %d of %d", snap.Sale.Available, snap.Sale.Total,
			want, seed.act.StockTotal)
	}
	if len(snap.Users) != len(seed.held) {
		b.Fatalf("rebuilt sale: %d users, want %d", len(snap.Users), len(seed.held))
	}
	for u, want := range seed.held {
		if got := snap.Users[buyer.Of(u)]; got != want {
			b.Fatalf("rebuilt sale: user %d holds %d units, want %d", u, got, want)
		}
	}
}

// scriptMicros returns the microseconds Redis has spent running scripts (EVAL and
// EVALSHA) since it started.
func scriptMicros(b *testing.B, rdb redis.UniversalClient) int64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	total := int64(0)
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_eval" && name != "cmdstat_evalsha") {
			continue
		}
		for _, field := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(field, "usec="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					b.Fatalf("commandstats %s: %v", line, err)
				}
				total += n
			}
		}
	}
	return total
}

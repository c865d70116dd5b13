package worker_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/order"
	"seckill/internal/outage"
	"seckill/internal/sale"
	"seckill/internal/stock"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/settle"
	"seckill/internal/stock/stocktest"
	"seckill/internal/store"
	"seckill/internal/task"
	"seckill/internal/testutil"
	"seckill/internal/upkeep"
	"seckill/internal/worker"
	"seckill/lock"
)

// archiveFixture is a service, a worker's persister and an archiver on one Redis and
// one database, as the API and the worker run them.
type archiveFixture struct {
	rdb      *redis.Client
	st       *store.Store
	sk       *stocktest.Side
	svc      *sale.Service
	orders   *order.Lifecycle
	persist  *worker.Persister
	archiver *upkeep.Archiver
}

const retention = time.Hour

func newArchiveFixture(t *testing.T, db *testutil.MySQLDB) *archiveFixture {
	t.Helper()
	rdb := testutil.StartRedis(t).Client(t)
	st, sk := store.New(db.Gorm, sale.EventViews{}), stocktest.New(rdb)
	locks := lock.New(rdb)
	t.Cleanup(func() { _ = locks.Close() })
	outages := outage.NewRecord(rdb)
	orders := order.New(st.Lifecycle, st.Activities, sk.Stock, outages)
	svc := sale.New(st, sk.Stock, orders, outages, task.NewEnqueuer(asynq.NewClientFromRedisClient(rdb)), locks)
	t.Cleanup(func() { svc.Close(context.Background()) })
	return &archiveFixture{rdb: rdb, st: st, sk: sk, svc: svc, orders: orders,
		persist: worker.NewPersister(st.Batches, st.Orders, st.Activities, sk.Stock, outages, 100), archiver: upkeep.NewArchiver(st.Upkeep, sk.Stock, retention)}
}

// newSale creates a sale open now, of buckets buckets (a group-buy sale of groups of 2
// when group).
func (f *archiveFixture) newSale(t *testing.T, buckets int, group bool) sale.Activity {
	t.Helper()
	n := sale.NewActivity{Name: "drop", ProductName: "p", PriceCents: 100, Stock: 50, PerUserLimit: 3,
		StartsAt: time.Now().Add(-3 * time.Hour), EndsAt: time.Now().Add(time.Hour), StockBuckets: buckets}
	if group {
		size, window := 2, 60
		n.Kind, n.GroupSize, n.GroupWindowSeconds = sale.KindGroup, &size, &window
	}
	a, err := f.svc.Catalog.CreateActivity(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// buy makes buyer u's purchase with an Idempotency-Key (a seat opening a group in a
// group-buy sale).
func (f *archiveFixture) buy(t *testing.T, a sale.Activity, u int64) sale.Order {
	t.Helper()
	r := sale.BuyRequest{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(u), Quantity: 1, IdempotencyKey: fmt.Sprintf("key-%d", u)}}
	if a.Kind == sale.KindGroup {
		r.OpenGroup = true
		_, o, _, err := f.svc.Groups.Seat(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	o, _, err := f.svc.Purchases.Buy(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// persistAll writes every order the sale holds as queued, from the tasks the API
// enqueued for them (which carry their Idempotency-Keys), as the worker does; it waits
// for the API's commits to enqueue them, and returns them as their tasks carried them.
func (f *archiveFixture) persistAll(t *testing.T, a sale.Activity) []stock.QueuedOrder {
	t.Helper()
	ctx := context.Background()
	snap, err := f.sk.Snapshot(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	inspector := asynq.NewInspectorFromRedisClient(f.rdb)
	for deadline := time.Now().Add(10 * time.Second); ; {
		tasks, err := inspector.ListPendingTasks(task.Queue, asynq.PageSize(1000))
		if err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
			t.Fatal(err)
		}
		byID := map[string]stock.QueuedOrder{}
		for _, info := range tasks {
			orders, err := task.ParseOrders(info.Type, info.Payload)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range orders {
				byID[o.OrderID] = o
			}
		}
		var qs []stock.QueuedOrder
		for _, q := range snap.Queued {
			if o, ok := byID[q.OrderID]; ok {
				qs = append(qs, o)
			}
		}
		if len(qs) == len(snap.Queued) {
			if err := f.persist.Persist(ctx, qs); err != nil {
				t.Fatal(err)
			}
			return qs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d queued orders have a task", len(qs), len(snap.Queued))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// end moves a sale's end to at (before now: the sale is over).
func (f *archiveFixture) end(t *testing.T, a sale.Activity, at time.Time) {
	t.Helper()
	if _, err := f.svc.Catalog.PatchActivity(context.Background(), a.ID, sale.ActivityPatch{EndsAt: &at}); err != nil {
		t.Fatal(err)
	}
}

// pastRetention sets the archiver's clock past the retention of a sale that ended now.
func (f *archiveFixture) pastRetention() {
	f.archiver.SetClock(func() time.Time { return time.Now().Add(retention + 20*time.Minute) })
}

// archiveOne runs the archive past the retention, which must archive one sale.
func (f *archiveFixture) archiveOne(t *testing.T) {
	t.Helper()
	f.pastRetention()
	if n, err := f.archiver.Run(context.Background()); err != nil || n != 1 {
		t.Fatalf("archived %d, %v; want 1", n, err)
	}
}

// Which sales the archive takes: only a sale that has ended, whose every order is final
// (none queued in Redis, grouping, created, or cancelled with its units on their way
// back), and for which the retention has passed since its end and since its last order
// became final. An archived sale has no key left in Redis, and its figures read as
// before; the others keep theirs.
func TestArchiveTakesOnlyFinishedSales(t *testing.T) {
	type stage func(t *testing.T, f *archiveFixture, a sale.Activity)
	// settle pays buyer 1's order, cancels buyer 2's, and leaves buyer 3's to expire
	// (cancelled as its pay window passes), as the worker's jobs would.
	settle := func(t *testing.T, f *archiveFixture, a sale.Activity) {
		ctx := context.Background()
		var os []sale.Order
		for u := int64(1); u <= 3; u++ {
			os = append(os, f.buy(t, a, u))
		}
		f.persistAll(t, a)
		if a.Kind == sale.KindGroup {
			return // seats that never filled: the group's failure cancels them (below)
		}
		if _, err := f.svc.Orders.Pay(ctx, os[0].ID, sale.Caller{Service: true}); err != nil { // the shop confirms it
			t.Fatal(err)
		}
		if _, err := f.svc.Orders.Cancel(ctx, os[1].ID, sale.Caller{Buyer: buyer.Of(2)}); err != nil {
			t.Fatal(err)
		}
		f.orders.SetClock(func() time.Time { return time.Now().Add(16 * time.Minute) }) // past the 15 min pay window
		defer f.orders.SetClock(time.Now)
		if n, err := f.orders.ExpireDue(ctx, 10); err != nil || n != 1 {
			t.Fatalf("expired %d orders, %v; want 1", n, err)
		}
	}
	failGroups := func(t *testing.T, f *archiveFixture, a sale.Activity) {
		f.orders.SetClock(func() time.Time { return time.Now().Add(2 * time.Minute) })
		defer f.orders.SetClock(time.Now)
		if n, err := f.orders.FailDueGroups(context.Background(), 100); err != nil || n != 3 {
			t.Fatalf("failed %d groups, %v; want 3", n, err)
		}
	}
	endedLongAgo := func(t *testing.T, f *archiveFixture, a sale.Activity) {
		f.end(t, a, time.Now().Add(-2*time.Hour))
	}
	endedNow := func(t *testing.T, f *archiveFixture, a sale.Activity) { f.end(t, a, time.Now()) }
	tests := []struct {
		name    string
		buckets int
		group   bool
		stages  []stage
		after   time.Duration // the archive runs this long after now
		want    bool
	}{
		{"every order final, the retention passed", 1, false, []stage{settle, endedNow}, retention + 20*time.Minute, true},
		{"four buckets", 4, false, []stage{settle, endedNow}, retention + 20*time.Minute, true},
		{"a group-buy sale whose groups failed", 1, true, []stage{settle, failGroups, endedNow}, retention + 20*time.Minute, true},
		{"no order at all", 1, false, []stage{endedNow}, retention + 20*time.Minute, true},
		{"not ended", 1, false, []stage{settle}, retention + 20*time.Minute, false},
		{"ended, the retention not passed since", 1, false, []stage{settle, endedNow}, retention - 5*time.Minute, false},
		{"ended long ago, its last order final only now", 1, false, []stage{settle, endedLongAgo}, time.Minute, false},
		{"an order still created", 1, false, []stage{
			func(t *testing.T, f *archiveFixture, a sale.Activity) { f.buy(t, a, 1); f.persistAll(t, a) }, endedNow},
			retention + 20*time.Minute, false},
		{"an order still queued in Redis", 1, false, []stage{
			func(t *testing.T, f *archiveFixture, a sale.Activity) { f.buy(t, a, 1) }, endedNow}, retention + 20*time.Minute, false},
		{"an order still grouping", 1, true, []stage{
			func(t *testing.T, f *archiveFixture, a sale.Activity) { f.buy(t, a, 1); f.persistAll(t, a) }, endedNow},
			retention + 20*time.Minute, false},
		{"a cancelled order's units on their way back", 1, false, []stage{
			func(t *testing.T, f *archiveFixture, a sale.Activity) {
				o := f.buy(t, a, 1)
				f.persistAll(t, a)
				if _, _, err := f.st.Lifecycle.CancelOrder(context.Background(), o.ID, store.Access{Admin: true}, time.Now()); err != nil {
					t.Fatal(err)
				}
			}, endedNow}, retention + 20*time.Minute, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newArchiveFixture(t, testutil.MySQL(t)) // a database of its own: the archive looks at every sale
			a := f.newSale(t, tc.buckets, tc.group)
			for _, s := range tc.stages {
				s(t, f, a)
			}
			before, err := f.svc.Catalog.Stats(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			f.archiver.SetClock(func() time.Time { return time.Now().Add(tc.after) })
			n, err := f.archiver.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := f.st.Activities.GetActivity(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			keys := testutil.SaleKeys(t, f.rdb, a.ID)
			if got := stored.Archived() && stored.RedisRemovedAt != nil; got != tc.want || n != map[bool]int{true: 1}[tc.want] {
				t.Fatalf("archived %v (%d sales), want %v", got, n, tc.want)
			}
			if tc.want && len(keys) > 0 {
				t.Errorf("an archived sale's keys left in Redis: %v", keys)
			}
			if !tc.want && len(keys) == 0 {
				t.Error("a sale not archived has no key left in Redis")
			}
			after, err := f.svc.Catalog.Stats(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(after, before) {
				t.Errorf("stats after the archive run %+v, before %+v", after, before)
			}
		})
	}
}

// An archived sale answers from MySQL: its activity and stats as before the archive, a
// balanced ledger, a replay of a purchase's Idempotency-Key with its order (another body
// is refused), a purchase with sale_ended (no rebuild starts: nothing comes back to
// Redis), an order and a buyer's order list; a PATCH and a rebuild are refused with
// ErrArchived and write nothing.
func TestArchivedSaleAnswersFromMySQL(t *testing.T) {
	ctx := context.Background()
	f := newArchiveFixture(t, testutil.MySQL(t))
	a := f.newSale(t, 1, false)
	var os []sale.Order
	for u := int64(1); u <= 3; u++ {
		os = append(os, f.buy(t, a, u))
	}
	f.persistAll(t, a)
	for _, o := range os {
		if _, err := f.svc.Orders.Pay(ctx, o.ID, sale.Caller{Admin: true}); err != nil {
			t.Fatal(err)
		}
	}
	f.end(t, a, time.Now())
	activity, err := f.svc.Catalog.GetActivity(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := f.svc.Catalog.Stats(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.archiveOne(t)

	got, err := f.svc.Catalog.GetActivity(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ArchivedAt == nil || got.StockAvailable != activity.StockAvailable || got.StockAvailable != 47 || got.Status != sale.StatusEnded {
		t.Errorf("the archived activity: %+v, want archived_at, 47 available (as before: %d), ended", got, activity.StockAvailable)
	}
	if s, err := f.svc.Catalog.Stats(ctx, a.ID); err != nil || !reflect.DeepEqual(s, stats) {
		t.Errorf("stats %+v, %v; want %+v", s, err, stats)
	}
	if l, err := f.svc.Catalog.Ledger(ctx, a.ID); err != nil || !l.Balanced || !l.Archived || l.Available != 47 || l.PaidUnits != 3 {
		t.Errorf("ledger %+v, %v; want balanced, archived, 47 available, 3 paid", l, err)
	}
	replay := sale.BuyRequest{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(2), Quantity: 1, IdempotencyKey: "key-2"}}
	if o, replayed, err := f.svc.Purchases.Buy(ctx, replay); err != nil || !replayed || o.ID != os[1].ID || o.Status != store.StatusPaid {
		t.Errorf("a replay: %+v (replayed %v), %v; want order %s, paid", o, replayed, err, os[1].ID)
	}
	replay.Quantity = 2
	var reused *stock.KeyReusedError
	if _, _, err := f.svc.Purchases.Buy(ctx, replay); !errors.As(err, &reused) || reused.OrderID != os[1].ID {
		t.Errorf("a replay with another body: %v, want the key reused by %s", err, os[1].ID)
	}
	for _, r := range []sale.BuyRequest{
		{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(9), Quantity: 1}},
		{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(9), Quantity: 1, IdempotencyKey: "new"}},
		{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(1), Quantity: 1, IdempotencyKey: "key-2"}}, // another buyer's key
	} {
		if _, _, err := f.svc.Purchases.Buy(ctx, r); !errors.Is(err, stock.ErrEnded) {
			t.Errorf("a purchase %+v: %v, want sale ended", r, err)
		}
	}
	if o, err := f.svc.Orders.GetOrder(ctx, os[0].ID, sale.Caller{Buyer: buyer.Of(1)}); err != nil || o.Status != store.StatusPaid {
		t.Errorf("an order: %+v, %v", o, err)
	}
	if list, err := f.svc.Orders.ListOrders(ctx, sale.Caller{Buyer: buyer.Of(3)}); err != nil || len(list) != 1 || list[0].ID != os[2].ID {
		t.Errorf("a buyer's orders: %+v, %v", list, err)
	}
	limit := 9
	if _, err := f.svc.Catalog.PatchActivity(ctx, a.ID, sale.ActivityPatch{PerUserLimit: &limit}); !errors.Is(err, sale.ErrArchived) {
		t.Errorf("a PATCH: %v, want ErrArchived", err)
	}
	if _, err := f.svc.Catalog.Rebuild(ctx, a.ID); !errors.Is(err, sale.ErrArchived) {
		t.Errorf("a rebuild: %v, want ErrArchived", err)
	}
	if _, err := upkeep.NewRebuilder(f.st.Upkeep, f.st.Activities, f.sk.Stock).RebuildLost(ctx, time.Now().Add(-2*time.Hour)); err != nil {
		t.Errorf("the worker's check of lost sales: %v", err)
	}
	if keys := testutil.SaleKeys(t, f.rdb, a.ID); len(keys) > 0 {
		t.Errorf("keys of the archived sale back in Redis: %v", keys)
	}
	if g, err := f.st.Activities.GetActivity(ctx, a.ID); err != nil || g.PerUserLimit != 3 || g.RedisEpoch != 0 {
		t.Errorf("the archived sale in MySQL: %+v, %v; want it unchanged", g, err)
	}
}

// The archive of a sale races, many times over and from many goroutines, with forced
// rebuilds of it, with a worker settling a task delivered again (its orders stored, and
// one the API gave back), with replays of its purchases' Idempotency-Keys and with new
// purchases. Whichever comes first: no rebuild writes the sale back once it is
// archived, no key of it is left in Redis, no order is made or lost, every replay gets
// its order (or 503 while the sale is closed, before MySQL answers for it) and every
// purchase sale_ended (or 503 then), and the sale's figures balance.
func TestArchiveRacesRebuildsSettlesAndReplays(t *testing.T) {
	db := testutil.MySQL(t)
	for round := range 3 {
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			ctx := context.Background()
			f := newArchiveFixture(t, db)
			a := f.newSale(t, 1+round, false) // 1, 2 and 3 buckets
			const buyers = 8
			var os []sale.Order
			for u := int64(1); u <= buyers; u++ {
				os = append(os, f.buy(t, a, u))
			}
			task := f.persistAll(t, a)
			for _, o := range os {
				if _, err := f.svc.Orders.Pay(ctx, o.ID, sale.Caller{Admin: true}); err != nil {
					t.Fatal(err)
				}
			}
			// A purchase the API gave back (its reply lost): the task delivered again names it.
			gone := reserve.Reservation{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(99), Quantity: 1},
				OrderID: fmt.Sprintf("01KGGGGGGGGGGGGGGGGGGGGGGG%d", a.ID), Now: time.Now(), LockToken: "t", LockTTL: time.Millisecond}
			if _, err := f.sk.Reserve(ctx, gone); err != nil {
				t.Fatal(err)
			}
			if res, err := f.sk.Rollback(ctx, a.ID, gone.Buyer, gone.OrderID, ""); err != nil || res != settle.RolledBack {
				t.Fatalf("roll back: %v, %v", res, err)
			}
			task = append(task, stock.QueuedOrder{OrderID: gone.OrderID, ActivityID: a.ID, Buyer: gone.Buyer, Quantity: 1,
				Limit: 3, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Minute)})
			f.end(t, a, time.Now())
			f.pastRetention()

			stored, err := f.st.Activities.GetActivity(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			errs := make(chan error, 1000)
			report := func(format string, args ...any) {
				select {
				case errs <- fmt.Errorf(format, args...):
				default:
				}
			}
			var wg sync.WaitGroup
			loop := func(body func()) {
				wg.Go(func() {
					for {
						select {
						case <-done:
							return
						default:
							body()
						}
					}
				})
			}
			rebuilder := upkeep.NewRebuilder(f.st.Upkeep, f.st.Activities, f.sk.Stock)
			loop(func() {
				if _, err := rebuilder.Rebuild(ctx, a.ID, true); err != nil && !errors.Is(err, sale.ErrArchived) {
					report("a rebuild: %v", err)
				}
			})
			loop(func() {
				if err := f.persist.Persist(ctx, task); err != nil {
					report("a task delivered again: %v", err)
				}
			})
			for u := int64(1); u <= 4; u++ {
				loop(func() {
					r := sale.BuyRequest{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(u), Quantity: 1, IdempotencyKey: fmt.Sprintf("key-%d", u)}}
					o, replayed, err := f.svc.Purchases.Buy(ctx, r)
					switch {
					case errors.Is(err, sale.ErrUnavailable): // closed, before MySQL answers for it
					case err != nil || !replayed || o.ID != os[u-1].ID:
						report("a replay of buyer %d: %+v (replayed %v), %v; want %s", u, o, replayed, err, os[u-1].ID)
					}
				})
				loop(func() {
					_, _, err := f.svc.Purchases.Buy(ctx, sale.BuyRequest{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(100 + u), Quantity: 1}})
					if !errors.Is(err, stock.ErrEnded) && !errors.Is(err, sale.ErrUnavailable) {
						report("a purchase: %v, want sale ended", err)
					}
				})
			}
			archived := false
			for deadline := time.Now().Add(30 * time.Second); !archived && time.Now().Before(deadline); {
				archived, err = f.archiver.Archive(ctx, stored, time.Now().Add(retention+time.Minute))
				if err != nil {
					report("the archive: %v", err)
				}
			}
			time.Sleep(50 * time.Millisecond) // the others go on a little past the archive
			close(done)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if !archived {
				t.Fatal("the sale was never archived")
			}
			if keys := testutil.SaleKeys(t, f.rdb, a.ID); len(keys) > 0 {
				t.Errorf("keys of the archived sale in Redis: %v", keys)
			}
			counts, err := f.st.Orders.CountOrders(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(counts) != 1 || counts[store.StatusPaid].Orders != buyers {
				t.Errorf("orders in MySQL %+v, want the %d paid ones only", counts, buyers)
			}
			if l, err := f.svc.Catalog.Ledger(ctx, a.ID); err != nil || !l.Balanced || !l.Archived {
				t.Errorf("ledger %+v, %v; want balanced and archived", l, err)
			}
			for u := int64(1); u <= buyers; u++ { // and once it is archived, every replay gets its order
				r := sale.BuyRequest{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(u), Quantity: 1, IdempotencyKey: fmt.Sprintf("key-%d", u)}}
				if o, replayed, err := f.svc.Purchases.Buy(ctx, r); err != nil || !replayed || o.ID != os[u-1].ID {
					t.Errorf("a replay of buyer %d after the archive: %+v, %v, %v", u, o, replayed, err)
				}
			}
		})
	}
}

// An archived sale of variants, one of whose orders the shop refunded without restock,
// reads as it did live: each variant's units left, and a balanced ledger that counts the
// unit kept off sale in the sale and in its variant.
func TestArchivedSaleOfVariantsBalances(t *testing.T) {
	ctx := context.Background()
	f := newArchiveFixture(t, testutil.MySQL(t))
	a, err := f.svc.Catalog.CreateActivity(ctx, sale.NewActivity{Name: "sizes", ProductName: "p", PriceCents: 100, PerUserLimit: 2,
		Variants: []sale.NewVariant{{Name: "S", Stock: 10}, {Name: "M", Stock: 5}},
		StartsAt: time.Now().Add(-3 * time.Hour), EndsAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var os []sale.Order
	for u, v := range []int{0, 1, 1} {
		o, _, err := f.svc.Purchases.Buy(ctx, sale.BuyRequest{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(int64(u + 1)), Quantity: 1,
			IdempotencyKey: fmt.Sprintf("key-%d", u+1), Variant: stock.VariantAt(v)}})
		if err != nil {
			t.Fatal(err)
		}
		os = append(os, o)
	}
	f.persistAll(t, a)
	for _, o := range os {
		if _, err := f.svc.Orders.Pay(ctx, o.ID, sale.Caller{Service: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.svc.Orders.Refund(ctx, os[2].ID, sale.Caller{Service: true}, false); err != nil { // M's unit stays off sale
		t.Fatal(err)
	}
	f.end(t, a, time.Now())
	live, err := f.svc.Catalog.GetActivity(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := f.svc.Catalog.Ledger(ctx, a.ID); err != nil || !l.Balanced || l.OffSaleUnits != 1 {
		t.Fatalf("the live ledger %+v, %v; want balanced, 1 unit off sale", l, err)
	}
	f.archiveOne(t)

	got, err := f.svc.Catalog.GetActivity(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ArchivedAt == nil || got.StockAvailable != live.StockAvailable || !reflect.DeepEqual(got.Variants, live.Variants) {
		t.Errorf("the archived activity: %+v; want archived_at, and as live: %+v", got, live)
	}
	l, err := f.svc.Catalog.Ledger(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	type check struct {
		name      string
		got, want any
	}
	tests := []check{
		{"balanced and archived", l.Balanced && l.Archived, true},
		{"available", l.Available, int64(12)},
		{"paid", l.PaidUnits, int64(2)},
		{"off sale", l.OffSaleUnits, int64(1)},
		{"variants", len(l.Variants), 2},
	}
	for i, want := range [][3]int64{{9, 1, 0}, {3, 1, 1}} { // S, M: available, held, off sale
		if i < len(l.Variants) {
			v := l.Variants[i]
			tests = append(tests, check{v.Name + " available, held, off sale", [3]int64{v.Available, v.HeldUnits, v.OffSaleUnits}, want})
		}
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v (ledger %+v)", tc.name, tc.got, tc.want, l)
		}
	}
}

// An archived sale answers its back office as a live one does: every order of it, page
// after page, to an admin or the shop's back end, and a buyer's own; and a replay of an
// Idempotency-Key answers the order its own key made, letter case included, before and
// after the archive (Redis and MySQL compare keys alike).
func TestArchivedSaleListsItsOrdersAndReplaysExactKeys(t *testing.T) {
	ctx := context.Background()
	f := newArchiveFixture(t, testutil.MySQL(t))
	a := f.newSale(t, 1, false)
	keys := []string{"abc", "ABC", "Abc"}
	made := map[string]string{} // key -> order id
	for _, k := range keys {
		o, replayed, err := f.svc.Purchases.Buy(ctx, sale.BuyRequest{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(1), Quantity: 1, IdempotencyKey: k}})
		if err != nil || replayed {
			t.Fatalf("buyer 1's purchase with key %q: %+v, %v (replayed %v); want a new order", k, o, err, replayed)
		}
		made[k] = o.ID
	}
	ids := []string{f.buy(t, a, 2).ID, made["abc"], made["ABC"], made["Abc"]}
	f.persistAll(t, a)
	for _, id := range ids {
		if _, err := f.svc.Orders.Pay(ctx, id, sale.Caller{Service: true}); err != nil {
			t.Fatal(err)
		}
	}
	replays := func(when string) {
		t.Helper()
		for _, k := range keys {
			o, replayed, err := f.svc.Purchases.Buy(ctx, sale.BuyRequest{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(1), Quantity: 1, IdempotencyKey: k}})
			if err != nil || !replayed || o.ID != made[k] {
				t.Errorf("%s, a replay of key %q: %s (replayed %v), %v; want %s", when, k, o.ID, replayed, err, made[k])
			}
		}
	}
	replays("live")
	f.end(t, a, time.Now())
	f.archiveOne(t)
	replays("archived")
	// The back office finds last month's paid order and refunds it: the units stay off
	// sale (the sale is over), and its return is settled (nothing left pending).
	refunded, err := f.svc.Orders.Refund(ctx, made["ABC"], sale.Caller{Service: true}, true)
	if err != nil || refunded.Status != store.StatusRefunded || refunded.Restock == nil || *refunded.Restock {
		t.Errorf("a refund of an archived sale's paid order: %+v, %v; want refunded, restock false", refunded, err)
	}
	if pending, err := f.st.Upkeep.Unsettled(ctx, a.ID); err != nil || pending {
		t.Errorf("the archived sale after the refund: unsettled %v, %v; want its return settled", pending, err)
	}

	for _, tc := range []struct {
		name   string
		caller sale.Caller
		status string
		want   int
	}{
		{"an admin", sale.Caller{Admin: true}, "", 4},
		{"the shop's back end, paid", sale.Caller{Service: true}, store.StatusPaid, 3},
		{"the shop's back end, refunded", sale.Caller{Service: true}, store.StatusRefunded, 1},
		{"the shop's back end, created", sale.Caller{Service: true}, store.StatusCreated, 0},
		{"buyer 1", sale.Caller{Buyer: buyer.Of(1)}, "", 3},
		{"buyer 2", sale.Caller{Buyer: buyer.Of(2)}, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []sale.Order
			p := sale.OrderPage{ActivityID: a.ID, Status: tc.status, Limit: 2}
			for {
				page, err := f.svc.Orders.SaleOrders(ctx, tc.caller, p)
				if err != nil {
					t.Fatalf("the archived sale's orders after %q: %v", p.After, err)
				}
				got = append(got, page...)
				if len(page) < p.Limit {
					break
				}
				p.After = page[len(page)-1].ID
			}
			if len(got) != tc.want {
				t.Errorf("%d orders listed, want %d: %+v", len(got), tc.want, got)
			}
			for i := 1; i < len(got); i++ {
				if got[i].ID <= got[i-1].ID {
					t.Errorf("orders not in id order: %s after %s", got[i].ID, got[i-1].ID)
				}
			}
		})
	}
}

// A refund is a final change of its sale: the retention before the archive counts from
// it, also when the archive had looked at the sale (and remembered when its last order
// became final) before the refund came.
func TestRefundRestartsTheRetention(t *testing.T) {
	ctx := context.Background()
	f := newArchiveFixture(t, testutil.MySQL(t))
	a := f.newSale(t, 1, false)
	o := f.buy(t, a, 1)
	f.persistAll(t, a)
	f.end(t, a, time.Now())
	f.orders.SetClock(func() time.Time { return time.Now().Add(5 * time.Minute) }) // paid after the end
	if _, err := f.svc.Orders.Pay(ctx, o.ID, sale.Caller{Service: true}); err != nil {
		t.Fatal(err)
	}
	run := func(after time.Duration, want int) {
		t.Helper()
		f.archiver.SetClock(func() time.Time { return time.Now().Add(after) })
		if n, err := f.archiver.Run(ctx); err != nil || n != want {
			t.Fatalf("the archive %v after the end: archived %d, %v; want %d", after, n, err, want)
		}
	}
	// Past the retention of the end, not of the payment: the archive looks at the sale
	// and remembers when the payment came.
	run(retention+3*time.Minute, 0)
	f.orders.SetClock(func() time.Time { return time.Now().Add(30 * time.Minute) })
	defer f.orders.SetClock(time.Now)
	if r, err := f.svc.Orders.Refund(ctx, o.ID, sale.Caller{Service: true}, true); err != nil || r.Status != store.StatusRefunded {
		t.Fatalf("the refund 30 min after the payment: %+v, %v", r, err)
	}
	run(retention+10*time.Minute, 0) // 40 min after the refund
	// MySQL's mark, under the sale's row lock, holds the same rule for an archive that
	// read the sale before the refund came.
	if err := f.st.Upkeep.MarkArchived(ctx, a.ID, time.Now().Add(10*time.Minute), time.Now()); !errors.Is(err, store.ErrNotSettled) {
		t.Errorf("MySQL marks archived a sale refunded after the retention's start: %v, want ErrNotSettled", err)
	}
	run(retention+31*time.Minute, 1)
}

// A sale reopened after the archive looked at it (a PATCH of ends_at once it had ended
// and settled) takes orders again: the retention counts from when the last of those
// became final, not from what the archive remembered of the sale's first end.
func TestReopenedSaleRestartsTheRetention(t *testing.T) {
	ctx := context.Background()
	f := newArchiveFixture(t, testutil.MySQL(t))
	a := f.newSale(t, 1, false)
	pay := func(o sale.Order, after time.Duration) { // within the order's pay window of 15 min
		t.Helper()
		f.orders.SetClock(func() time.Time { return time.Now().Add(after) })
		defer f.orders.SetClock(time.Now)
		if p, err := f.svc.Orders.Pay(ctx, o.ID, sale.Caller{Service: true}); err != nil || p.Status != store.StatusPaid {
			t.Fatalf("pay %v on: %+v, %v", after, p, err)
		}
	}
	run := func(after time.Duration, want int) {
		t.Helper()
		f.archiver.SetClock(func() time.Time { return time.Now().Add(after) })
		if n, err := f.archiver.Run(ctx); err != nil || n != want {
			t.Fatalf("the archive %v after the end: archived %d, %v; want %d", after, n, err, want)
		}
	}
	first := f.buy(t, a, 1)
	f.persistAll(t, a)
	f.end(t, a, time.Now())
	pay(first, 5*time.Minute)
	// Past the retention of the end, not of the payment: the archive remembers when the
	// payment came.
	run(retention+3*time.Minute, 0)

	f.end(t, a, time.Now().Add(time.Hour)) // reopened
	second := f.buy(t, a, 2)
	f.persistAll(t, a)
	f.end(t, a, time.Now())
	pay(second, 12*time.Minute)
	run(retention+7*time.Minute, 0) // past the first payment's retention, not the second's
	run(retention+13*time.Minute, 1)
}

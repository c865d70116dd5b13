package sale_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"seckill/internal/lock"
	"seckill/internal/order"
	"seckill/internal/queue"
	"seckill/internal/sale"
	"seckill/internal/stock"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

// breakableQueue is the real asynq enqueuer with a switch that makes its enqueues
// fail, as they do when Redis drops the connection between the reserve script and
// the enqueue.
type breakableQueue struct {
	*queue.Enqueuer
	broken atomic.Bool
}

func (q *breakableQueue) EnqueueBatch(ctx context.Context, orders []queue.Order) error {
	if q.broken.Load() {
		return errors.New("connection reset")
	}
	return q.Enqueuer.EnqueueBatch(ctx, orders)
}

type fixture struct {
	svc   *sale.Service
	rdb   *redis.Client
	stock *stock.Stock
	queue *breakableQueue
	act   int64
}

// newFixture is the purchase service over a private Redis and a fresh database, with
// no worker: orders stay in the queue to be read back.
func newFixture(t *testing.T, units int64, limit int) *fixture {
	t.Helper()
	rdb := testutil.StartRedis(t).Client(t)
	db := testutil.MySQL(t)
	st, sk := store.New(db.Gorm), stock.New(rdb)
	locks := lock.New(rdb)
	t.Cleanup(func() { _ = locks.Close() })
	q := &breakableQueue{Enqueuer: queue.NewEnqueuer(asynq.NewClientFromRedisClient(rdb))}
	svc := sale.New(st, sk, order.New(st, sk), q, locks)
	a, err := svc.CreateActivity(context.Background(), sale.NewActivity{Name: "s", ProductName: "p",
		PriceCents: 100, Stock: units, PerUserLimit: limit, StartsAt: time.Now().Add(-time.Minute),
		EndsAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{svc: svc, rdb: rdb, stock: sk, queue: q, act: a.ID}
}

// buyAll runs one purchase of one unit for each user at once.
func (f *fixture) buyAll(users []int64) ([]sale.Order, []error) {
	orders := make([]sale.Order, len(users))
	errs := make([]error, len(users))
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Go(func() {
			orders[i], _, errs[i] = f.svc.Buy(context.Background(),
				sale.BuyRequest{ActivityID: f.act, UserID: u, Quantity: 1})
		})
	}
	wg.Wait()
	return orders, errs
}

// queuedTasks returns the orders of every task waiting in the queue, by order id, and
// how many tasks carry them.
func (f *fixture) queuedTasks(t *testing.T) (map[string]int, int) {
	t.Helper()
	ts, err := asynq.NewInspectorFromRedisClient(f.rdb).ListPendingTasks(queue.Name, asynq.PageSize(10000))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, task := range ts {
		orders, err := queue.ParseOrders(task.Payload)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range orders {
			seen[o.ID]++
		}
	}
	return seen, len(ts)
}

// lockKeys returns the user lock keys left in Redis once the commits under way are
// done (Close): a purchase is answered as soon as its order is enqueued, and its lock
// is released right after.
func (f *fixture) lockKeys(t *testing.T) []string {
	t.Helper()
	f.svc.Close()
	keys, err := f.rdb.Keys(context.Background(), strings.TrimSuffix(stock.UserLockKey(f.act, 0), "0")+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func users(from, n int) []int64 {
	us := make([]int64, n)
	for i := range us {
		us[i] = int64(from + i)
	}
	return us
}

// Purchases that end together are enqueued together: every acknowledged order is in
// exactly one task, there are fewer tasks than orders, and no user lock is left.
func TestPurchasesCommitTogether(t *testing.T) {
	f := newFixture(t, 1000, 1)
	const n = 300
	orders, errs := f.buyAll(users(1, n))
	for i, err := range errs {
		if err != nil {
			t.Fatalf("purchase of user %d: %v", i+1, err)
		}
	}
	seen, tasks := f.queuedTasks(t)
	for _, o := range orders {
		if seen[o.ID] != 1 {
			t.Errorf("order %s is in %d tasks, want 1", o.ID, seen[o.ID])
		}
	}
	if len(seen) != n {
		t.Errorf("%d orders in the queue, want %d", len(seen), n)
	}
	t.Logf("%d purchases at once were enqueued in %d tasks", n, tasks)
	if tasks >= n {
		t.Errorf("%d tasks for %d purchases at once: none were committed together", tasks, n)
	}
	if keys := f.lockKeys(t); len(keys) > 0 {
		t.Errorf("user locks left after the purchases: %v", keys)
	}
}

// When a batch cannot be enqueued, every purchase in it fails as unavailable, its
// units and the user's allowance come back, its lock is released, and the users can
// buy again once the queue works.
func TestFailedCommitGivesEverythingBack(t *testing.T) {
	f := newFixture(t, 100, 1)
	ctx := context.Background()
	f.queue.broken.Store(true)
	buyers := users(1, 50)
	_, errs := f.buyAll(buyers)
	for i, err := range errs {
		if !errors.Is(err, sale.ErrUnavailable) {
			t.Errorf("purchase of user %d with the queue broken: got %v, want ErrUnavailable", i+1, err)
		}
	}
	snap, err := f.stock.Snapshot(ctx, f.act)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Sale.Available != 100 || len(snap.Queued) != 0 {
		t.Errorf("after failed commits: %d units available, %d orders queued; want 100 and 0",
			snap.Sale.Available, len(snap.Queued))
	}
	for u, units := range snap.Users {
		if units != 0 {
			t.Errorf("user %d still holds %d units", u, units)
		}
	}
	if keys := f.lockKeys(t); len(keys) > 0 {
		t.Errorf("user locks left after the failed commits: %v", keys)
	}

	f.queue.broken.Store(false)
	orders, errs := f.buyAll(buyers)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("purchase of user %d once the queue works: %v", i+1, err)
		}
	}
	seen, _ := f.queuedTasks(t)
	if len(seen) != len(orders) {
		t.Errorf("%d orders queued, want %d", len(seen), len(orders))
	}
	if snap, err := f.stock.Snapshot(ctx, f.act); err != nil || snap.Sale.Available != 50 {
		t.Errorf("after 50 purchases: %+v %v, want 50 units available", snap.Sale, err)
	}
}

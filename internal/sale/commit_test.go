package sale_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/internal/buyer"
	"seckill/internal/order"
	"seckill/internal/outage"
	"seckill/internal/sale"
	"seckill/internal/stock"
	"seckill/internal/stock/stocktest"
	"seckill/internal/store"
	"seckill/internal/task"
	"seckill/internal/testutil"
	"seckill/internal/worker"
	"seckill/lock"
)

// breakableQueue is the real asynq enqueuer with a switch that makes its enqueues
// fail, as they do when Redis drops the connection between the reserve script and
// the enqueue, and a gate that holds them, as a slow Redis does.
type breakableQueue struct {
	*task.Enqueuer
	broken  atomic.Bool
	failing atomic.Int32 // so many enqueues fail from now on
	gate    sync.RWMutex // enqueues wait while a test holds it (Lock)
	started atomic.Int64 // orders in the enqueues that have begun
}

func (q *breakableQueue) EnqueueBatch(ctx context.Context, orders []stock.QueuedOrder) error {
	q.started.Add(int64(len(orders)))
	q.gate.RLock()
	defer q.gate.RUnlock()
	if q.broken.Load() || q.failing.Add(-1) >= 0 {
		return errors.New("connection reset")
	}
	return q.Enqueuer.EnqueueBatch(ctx, orders)
}

type fixture struct {
	svc   *sale.Service
	store *store.Store
	rdb   *redis.Client
	stock *stocktest.Side
	queue *breakableQueue
	act   int64
	db    *gorm.DB
}

// newFixture is the purchase service over a private Redis and a fresh database, with
// no worker: orders stay in the queue to be read back.
func newFixture(t testing.TB, units int64, limit int) *fixture {
	t.Helper()
	return newFixtureOn(t, testutil.MySQL(t).Gorm, units, limit)
}

// newFixtureOn is newFixture over the database db.
func newFixtureOn(t testing.TB, db *gorm.DB, units int64, limit int) *fixture {
	t.Helper()
	rdb := testutil.StartRedis(t).Client(t)
	st, sk := store.New(db, sale.EventViews{}), stocktest.New(rdb)
	locks := lock.New(rdb)
	t.Cleanup(func() { _ = locks.Close() })
	q := &breakableQueue{Enqueuer: task.NewEnqueuer(asynq.NewClientFromRedisClient(rdb))}
	outages := outage.NewRecord(rdb)
	svc := sale.New(st, sk.Stock, order.New(st.Lifecycle, st.Activities, sk.Stock, outages), outages, q, locks)
	a, err := svc.Catalog.CreateActivity(context.Background(), sale.NewActivity{Name: "s", ProductName: "p",
		PriceCents: 100, Stock: units, PerUserLimit: limit, StartsAt: time.Now().Add(-time.Minute),
		EndsAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{svc: svc, store: st, rdb: rdb, stock: sk, queue: q, act: a.ID, db: db}
}

// buyAll runs one purchase of one unit for each user at once.
func (f *fixture) buyAll(users []int64) ([]sale.Order, []error) {
	orders := make([]sale.Order, len(users))
	errs := make([]error, len(users))
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Go(func() {
			orders[i], _, errs[i] = f.svc.Purchases.Buy(context.Background(),
				sale.BuyRequest{Purchase: stock.Purchase{ActivityID: f.act, Buyer: buyer.Of(u), Quantity: 1}})
		})
	}
	wg.Wait()
	return orders, errs
}

// queuedTasks returns how many tasks waiting in the queue carry each order, by order
// id, and how many tasks there are.
func (f *fixture) queuedTasks(t *testing.T) (map[string]int, int) {
	t.Helper()
	ts, err := asynq.NewInspectorFromRedisClient(f.rdb).ListPendingTasks(task.Queue, asynq.PageSize(10000))
	if errors.Is(err, asynq.ErrQueueNotFound) { // nothing was ever enqueued
		return map[string]int{}, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, info := range ts {
		orders, err := task.ParseOrders(info.Type, info.Payload)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range orders {
			seen[o.OrderID]++
		}
	}
	return seen, len(ts)
}

// lockKeys returns the users whose locks are held in Redis once the commits under way
// are done (Close): a purchase's lock is released when its order has been enqueued.
func (f *fixture) lockKeys(t *testing.T) map[buyer.ID]string {
	t.Helper()
	f.close(t)
	locks, err := f.stock.UserLocks(context.Background(), f.act)
	if err != nil {
		t.Fatal(err)
	}
	return locks
}

// eachInOneTask checks that every order is in exactly one task waiting in the queue,
// and returns how many tasks wait.
func (f *fixture) eachInOneTask(t *testing.T, orders []sale.Order) int {
	t.Helper()
	seen, tasks := f.queuedTasks(t)
	for _, o := range orders {
		if seen[o.ID] != 1 {
			t.Errorf("order %s is in %d tasks, want 1", o.ID, seen[o.ID])
		}
	}
	return tasks
}

// close waits for the commits under way and checks none was cut off.
func (f *fixture) close(t *testing.T) {
	t.Helper()
	if left := f.svc.Close(context.Background()); left != 0 {
		t.Fatalf("Close left %d purchases uncommitted", left)
	}
}

// queuedInRedis returns the ids of the sale's orders queued in Redis.
func (f *fixture) queuedInRedis(t *testing.T) map[string]bool {
	t.Helper()
	snap, err := f.stock.Snapshot(context.Background(), f.act)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, q := range snap.Queued {
		ids[q.OrderID] = true
	}
	return ids
}

func users(from, n int) []int64 {
	us := make([]int64, n)
	for i := range us {
		us[i] = int64(from + i)
	}
	return us
}

func mustAllSucceed(t *testing.T, orders []sale.Order, errs []error) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("purchase %d: %v", i+1, err)
		}
		if orders[i].Status != "queued" {
			t.Fatalf("purchase %d answered status %q, want queued", i+1, orders[i].Status)
		}
	}
}

// Purchases that end together are enqueued together: every acknowledged order is in
// exactly one task, there are fewer tasks than orders, and no user lock is left.
func TestPurchasesCommitTogether(t *testing.T) {
	f := newFixture(t, 1000, 1)
	const n = 300
	orders, errs := f.buyAll(users(1, n))
	mustAllSucceed(t, orders, errs)
	f.close(t)
	tasks := f.eachInOneTask(t, orders)
	if seen, _ := f.queuedTasks(t); len(seen) != n {
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

// A purchase is answered once its reserve script has recorded the order in Redis,
// before the order is enqueued. Until the enqueue is done the user's lock is held, so
// the same user's next purchase waits for it; then the lock is released.
func TestAnsweredBeforeEnqueue(t *testing.T) {
	f := newFixture(t, 100, 2)
	f.svc.IOTimeout = time.Minute // the gate below holds the enqueue, not Redis
	f.svc.LockWait = 100 * time.Millisecond
	f.queue.gate.Lock()
	var orders []sale.Order
	var errs []error
	answered := make(chan struct{})
	go func() {
		orders, errs = f.buyAll(users(1, 20))
		close(answered)
	}()
	select {
	case <-answered:
	case <-time.After(30 * time.Second):
		f.queue.gate.Unlock()
		t.Fatal("purchases not answered in 30 s while their enqueue was held")
	}
	mustAllSucceed(t, orders, errs)
	queued := f.queuedInRedis(t)
	for _, o := range orders {
		if !queued[o.ID] {
			t.Errorf("acknowledged order %s is not queued in Redis", o.ID)
		}
	}
	if seen, _ := f.queuedTasks(t); len(seen) != 0 {
		t.Errorf("%d orders enqueued while the enqueue was held", len(seen))
	}
	_, _, err := f.svc.Purchases.Buy(context.Background(), sale.BuyRequest{Purchase: stock.Purchase{ActivityID: f.act, Buyer: "1", Quantity: 1}})
	if !errors.Is(err, stock.ErrBusy) {
		t.Errorf("second purchase of user 1 while its first is being enqueued: got %v, want ErrBusy", err)
	}

	f.queue.gate.Unlock()
	f.close(t)
	if seen, _ := f.queuedTasks(t); len(seen) != len(orders) {
		t.Errorf("%d orders enqueued, want %d", len(seen), len(orders))
	}
	if keys := f.lockKeys(t); len(keys) > 0 {
		t.Errorf("user locks left after the enqueue: %v", keys)
	}
	if _, _, err := f.svc.Purchases.Buy(context.Background(), sale.BuyRequest{Purchase: stock.Purchase{ActivityID: f.act, Buyer: "1", Quantity: 1}}); err != nil {
		t.Errorf("second purchase of user 1 once the first is enqueued: %v", err)
	}
}

// When a batch cannot be enqueued, its purchases stand: they were answered, their
// orders stay queued in Redis with their units taken, their locks are released, and
// the worker's repair pass enqueues every one of them.
func TestFailedCommitLeavesOrdersForRepair(t *testing.T) {
	f := newFixture(t, 100, 1)
	ctx := context.Background()
	f.queue.broken.Store(true)
	orders, errs := f.buyAll(users(1, 50))
	mustAllSucceed(t, orders, errs)
	if keys := f.lockKeys(t); len(keys) > 0 {
		t.Errorf("user locks left after the failed commits: %v", keys)
	}
	if seen, _ := f.queuedTasks(t); len(seen) != 0 {
		t.Errorf("%d orders in the queue, want none", len(seen))
	}
	queued := f.queuedInRedis(t)
	for _, o := range orders {
		if !queued[o.ID] {
			t.Errorf("acknowledged order %s is not queued in Redis after its enqueue failed", o.ID)
		}
	}
	if snap, err := f.stock.Snapshot(ctx, f.act); err != nil || snap.Sale.Available != 50 {
		t.Errorf("after 50 purchases whose enqueue failed: %+v %v, want 50 units available", snap.Sale, err)
	}
	if _, _, err := f.svc.Purchases.Buy(ctx, sale.BuyRequest{Purchase: stock.Purchase{ActivityID: f.act, Buyer: "1", Quantity: 1}}); !errors.Is(err, stock.ErrLimitExceeded) {
		t.Errorf("another purchase of user 1: got %v, want ErrLimitExceeded (the first one stands)", err)
	}

	f.queue.broken.Store(false)
	rep := worker.NewRepairer(f.store.Activities, f.stock.Stock, f.queue.Enqueuer, worker.NewPersister(f.store.Batches, f.store.Orders, f.store.Activities, f.stock.Stock, outage.NewRecord(f.rdb), 100))
	rep.MinAge = 0
	n, err := rep.Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.eachInOneTask(t, orders)
	if n != len(orders) {
		t.Errorf("the repair pass enqueued %d orders, want %d", n, len(orders))
	}
}

// While more purchases wait for their commit than the backlog bound (5000), a
// purchase is answered only once its own commit is done.
func TestBacklogHoldsAnswers(t *testing.T) {
	const bound, extra = 5000, 300
	f := newFixture(t, 10000, 1)
	f.svc.IOTimeout = time.Minute
	f.queue.gate.Lock()
	buyers := users(1, 1)
	var answered atomic.Int64
	var wg sync.WaitGroup
	buy := func(u int64) {
		wg.Go(func() {
			if _, _, err := f.svc.Purchases.Buy(context.Background(), sale.BuyRequest{Purchase: stock.Purchase{ActivityID: f.act, Buyer: buyer.Of(u), Quantity: 1}}); err != nil {
				t.Errorf("purchase of user %d: %v", u, err)
			}
			answered.Add(1)
		})
	}
	// The first purchase starts a commit, held at the gate with its batch.
	buy(buyers[0])
	for deadline := time.Now().Add(time.Minute); f.queue.started.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no commit started")
		}
	}
	inFlight := f.queue.started.Load()
	total := bound + extra
	for _, u := range users(2, total-1) {
		buy(u)
	}
	// Those in the held batch and the first `bound` of the others are answered;
	// the rest wait for their commits.
	want := inFlight + bound
	deadline := time.Now().Add(time.Minute)
	for answered.Load() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// A quiet period in which no more may be answered while the enqueue is held: the
	// behaviour under test.
	time.Sleep(200 * time.Millisecond)
	if got := answered.Load(); got != want {
		t.Errorf("with the enqueue held: %d of %d purchases answered, want %d (%d in the held batch + %d)",
			got, total, want, inFlight, bound)
	}
	f.queue.gate.Unlock()
	wg.Wait()
	f.close(t)
	if seen, _ := f.queuedTasks(t); len(seen) != total {
		t.Errorf("%d orders enqueued, want %d", len(seen), total)
	}
}

// After Close a purchase is committed before it is answered; a Close whose context
// ends first says how many purchases it left to the repair pass.
func TestClose(t *testing.T) {
	f := newFixture(t, 100, 1)
	f.svc.IOTimeout = time.Minute
	f.queue.gate.Lock()
	orders, errs := f.buyAll(users(1, 30))
	mustAllSucceed(t, orders, errs)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if left := f.svc.Close(ctx); left != len(orders) {
		t.Errorf("Close with the enqueue held: %d purchases left, want %d", left, len(orders))
	}
	f.queue.gate.Unlock()
	f.close(t)

	o, _, err := f.svc.Purchases.Buy(context.Background(), sale.BuyRequest{Purchase: stock.Purchase{ActivityID: f.act, Buyer: "99", Quantity: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if seen, _ := f.queuedTasks(t); seen[o.ID] != 1 {
		t.Errorf("a purchase after Close was answered before its order was enqueued")
	}
	if keys := f.lockKeys(t); len(keys) > 0 {
		t.Errorf("user locks left: %v", keys)
	}
}

// An enqueue that fails is tried again: the orders reach the queue without the repair
// pass.
func TestFailedEnqueueIsRetried(t *testing.T) {
	f := newFixture(t, 100, 1)
	f.queue.failing.Store(2) // the first attempt and the first retry fail
	orders, errs := f.buyAll(users(1, 20))
	mustAllSucceed(t, orders, errs)
	f.close(t)
	f.eachInOneTask(t, orders)
}

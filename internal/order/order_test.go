package order_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/config"
	"seckill/internal/order"
	"seckill/internal/outage"
	"seckill/internal/sale"
	"seckill/internal/stock"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/settle"
	"seckill/internal/stock/stocktest"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// fixture is a sale (10 units, limit 5, unless made by newSaleFixture), pay window 60 s, with orders persisted
// the way the worker does it: reserve in Redis, persist in MySQL, settle in Redis.
type fixture struct {
	t     *testing.T
	redis *testutil.RedisServer
	db    *testutil.MySQLDB
	st    *store.Store
	sk    *stocktest.Side
	life  *order.Lifecycle
	rec   *outage.Record // MySQL's outages, on the fixture's clock
	now   atomic.Pointer[time.Time]
	act   int64
	seq   int
}

func newFixture(t *testing.T) *fixture { return newSaleFixture(t, 10, 5) }

func newSaleFixture(t *testing.T, units int64, limit int) *fixture {
	f := &fixture{t: t, redis: testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")}
	rdb := config.Config{RedisAddrs: []string{f.redis.Addr}}.Redis()
	t.Cleanup(func() { rdb.Close() })
	f.db = testutil.MySQL(t)
	f.st, f.sk = store.New(f.db.Gorm, sale.EventViews{}), stocktest.New(rdb)
	f.rec = outage.NewRecord(rdb)
	f.life = order.New(f.st.Lifecycle, f.st.Activities, f.sk.Stock, f.rec)
	f.set(t0)
	f.life.SetClock(func() time.Time { return *f.now.Load() })
	f.rec.SetClock(func() time.Time { return *f.now.Load() })
	f.st.SetClock(func() time.Time { return *f.now.Load() })
	a := store.Activity{Name: "s", ProductName: "p", PriceCents: 100, StockTotal: units, PerUserLimit: limit,
		StartsAt: t0.Add(-time.Hour), EndsAt: t0.Add(time.Hour), PayWindowSeconds: 60}
	err := f.st.Activities.CreateActivity(context.Background(), &a, func(a store.Activity) error {
		return f.sk.Load(context.Background(), stock.Sale{ActivityID: a.ID, Available: units, Total: units, Limit: limit,
			StartsAt: a.StartsAt, EndsAt: a.EndsAt, PriceCents: 100, PayWindow: time.Minute})
	})
	if err != nil {
		t.Fatal(err)
	}
	f.act = a.ID
	return f
}

func (f *fixture) set(now time.Time) { f.now.Store(&now) }

// created makes a created order of qty units for user.
func (f *fixture) created(user int64, qty int) store.Order {
	f.t.Helper()
	ctx := context.Background()
	f.seq++
	id := fmt.Sprintf("o%d", f.seq)
	_, err := f.sk.Reserve(ctx, reserve.Reservation{Purchase: stock.Purchase{ActivityID: f.act, Buyer: buyer.Of(user), Quantity: qty},
		OrderID: id, Now: t0, LockToken: id, LockTTL: time.Millisecond})
	if err != nil {
		f.t.Fatal(err)
	}
	// The purchase's 1 ms user lock runs out (a lease, by Redis' clock).
	time.Sleep(2 * time.Millisecond)
	o := store.Order{ID: id, ActivityID: f.act, Buyer: buyer.Of(user), Quantity: qty, AmountCents: 100 * int64(qty),
		CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
	if _, err := f.st.Batches.PersistBatch(ctx, []store.NewOrder{{Order: o, Limit: 5}}, outage.Outages{}); err != nil {
		f.t.Fatal(err)
	}
	if err := f.sk.Settle(ctx, f.act, []settle.Settlement{{OrderID: id, Buyer: buyer.Of(user)}}); err != nil {
		f.t.Fatal(err)
	}
	return o
}

// ledger checks stock_total = available + units held + units kept off sale (refunded
// without restock), in Redis and MySQL alike, and that activities.sold counts the
// units held and those kept off sale.
func (f *fixture) ledger(wantAvailable int64) {
	f.t.Helper()
	ctx := context.Background()
	sales, err := f.sk.Read(ctx, []int64{f.act})
	if err != nil {
		f.t.Fatal(err)
	}
	a, _ := f.st.Activities.GetActivity(ctx, f.act)
	counts, _ := f.st.Orders.CountOrders(ctx, f.act)
	held := counts[store.StatusCreated].Units + counts[store.StatusPaid].Units
	off := counts[store.StatusRefunded].OffSale
	if sales[f.act].Available != wantAvailable || a.Sold != held+off || wantAvailable+held+off != a.StockTotal {
		f.t.Errorf("ledger: available %d (want %d), sold %d, held in orders %d, off sale %d, total %d",
			sales[f.act].Available, wantAvailable, a.Sold, held, off, a.StockTotal)
	}
}

func TestPayCancelExpire(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	me := store.Access{Buyer: "1"}
	paid, cancelled, expired := f.created(1, 2), f.created(1, 1), f.created(2, 3)
	f.ledger(4)

	steps := []struct {
		name    string
		at      time.Duration // after t0
		do      func() (store.Order, error)
		want    string
		wantErr error
	}{
		{"pay", 10 * time.Second, func() (store.Order, error) { return f.life.Pay(ctx, paid.ID, me) }, "paid", nil},
		{"pay again: the order as paid", 11 * time.Second, func() (store.Order, error) { return f.life.Pay(ctx, paid.ID, me) }, "paid", nil},
		{"pay someone else's", 11 * time.Second, func() (store.Order, error) { return f.life.Pay(ctx, expired.ID, me) }, "", store.ErrNotFound},
		{"cancel", 20 * time.Second, func() (store.Order, error) { return f.life.Cancel(ctx, cancelled.ID, me) }, "cancelled", nil},
		{"cancel again", 21 * time.Second, func() (store.Order, error) { return f.life.Cancel(ctx, cancelled.ID, me) }, "cancelled", nil},
		{"cancel a paid order", 22 * time.Second, func() (store.Order, error) { return f.life.Cancel(ctx, paid.ID, me) }, "", store.ErrNotCancellable},
		// The payment loses to the end of the window: the order is cancelled by it.
		{"pay at the end of the window", time.Minute, func() (store.Order, error) { return f.life.Pay(ctx, expired.ID, store.Access{Buyer: "2"}) }, "", store.ErrExpired},
		{"pay it again", time.Minute + time.Second, func() (store.Order, error) { return f.life.Pay(ctx, expired.ID, store.Access{Buyer: "2"}) }, "", store.ErrExpired},
	}
	for _, st := range steps {
		f.set(t0.Add(st.at))
		o, err := st.do()
		if !errors.Is(err, st.wantErr) || err == nil && o.Status != st.want {
			t.Errorf("%s: got %q, %v; want %q, %v", st.name, o.Status, err, st.want, st.wantErr)
		}
	}
	// The cancelled unit came back, once, and the expired order's three.
	f.ledger(8)
	if o, _ := f.st.Orders.GetOrder(ctx, expired.ID); o.Status != store.StatusCancelled {
		t.Errorf("the order whose payment came too late is %q, want cancelled", o.Status)
	}
	f.set(t0.Add(time.Minute + time.Second))
	if n, err := f.life.ExpireDue(ctx, 100); err != nil || n != 0 {
		t.Errorf("ExpireDue = %d, %v; want 0: the late payment cancelled the order", n, err)
	}
	f.ledger(8)
	if snap, _ := f.sk.Snapshot(ctx, f.act); snap.Users["2"] != 0 {
		t.Errorf("user 2 still holds %d units after expiry", snap.Users["2"])
	}
	if _, err := f.life.Pay(ctx, expired.ID, store.Access{Buyer: "2"}); !errors.Is(err, store.ErrExpired) {
		t.Errorf("pay an expired order: %v, want ErrExpired", err)
	}
}

// Payment and expiry of the same orders at once: exactly one wins each order, and each
// order ends as its payment's answer said: paid, or cancelled with its units back.
func TestPayRacesExpiry(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var orders []store.Order
	for u := int64(1); u <= 10; u++ {
		orders = append(orders, f.created(u, 1))
	}
	f.set(t0.Add(time.Minute - time.Millisecond)) // the payers' last moment...
	var wg sync.WaitGroup
	answers := make([]error, len(orders))
	for i, o := range orders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The shop's back end confirms the payment of any buyer's order.
			_, answers[i] = f.life.Pay(ctx, o.ID, store.Access{Admin: true})
		}()
	}
	f.set(t0.Add(time.Minute)) // ...while the expiry runs
	expired, err := f.life.ExpireDue(ctx, 100)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	paid := 0
	for i, o := range orders {
		got, err := f.st.Orders.GetOrder(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case answers[i] == nil && got.Status == store.StatusPaid:
			paid++
		case errors.Is(answers[i], store.ErrExpired) && got.Status == store.StatusCancelled:
		default:
			t.Errorf("order %s: the payment answered %v, and the order is %s", o.ID, answers[i], got.Status)
		}
	}
	f.ledger(int64(len(orders) - paid))
	t.Logf("paid %d, cancelled by the expiry job %d, by their late payment %d", paid, expired, len(orders)-paid-expired)
}

// Redis down while a cancel runs: MySQL cancels, the units come back later, once.
func TestCancelWhileRedisDown(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	o := f.created(1, 2)
	f.redis.Kill()
	got, err := f.life.Cancel(ctx, o.ID, store.Access{Buyer: "1"})
	if err != nil || got.Status != store.StatusCancelled {
		t.Fatalf("cancel with Redis down: %q, %v; want cancelled (MySQL is the record)", got.Status, err)
	}
	if n, err := f.life.ReturnPending(ctx, 10); err == nil {
		t.Fatalf("ReturnPending with Redis down returned %d, nil", n)
	}
	f.redis.Start()
	for i := 0; i < 2; i++ {
		if _, err := f.life.ReturnPending(ctx, 10); err != nil {
			t.Fatalf("ReturnPending: %v", err)
		}
	}
	f.ledger(10)
	if pending, _ := f.st.Lifecycle.PendingReturns(ctx, 10); len(pending) != 0 {
		t.Errorf("%d returns still pending", len(pending))
	}
}

// Expiry in batches, with Redis stopped halfway: 450 orders of 150 buyers expire (more
// than one batch); the first batch is cancelled in MySQL while Redis is down and its
// units come back later by ReturnPending, the rest on the next pass, in pages; every unit comes
// back once, and a second pass of either finds nothing.
func TestExpireInBatchesRedisStopped(t *testing.T) {
	f := newSaleFixture(t, 500, 3)
	ctx := context.Background()
	for u := int64(1); u <= 150; u++ {
		for range 3 {
			f.created(u, 1)
		}
	}
	f.ledger(50)
	f.set(t0.Add(time.Minute))
	// The expiry reads MySQL's outages first, and expires nothing without them
	// (TestExpiryWaitsForTheOutages): here their record is on a Redis that stays up,
	// and the sale's Redis stops after that read.
	f.life = order.New(f.st.Lifecycle, f.st.Activities, f.sk.Stock, outage.NewRecord(testutil.StartRedis(t).Client(t)))
	f.life.SetClock(func() time.Time { return *f.now.Load() })

	f.redis.Kill()
	n, err := f.life.ExpireDue(ctx, 1000)
	if err == nil || n == 0 || n >= 450 {
		t.Fatalf("ExpireDue with Redis down = %d, %v; want an error after its first batch", n, err)
	}
	f.redis.Start()
	if pending, _ := f.st.Lifecycle.PendingReturns(ctx, 1000); len(pending) != n {
		t.Errorf("%d returns pending, want the %d orders cancelled while Redis was down", len(pending), n)
	}
	if back, err := f.life.ReturnPending(ctx, 1000); err != nil || back != n {
		t.Fatalf("ReturnPending = %d, %v; want %d", back, err, n)
	}
	rest, err := f.life.ExpireDueFor(ctx, 100, time.Minute) // pages of 100 until none is left
	if err != nil || n+rest != 450 {
		t.Fatalf("ExpireDueFor = %d, %v; want the other %d", rest, err, 450-n)
	}
	for _, again := range []func(context.Context, int) (int, error){f.life.ExpireDue, f.life.ReturnPending} {
		if m, err := again(ctx, 1000); err != nil || m != 0 {
			t.Errorf("a second pass = %d, %v; want 0", m, err)
		}
	}
	f.ledger(500)
	snap, err := f.sk.Snapshot(ctx, f.act)
	if err != nil || len(snap.Users) != 0 {
		t.Errorf("users still holding units in Redis: %v (%v)", snap.Users, err)
	}
	counts, _ := f.st.Orders.CountOrders(ctx, f.act)
	if c := counts[store.StatusCancelled]; c.Orders != 450 {
		t.Errorf("%d orders cancelled, want 450", c.Orders)
	}
}

// report is what a process told the record of MySQL's outages at t0 + at.
type report struct {
	at          time.Duration
	down        bool
	since, back time.Duration
}

// An order's pay window (60 s from t0) does not run while MySQL is out: a payment after
// the window as set but within the time an outage gave back succeeds and shows the
// deadline in force, the expiry leaves the order until that deadline and writes it, and
// either one past it finds the order expired, its units back once.
func TestOutagesExtendPayWindows(t *testing.T) {
	type step struct {
		at          time.Duration
		op          string // pay, expire
		want        string // the order's status after the step
		wantErr     error
		wantExpires time.Duration // the deadline the order shows after the step
	}
	outage20s := []report{{52 * time.Second, true, 2 * time.Second, 0}, {70 * time.Second, false, 20 * time.Second, 0}}
	tests := []struct {
		name    string
		reports []report
		steps   []step
	}{
		{"a pay within the time an outage gave back", outage20s, []step{
			{75 * time.Second, "pay", "paid", nil, 80 * time.Second}}},
		{"a pay after it", outage20s, []step{
			{80 * time.Second, "pay", "cancelled", store.ErrExpired, 80 * time.Second}}},
		{"the expiry waits for the extended deadline", outage20s, []step{
			{61 * time.Second, "expire", "created", nil, 80 * time.Second},
			{79 * time.Second, "expire", "created", nil, 80 * time.Second},
			{79*time.Second + 900*time.Millisecond, "pay", "paid", nil, 80 * time.Second}}},
		{"the expiry cancels at the extended deadline", outage20s, []step{
			{75 * time.Second, "expire", "created", nil, 80 * time.Second},
			{80 * time.Second, "expire", "cancelled", nil, 80 * time.Second},
			{81 * time.Second, "pay", "cancelled", store.ErrExpired, 80 * time.Second}}},
		// Another process sees MySQL down (a partial outage): the window stops running
		// for everyone, the expiry included, while the report stands.
		{"an outage going on", []report{{52 * time.Second, true, 2 * time.Second, 0}, {64 * time.Second, true, 14 * time.Second, 0}}, []step{
			{65 * time.Second, "expire", "created", nil, 75 * time.Second},
			{66 * time.Second, "pay", "paid", nil, 75 * time.Second}}}, // within the deadline written: kept
		{"an outage longer than the grace ends it", []report{{35 * time.Second, true, 5 * time.Second, 0},
			{30*time.Second + 2*time.Hour, false, 2 * time.Hour, 0}}, []step{
			{30*time.Second + 2*time.Hour, "pay", "cancelled", store.ErrExpired, time.Minute + outage.MaxGrace}}},
		{"an outage before the order changes nothing", []report{{-90 * time.Second, true, 10 * time.Second, 0},
			{-50 * time.Second, false, 50 * time.Second, 0}}, []step{
			{61 * time.Second, "pay", "cancelled", store.ErrExpired, time.Minute}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			o := f.created(1, 2)
			f.ledger(8)
			for _, r := range tc.reports {
				f.set(t0.Add(r.at))
				if err := f.rec.Report(ctx, outage.Report{Instance: "api-1", Down: r.down, Since: r.since, Back: r.back}); err != nil {
					t.Fatal(err)
				}
			}
			for _, st := range tc.steps {
				f.set(t0.Add(st.at))
				var err error
				switch st.op {
				case "pay":
					_, err = f.life.Pay(ctx, o.ID, store.Access{Buyer: "1"})
				case "expire":
					_, err = f.life.ExpireDue(ctx, 100)
				}
				got, gerr := f.st.Orders.GetOrder(ctx, o.ID)
				if !errors.Is(err, st.wantErr) || gerr != nil || got.Status != st.want || !got.ExpiresAt.Equal(t0.Add(st.wantExpires)) {
					t.Errorf("%s at t0+%v: %v, the order %s until t0+%v (%v); want %v, %s until t0+%v", st.op, st.at, err,
						got.Status, got.ExpiresAt.Sub(t0), gerr, st.wantErr, st.want, st.wantExpires)
				}
			}
			// Its units are back once if it ended cancelled, else still held.
			if got, _ := f.st.Orders.GetOrder(ctx, o.ID); got.Status == store.StatusCancelled {
				if _, err := f.life.ReturnPending(ctx, 10); err != nil {
					t.Fatal(err)
				}
				f.ledger(10)
			} else {
				f.ledger(8)
			}
		})
	}
}

// Without the record of MySQL's outages (Redis does not answer), the expiry cancels
// nothing: it cannot tell whether an outage extended a window.
func TestExpiryWaitsForTheOutages(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.created(1, 1)
	f.set(t0.Add(2 * time.Minute))
	f.redis.Kill()
	if n, err := f.life.ExpireDue(ctx, 100); err == nil || n != 0 {
		t.Errorf("ExpireDue without the record = %d, %v; want 0 and an error", n, err)
	}
	counts, err := f.st.Orders.CountOrders(ctx, f.act)
	if err != nil || counts[store.StatusCreated].Orders != 1 {
		t.Errorf("orders %v (%v), want the one still created", counts, err)
	}
}

// An order's pay window starts when MySQL has it: one that waited 30 s in the queue (a
// worker behind, or a MySQL outage) still gets its whole minute.
func TestPayWindowStartsWhenStored(t *testing.T) {
	f := newFixture(t)
	f.set(t0.Add(30 * time.Second))
	o := f.created(1, 1) // bought at t0
	got, err := f.st.Orders.GetOrder(context.Background(), o.ID)
	if err != nil || !got.ExpiresAt.Equal(t0.Add(90*time.Second)) {
		t.Errorf("an order bought at t0 and stored at t0+30s expires at t0+%v (%v), want t0+1m30s", got.ExpiresAt.Sub(t0), err)
	}
}

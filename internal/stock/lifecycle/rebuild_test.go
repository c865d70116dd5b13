package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/lifecycle"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/settle"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// A lost sale is rebuilt once, however many processes try at once; purchases then run
// against the rebuilt units and allowances.
func TestRebuildLostOnce(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	sale := stock.Sale{ActivityID: 9, Total: 10, Limit: 3, StartsAt: stocktest.T0, EndsAt: stocktest.T0.Add(time.Hour),
		PriceCents: 100, PayWindow: time.Minute, Gen: 1}
	users := map[buyer.ID]int64{"7": 3, "8": 5}
	from, err := s.RebuildPoint(ctx, 9, 1)
	if err != nil || from.Exists {
		t.Fatalf("rebuild point of a missing sale = %+v, %v", from, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Rebuild(ctx, from, lifecycle.Closing{}, sale, users, nil, 8, nil, nil)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				outcomes["rebuilt"]++
			case errors.Is(err, lifecycle.ErrMoved):
				outcomes["moved"]++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if outcomes["rebuilt"] != 1 || outcomes["moved"] != 7 {
		t.Fatalf("8 rebuilds at once: %v, want 1 rebuilt and 7 that found it there", outcomes)
	}
	snap, err := s.Snapshot(ctx, 9)
	if err != nil || snap.Sale.Available != 2 || snap.Sale.Total != 10 || snap.Users["7"] != 3 || snap.Users["8"] != 5 {
		t.Fatalf("snapshot %+v, %v; want 2 of 10 available, users 7:3 8:5", snap, err)
	}
	in := stocktest.T0.Add(time.Minute)
	if _, err := s.Reserve(ctx, stocktest.Reservation(9, 7, 1, "", in)); err == nil {
		t.Errorf("user 7 holds 3 of 3 after the rebuild, yet bought one more")
	}
	if _, err := s.Reserve(ctx, stocktest.Reservation(9, 1, 2, "", in)); err != nil {
		t.Errorf("a new buyer on the rebuilt sale: %v", err)
	}
	if _, err := s.Reserve(ctx, stocktest.Reservation(9, 2, 1, "", in)); err == nil {
		t.Errorf("the rebuilt sale had 2 units; a third sold")
	}
}

// A stale sale (Redis behind MySQL) is rebuilt over what Redis holds: the queued orders
// MySQL has are settled (MySQL's units count them), the others stay queued with their
// units, and a cancelled order on its way back comes back once more. Every script that
// moves an order raises the generation, and a rebuild read before such a move writes
// nothing.
func TestRebuildStale(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	stocktest.NewSale(t, s, 4, 10, 5)
	in := stocktest.T0.Add(time.Minute)
	var ids []string
	for _, user := range []int64{1, 2, 2} {
		r := stocktest.Reservation(4, user, 2, "", in)
		if _, err := s.Reserve(ctx, r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.OrderID)
		// The user lock's 1 ms lease runs out (by Redis' clock).
		time.Sleep(2 * time.Millisecond)
	}
	from, err := s.RebuildPoint(ctx, 4, 1)
	if err != nil || !from.Exists || from.Gen != 0 || len(from.Queued) != 3 {
		t.Fatalf("rebuild point = %+v, %v; want the sale at generation 0 with 3 queued", from, err)
	}
	sale := stock.Sale{ActivityID: 4, Total: 10, Limit: 5, StartsAt: stocktest.T0, EndsAt: stocktest.T0.Add(time.Hour), Gen: 7}
	if _, gen, err := stocktest.Claim(ctx, s, 4, ids[:1]...); err != nil || gen != 1 {
		t.Fatalf("claim: generation %d, %v; want 1", gen, err)
	}
	if err := s.Rebuild(ctx, from, lifecycle.Closing{}, sale, nil, nil, 0, nil, nil); !errors.Is(err, lifecycle.ErrMoved) {
		t.Fatalf("rebuild read before a claim: %v, want ErrMoved", err)
	}

	// MySQL: user 1's order (ids[0]) is stored; user 3 holds 1 unit of an older order.
	from, _ = s.RebuildPoint(ctx, 4, 1)
	var stored []stock.QueuedOrder
	for _, q := range from.Queued {
		if q.OrderID == ids[0] {
			stored = append(stored, q)
		}
	}
	if _, err := s.Return(ctx, 4, settle.Returning{OrderID: "cancelled-before", Buyer: "3", Quantity: 1}); err != nil { // the returned set has it
		t.Fatal(err)
	}
	from, _ = s.RebuildPoint(ctx, 4, 1) // the return moved the generation too
	if from.Gen != 2 {
		t.Fatalf("generation after a claim and a return = %d, want 2", from.Gen)
	}
	if err := s.Rebuild(ctx, from, lifecycle.Closing{}, sale, map[buyer.ID]int64{"1": 2, "3": 1}, nil, 3, stored, nil); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	// 10 - MySQL's 3 - the 4 units of user 2's two orders still queued.
	if snap.Sale.Available != 3 || len(snap.Queued) != 2 || snap.Users["1"] != 2 || snap.Users["2"] != 4 || snap.Users["3"] != 1 {
		t.Errorf("after the rebuild: %+v; want 3 available, user 2's 2 orders queued, users 1:2 2:4 3:1", snap)
	}
	if _, units, err := s.QueuedTotals(ctx, 4); err != nil || units != 4 {
		t.Errorf("queued units = %d, %v; want 4", units, err)
	}
	if sales, _ := s.Read(ctx, []int64{4}); sales[4].Gen != 7 {
		t.Errorf("generation after the rebuild = %d, want 7", sales[4].Gen)
	}
	if _, err := s.Return(ctx, 4, settle.Returning{OrderID: "cancelled-before", Buyer: "3", Quantity: 1}); err != nil { // still pending in MySQL: back again
		t.Fatal(err)
	}
	if sales, _ := s.Read(ctx, []int64{4}); sales[4].Available != 4 {
		t.Errorf("available after the pending return = %d, want 4", sales[4].Available)
	}
}

// Orders whose state was lost with their sale's (their tasks survived) are adopted on
// the rebuilt sale: their units taken again, queued and claimed; but not one the API gave
// back, nor one taken after the rebuild, nor when too few units are left or its buyer
// would pass the limit or the cap on participations, nor a seat
// (its group went with the sale: reported, nothing taken), nor before the sale is
// rebuilt.
func TestAdoptOrphans(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	s := stocktest.New(rdb)
	ctx := context.Background()
	stocktest.NewSale(t, s, 5, 10, 5)
	in := stocktest.T0.Add(time.Minute)
	given := stocktest.Reservation(5, 9, 1, "", in)
	if _, err := s.Reserve(ctx, given); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Rollback(ctx, 5, "9", given.OrderID, ""); err != nil || got != settle.RolledBack {
		t.Fatalf("rollback: %v, %v", got, err)
	}
	lost := []stock.QueuedOrder{
		{OrderID: "lost-1", ActivityID: 5, Buyer: "1", Quantity: 3, Limit: 5, CreatedAt: in},
		{OrderID: "lost-2", ActivityID: 5, Buyer: "2", Quantity: 4, Limit: 5, CreatedAt: in, ParticipationCap: 1},
		{OrderID: "lost-3", ActivityID: 5, Buyer: "3", Quantity: 4, Limit: 5, CreatedAt: in},
		{OrderID: "over-limit", ActivityID: 5, Buyer: "1", Quantity: 3, Limit: 5, CreatedAt: in},
		{OrderID: "over-cap", ActivityID: 5, Buyer: "2", Quantity: 1, Limit: 5, CreatedAt: in, ParticipationCap: 1},
		{OrderID: given.OrderID, ActivityID: 5, Buyer: "9", Quantity: 1, Limit: 5, CreatedAt: in},
		{OrderID: "seat", ActivityID: 5, Buyer: "4", Quantity: 1, Limit: 5, CreatedAt: in, Group: "g",
			GroupSize: 3, GroupExpiresAt: in.Add(time.Minute), ParticipationCap: 2},
	}
	if err := rdb.Del(ctx, "seckill:{act:5}:sale", "seckill:{act:5}:users").Err(); err != nil { // the loss
		t.Fatal(err)
	}
	got, _, err := s.Adopt(ctx, 5, lost[:1])
	if err != nil || got["lost-1"] != lifecycle.SaleMissing {
		t.Fatalf("before the rebuild: %v, %v; want SaleMissing", got, err)
	}
	from, _ := s.RebuildPoint(ctx, 5, 1)
	sale := stock.Sale{ActivityID: 5, Total: 10, Limit: 5, StartsAt: stocktest.T0, EndsAt: stocktest.T0.Add(time.Hour), Gen: 1, Epoch: 3}
	if err := s.Rebuild(ctx, from, lifecycle.Closing{}, sale, nil, nil, 0, nil, nil); err != nil {
		t.Fatal(err)
	}
	later := stock.QueuedOrder{OrderID: "after", ActivityID: 5, Buyer: "5", Quantity: 1, Limit: 5, CreatedAt: time.Now().Add(time.Second)}
	got, epoch, err := s.Adopt(ctx, 5, append(lost, later))
	if epoch != 3 {
		t.Errorf("adopted in epoch %d, want the rebuild's 3", epoch)
	}
	want := map[string]lifecycle.Adoption{"lost-1": lifecycle.Adopted, "lost-2": lifecycle.Adopted, "lost-3": lifecycle.OrphanNoStock,
		"over-limit": lifecycle.OrphanOverLimit, "over-cap": lifecycle.OrphanOverLimit,
		given.OrderID: lifecycle.NotOrphan, "seat": lifecycle.OrphanSeat, "after": lifecycle.NotOrphan}
	for id, w := range want {
		if err != nil || got[id] != w {
			t.Errorf("adopt %s: %v (%v), want %v", id, got[id], err, w)
		}
	}
	snap, _ := s.Snapshot(ctx, 5)
	if snap.Sale.Available != 3 || len(snap.Queued) != 2 || snap.Users["1"] != 3 || snap.Users["2"] != 4 {
		t.Errorf("after adopting: %+v; want 3 available, lost-1 and lost-2 queued with their users' units", snap)
	}
	if mine, err := s.UserQueued(ctx, []int64{5}, "1"); err != nil || len(mine) != 1 || mine[0].OrderID != "lost-1" {
		t.Errorf("buyer 1's queued orders after adopting: %+v, %v; want lost-1", mine, err)
	}
	claimed, _, err := stocktest.Claim(ctx, s, 5, "lost-1", "lost-2")
	if err != nil || !claimed["lost-1"] || !claimed["lost-2"] {
		t.Errorf("the adopted orders are queued: claim %v, %v", claimed, err)
	}
}

// A rebuild keeps the user locks of the users whose orders stay queued (their commits may
// be under way); the lock of a user whose order MySQL has goes with the old users hash.
func TestRebuildKeepsLocksOfQueuedOrders(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	stocktest.NewSale(t, s, 6, 10, 5)
	in := stocktest.T0.Add(time.Minute)
	rs := map[int64]reserve.Reservation{}
	for _, user := range []int64{1, 2} {
		r := stocktest.Reservation(6, user, 1, "", in)
		r.LockTTL = time.Minute
		if _, err := s.Reserve(ctx, r); err != nil {
			t.Fatal(err)
		}
		rs[user] = r
	}
	from, err := s.RebuildPoint(ctx, 6, 1)
	if err != nil || len(from.Queued) != 2 {
		t.Fatalf("rebuild point = %+v, %v; want 2 queued", from, err)
	}
	var stored []stock.QueuedOrder // MySQL has user 2's order
	for _, q := range from.Queued {
		if q.OrderID == rs[2].OrderID {
			stored = append(stored, q)
		}
	}
	sale := stock.Sale{ActivityID: 6, Total: 10, Limit: 5, StartsAt: stocktest.T0, EndsAt: stocktest.T0.Add(time.Hour), Gen: 3}
	if err := s.Rebuild(ctx, from, lifecycle.Closing{}, sale, map[buyer.ID]int64{"2": 1}, nil, 1, stored, nil); err != nil {
		t.Fatal(err)
	}
	locks, err := s.UserLocks(ctx, 6)
	if err != nil || len(locks) != 1 || locks["1"] != rs[1].LockToken {
		t.Errorf("locks after the rebuild %v (%v), want user 1's alone", locks, err)
	}
	if _, err := s.Reserve(ctx, stocktest.Reservation(6, 1, 1, "", in)); !errors.Is(err, stock.ErrBusy) {
		t.Errorf("user 1 after the rebuild: %v, want ErrBusy (the lock kept)", err)
	}
	if q, err := s.UserQueued(ctx, []int64{6}, "1"); err != nil || len(q) != 1 || q[0].OrderID != rs[1].OrderID {
		t.Errorf("user 1's queued orders after the rebuild %+v (%v), want its order", q, err)
	}
	if q, err := s.UserQueued(ctx, []int64{6}, "2"); err != nil || len(q) != 0 {
		t.Errorf("user 2's queued orders after the rebuild %+v (%v), want none (MySQL has it)", q, err)
	}
	if snap, err := s.Snapshot(ctx, 6); err != nil || snap.Users["1"] != 1 || snap.Users["2"] != 1 || snap.Sale.Available != 8 {
		t.Errorf("after the rebuild: %+v (%v), want users 1:1 2:1 and 8 available", snap, err)
	}
}

// A rebuild replaces the users hash, where an attempt that reserved left the buyer's
// allowance (its allowance field), yet hands nobody a fresh burst: the allowance of a
// buyer whose orders MySQL has is kept in the buyer's allowance key, that of a buyer
// whose orders stay queued (who may have reserved after it was read) in the field, as
// their lock. For a decimal buyer and one of another subject alike.
func TestRebuildKeepsAllowances(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	s := stocktest.New(rdb)
	ctx := context.Background()
	in := stocktest.T0.Add(time.Minute)
	act := int64(30)
	for _, who := range []buyer.ID{"7", "auth0|a b"} {
		for _, stored := range []bool{false, true} {
			act++
			stocktest.NewSale(t, s, act, 10, 5)
			attempt := func() reserve.Reservation {
				r := stocktest.Reservation(act, 0, 1, "", in)
				r.Buyer, r.PerSecond = who, 1
				return r
			}
			for range 2 { // the burst: two attempts a second apart at most
				if _, err := s.Reserve(ctx, attempt()); err != nil {
					t.Fatalf("reserve: %v", err)
				}
				// The buyer's 1 ms lock runs out (a lease, by Redis' clock).
				time.Sleep(5 * time.Millisecond)
			}
			from, err := s.RebuildPoint(ctx, act, 1)
			if err != nil || len(from.Queued) != 2 {
				t.Fatalf("rebuild point = %+v, %v; want 2 queued", from, err)
			}
			users, held, kept := map[buyer.ID]int64{}, int64(0), []stock.QueuedOrder(nil)
			if stored { // MySQL has both orders: the rebuild settles them
				users[who], held, kept = 2, 2, from.Queued
			}
			sale := stock.Sale{ActivityID: act, Total: 10, Limit: 5, StartsAt: stocktest.T0, EndsAt: stocktest.T0.Add(time.Hour), Gen: 3}
			if err := s.Rebuild(ctx, from, lifecycle.Closing{}, sale, users, nil, held, kept, nil); err != nil {
				t.Fatal(err)
			}
			if snap, err := s.Snapshot(ctx, act); err != nil || snap.Users[who] != 2 || snap.Sale.Available != 8 {
				t.Fatalf("%q after the rebuild (MySQL has the orders: %v): %+v (%v), want 2 units held, 8 available", who, stored, snap, err)
			}
			// where each allowance went: a queued order's buyer keeps the field, which
			// holds the allowance even of a reservation made after keepAllowances' read
			field := rdb.HExists(ctx, fmt.Sprintf("seckill:{act:%d}:users", act), "a"+who.Key()).Val()
			key := rdb.Exists(ctx, fmt.Sprintf("seckill:{act:%d}:rate:%s", act, who.Key())).Val() == 1
			if field == stored || !key {
				t.Errorf("%q, MySQL has the orders: %v; the users hash's allowance field %v, the allowance key %v; want the field only for queued orders, the key in both",
					who, stored, field, key)
			}
			if _, err := s.Reserve(ctx, attempt()); !errors.Is(err, stock.ErrRateLimited) {
				t.Errorf("%q's third attempt after the rebuild (MySQL has the orders: %v): %v, want ErrRateLimited", who, stored, err)
			}
		}
	}
}

// An attempt that reserved nothing after one that did leaves the user's allowance in its
// key, later than the users hash's field: the rebuild keeps the later of the two.
func TestRebuildKeepsTheLaterAllowance(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	s := stocktest.New(rdb)
	ctx := context.Background()
	in := stocktest.T0.Add(time.Minute)
	act, user := int64(40), int64(7)
	stocktest.NewSale(t, s, act, 10, 5)
	r := stocktest.Reservation(act, user, 1, "", in)
	r.PerSecond = 1 // a burst of two
	if _, err := s.Reserve(ctx, r); err != nil {
		t.Fatalf("reserve: %v", err)
	}
	// The user's 1 ms lock runs out (a lease, by Redis' clock).
	time.Sleep(5 * time.Millisecond)
	over := stocktest.Reservation(act, user, 6, "", in)
	over.PerSecond = 1
	if _, err := s.Reserve(ctx, over); !errors.Is(err, stock.ErrQuantityOverLimit) {
		t.Fatalf("six units of a limit of five: %v, want ErrQuantityOverLimit", err)
	}
	from, err := s.RebuildPoint(ctx, act, 1)
	if err != nil || len(from.Queued) != 1 {
		t.Fatalf("rebuild point = %+v, %v; want 1 queued", from, err)
	}
	sale := stock.Sale{ActivityID: act, Total: 10, Limit: 5, StartsAt: stocktest.T0, EndsAt: stocktest.T0.Add(time.Hour), Gen: 3}
	if err := s.Rebuild(ctx, from, lifecycle.Closing{}, sale, map[buyer.ID]int64{buyer.Of(user): 1}, nil, 1, from.Queued, nil); err != nil {
		t.Fatal(err)
	}
	third := stocktest.Reservation(act, user, 1, "", in)
	third.PerSecond = 1
	if _, err := s.Reserve(ctx, third); !errors.Is(err, stock.ErrRateLimited) {
		t.Errorf("the third attempt after the rebuild: %v, want ErrRateLimited", err)
	}
}

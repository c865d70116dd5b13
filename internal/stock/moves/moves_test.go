package moves_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/lifecycle"
	"seckill/internal/stock/moves"
	"seckill/internal/stock/settle"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// bucketFields reads a field of every bucket of a sale of k.
func bucketFields(t *testing.T, s *stocktest.Side, act int64, k int, field string) []int64 {
	t.Helper()
	var out []int64
	for _, b := range stock.Whole(act, k).All() {
		n, err := s.Redis().HGet(context.Background(), stock.SaleKey(b), field).Int64()
		if err != nil {
			n = -1
		}
		out = append(out, n)
	}
	return out
}

// A crowd larger than the stock, over two processes, buys a sale of K buckets: every
// unit is sold, none twice, nobody past the limit; the last units are found wherever
// they are, and the sale reads sold out only once none is left anywhere. A unit that
// comes back (a cancel) is sold to a buyer of another bucket.
func TestBucketsSellEveryUnit(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	for i, k := range []int{2, 3, 7} {
		t.Run(fmt.Sprintf("K=%d", k), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			apis := []*stocktest.Side{stocktest.New(rdb), stocktest.New(rdb)}
			for _, api := range apis {
				go api.Watch(ctx) // units that come back drop the sold-out flags
			}
			act := int64(100 + i)
			const units, limit, buyers = 101, 3, 300
			stocktest.LoadBuckets(t, apis[0], act, units, limit, k)
			if got := bucketFields(t, apis[0], act, k, "avail"); sum(got) != units {
				t.Fatalf("loaded buckets %v, want %d units over them", got, units)
			}
			var mu sync.Mutex
			taken, held := 0, map[int64]int{}
			answers := map[string]int{}
			var wg sync.WaitGroup
			for u := int64(1); u <= buyers; u++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for try := range 2 { // each buyer twice, through either process
						r := stocktest.Purchase(act, u, 1+rand.IntN(2))
						r.LockTTL = time.Millisecond
						_, err := apis[(int(u)+try)%2].Reserve(ctx, r)
						mu.Lock()
						answers[fmt.Sprint(errors.Unwrap(err))]++
						if err == nil {
							taken += r.Quantity
							held[u] += r.Quantity
						} else if !errors.Is(err, stock.ErrSoldOut) && !errors.Is(err, stock.ErrLimitExceeded) && !errors.Is(err, stock.ErrBusy) {
							t.Errorf("buyer %d: %v", u, err)
						}
						mu.Unlock()
						// The buyer's 1 ms user lock runs out between tries (a lease, by Redis' clock).
						time.Sleep(2 * time.Millisecond)
					}
				}()
			}
			wg.Wait()
			t.Logf("answers: %v", answers)
			if taken != units {
				t.Fatalf("%d units sold of %d", taken, units)
			}
			snap, err := apis[0].Snapshot(ctx, act)
			if err != nil {
				t.Fatal(err)
			}
			var queued int64
			for _, q := range snap.Queued {
				queued += int64(q.Quantity)
			}
			if snap.Sale.Available != 0 || queued != units || snap.Sale.Reserve != 0 {
				t.Errorf("snapshot: %d available, %d reserve, %d queued; want 0, 0, %d", snap.Sale.Available, snap.Sale.Reserve, queued, units)
			}
			for u, n := range held {
				if n > limit || snap.Users[buyer.Of(u)] != int64(n) {
					t.Errorf("user %d holds %d (Redis says %d), limit %d", u, n, snap.Users[buyer.Of(u)], limit)
				}
			}
			for _, api := range apis { // both processes answer a newcomer sold out, from their flag
				if _, err := api.Reserve(ctx, stocktest.Purchase(act, buyers+1, 1)); !stocktest.NoneLeft(err) {
					t.Errorf("a newcomer after the sale sold out: %v, want sold out", err)
				}
			}

			// stock.One order comes back to its buyer's home bucket; a buyer of another bucket
			// gets it.
			q := snap.Queued[0]
			if err := apis[0].Settle(ctx, act, []settle.Settlement{{OrderID: q.OrderID, Buyer: q.Buyer, Failed: true}}); err != nil {
				t.Fatal(err)
			}
			other := int64(buyers + 2)
			for stock.HomeBucket(buyer.Of(other), k) == stock.HomeBucket(q.Buyer, k) {
				other++
			}
			deadline := time.Now().Add(500 * time.Millisecond) // well within the flag's 1 s TTL
			for {
				_, err := apis[1].Reserve(ctx, stocktest.Purchase(act, other, q.Quantity))
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the units that came back, for a buyer of bucket %d (they came to %d): %v",
						stock.HomeBucket(buyer.Of(other), k), stock.HomeBucket(q.Buyer, k), err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if got := bucketFields(t, apis[0], act, k, "avail"); sum(got) != 0 {
				t.Errorf("buckets after the last sale: %v, want empty", got)
			}
		})
	}
}

func sum(ns []int64) int64 {
	var s int64
	for _, n := range ns {
		s += n
	}
	return s
}

// A mover that dies between the two halves of a move (take, then apply) leaves its
// record: the units count as available, the repair pass applies them once, and a move
// applied twice adds its units once. Units added by PATCH go to the reserve, and reach
// the buyers of any bucket.
func TestMoveFinishedByRepair(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	const act, k = 7, 3
	stocktest.LoadBuckets(t, s, act, 30, 50, k)
	from := stock.Whole(act, k).Sibling(1)
	m, err := moves.Take(ctx, s.Mover, from, "avail", 4, 2, "m1", 2)
	if err != nil || m.Units != 5 {
		t.Fatalf("take 4 of 10, at least half: %d, %v; want 5", m.Units, err)
	}
	// The mover dies here.
	sales, err := s.Read(ctx, []int64{act})
	if err != nil || sales[act].Available != 30 {
		t.Fatalf("available with a move under way: %+v, %v; want 30", sales[act], err)
	}
	if n, err := s.FinishMoves(ctx, act, time.Now()); err != nil || n != 0 {
		t.Fatalf("repair of a move taken just now: %d, %v; want none finished", n, err)
	}
	if n, err := s.FinishMoves(ctx, act, time.Now().Add(moves.MoveRepairAge+time.Second)); err != nil || n != 1 {
		t.Fatalf("repair of a move left behind: %d, %v; want 1", n, err)
	}
	if err := moves.Apply(ctx, s.Mover, m); err != nil { // its mover wakes and applies it too
		t.Fatal(err)
	}
	if got := bucketFields(t, s, act, k, "avail"); got[1] != 5 || got[2] != 15 || sum(got) != 30 {
		t.Errorf("buckets after the move: %v, want [10 5 15]", got)
	}
	if n, _ := s.FinishMoves(ctx, act, time.Now().Add(time.Hour)); n != 0 {
		t.Errorf("a finished move repaired again: %d", n)
	}

	if err := s.Patch(ctx, act, nil, nil, 6, nil); err != nil {
		t.Fatal(err)
	}
	if got := bucketFields(t, s, act, k, "total"); got[0] != 36 || got[1] != 36 || got[2] != 36 {
		t.Errorf("totals after adding 6: %v, want 36 in each bucket", got)
	}
	// Buyers of bucket 1 take its 5 units and then the reserve's 6.
	bought := 0
	for u := int64(1); bought < 11; u++ {
		if stock.HomeBucket(buyer.Of(u), k) != 1 {
			continue
		}
		if _, err := s.Reserve(ctx, stocktest.Purchase(act, u, 1)); err != nil {
			t.Fatalf("buyer %d of bucket 1, after %d bought: %v", u, bought, err)
		}
		bought++
	}
	if got := bucketFields(t, s, act, k, "reserve"); got[0] < 0 || got[0] > 6 {
		t.Errorf("reserve %d after bucket 1 ran dry", got[0])
	}
	if sales, _ := s.Read(ctx, []int64{act}); sales[act].Available != 25 {
		t.Errorf("available = %d, want 25 (36 - 11)", sales[act].Available)
	}
}

// A rebuild of a sale of several buckets closes it (purchases answer as for a missing
// sale, another rebuild stays out), gives every bucket its buyers and the reserve every
// unit left, and reopens it; a late half of a move taken before the rebuild adds nothing.
func TestBucketedRebuild(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	const act, k = 9, 3
	sale := stock.Sale{ActivityID: act, Available: 30, Total: 30, Limit: 5, StartsAt: stocktest.T0, EndsAt: stocktest.T0.Add(time.Hour),
		PriceCents: 100, PayWindow: time.Minute, Buckets: k}
	if err := s.Load(ctx, sale); err != nil {
		t.Fatal(err)
	}
	for u := int64(1); u <= 6; u++ {
		if _, err := s.Reserve(ctx, stocktest.Purchase(act, u, 2)); err != nil {
			t.Fatal(err)
		}
	}
	from := stock.Whole(act, k).Sibling(1)
	late, err := moves.Take(ctx, s.Mover, from, "avail", 1, 1, "late", 0)
	if err != nil || late.Units == 0 {
		t.Fatalf("take: %d, %v", late.Units, err)
	}

	closing, err := s.Close(ctx, act, k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Close(ctx, act, k); !errors.Is(err, lifecycle.ErrRebuilding) {
		t.Errorf("a second rebuild's Close: %v, want ErrRebuilding", err)
	}
	if _, err := s.Reserve(ctx, stocktest.Purchase(act, 50, 1)); !errors.Is(err, stock.ErrNoSale) {
		t.Errorf("a purchase in a closed sale: %v, want ErrNoSale", err)
	}
	from0, err := s.RebuildPoint(ctx, act, k)
	if err != nil || from0.Exists || len(from0.Queued) != 6 {
		t.Fatalf("rebuild point of the closed sale: %+v, %v; want 6 queued, not there to buy from", from0, err)
	}
	// MySQL holds the orders of users 1 and 2 (stored) and 3 units of an older order of
	// user 100; the others are still queued.
	var stored []stock.QueuedOrder
	for _, q := range from0.Queued {
		if q.Buyer == "1" || q.Buyer == "2" {
			stored = append(stored, q)
		}
	}
	users := map[buyer.ID]int64{"1": 2, "2": 2, "100": 3}
	sale.Gen = from0.Gen + 1
	if err := s.Rebuild(ctx, from0, closing, sale, users, nil, 7, stored, nil); err != nil {
		t.Fatal(err)
	}
	if err := moves.Apply(ctx, s.Mover, late); err != nil {
		t.Fatal(err)
	}
	if got := bucketFields(t, s, act, k, "avail"); sum(got) != 0 {
		t.Errorf("bucket units after the rebuild (and a late move): %v, want none: they are in the reserve", got)
	}
	// 30 - 7 held in MySQL - 8 still queued = 15 in the reserve.
	if got := bucketFields(t, s, act, k, "reserve"); got[0] != 15 {
		t.Errorf("reserve after the rebuild: %d, want 15", got[0])
	}
	snap, err := s.Snapshot(ctx, act)
	if err != nil || snap.Sale.Available != 15 || len(snap.Queued) != 4 || snap.Users["100"] != 3 || snap.Users["3"] != 2 {
		t.Errorf("snapshot after the rebuild: %+v, %v", snap, err)
	}
	sold := 0
	for u := int64(200); ; u++ {
		if _, err := s.Reserve(ctx, stocktest.Purchase(act, u, 1)); err != nil {
			if !errors.Is(err, stock.ErrSoldOut) {
				t.Fatalf("buyer %d: %v", u, err)
			}
			break
		}
		sold++
	}
	if sold != 15 {
		t.Errorf("%d units sold after the rebuild, want 15", sold)
	}
}

// A purchase whose bucket is dry while the buckets it would take units from are closed
// for a rebuild answers as for a missing sale (503 and a rebuild), not sold out; once
// they reopen, it gets the unit.
func TestRefillMeetsAClosedSale(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	const act, k = 11, 2
	stocktest.LoadBuckets(t, s, act, 2, 1, k)
	var ofOne []int64 // buyers whose home is bucket 1
	for u := int64(1); len(ofOne) < 2; u++ {
		if stock.HomeBucket(buyer.Of(u), k) == 1 {
			ofOne = append(ofOne, u)
		}
	}
	if _, err := s.Reserve(ctx, stocktest.Purchase(act, ofOne[0], 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Redis().HSet(ctx, stock.SaleKey(stock.One(act)), "closed", "a-rebuild 0").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, stocktest.Purchase(act, ofOne[1], 1)); !errors.Is(err, stock.ErrNoSale) || errors.Is(err, stock.ErrSoldOut) {
		t.Fatalf("a dry bucket while bucket 0 is closed: %v, want ErrNoSale", err)
	}
	if err := s.Redis().HDel(ctx, stock.SaleKey(stock.One(act)), "closed").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, stocktest.Purchase(act, ofOne[1], 1)); err != nil {
		t.Fatalf("once bucket 0 reopened: %v", err)
	}
}

// PATCH on a sale of several buckets: the new limit and end reach every bucket (each
// buyer's purchase is judged in their own), the added units the reserve, and every
// process's sold-out flag drops.
func TestPatchReachesEveryBucket(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	const act, k = 12, 3
	stocktest.LoadBuckets(t, s, act, 3, 1, k)
	limit, end := 2, stocktest.T0.Add(30*time.Minute)
	if err := s.Patch(ctx, act, &limit, &end, 4, nil); err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]int64{"limit": 2, "end": end.UnixMilli(), "total": 7} {
		if got := bucketFields(t, s, act, k, field); got[0] != want || got[1] != want || got[2] != want {
			t.Errorf("%s after the patch: %v, want %d in every bucket", field, got, want)
		}
	}
	if got := bucketFields(t, s, act, k, "reserve"); got[0] != 4 {
		t.Errorf("reserve after adding 4: %d", got[0])
	}
	for b := range k { // a buyer of each bucket buys 2 (the new limit) before the new end
		u := int64(1)
		for stock.HomeBucket(buyer.Of(u), k) != b {
			u++
		}
		r := stocktest.Purchase(act, u, 2)
		r.Now = end.Add(-time.Second)
		if _, err := s.Reserve(ctx, r); err != nil {
			t.Errorf("a buyer of bucket %d, 2 units: %v", b, err)
		}
		r = stocktest.Purchase(act, u+1000, 1)
		r.Now = end
		if _, err := s.Reserve(ctx, r); !errors.Is(err, stock.ErrEnded) {
			t.Errorf("a purchase in bucket %d at the new end: %v, want ErrEnded", stock.HomeBucket(buyer.Of(u+1000), k), err)
		}
	}
	if sales, _ := s.Read(ctx, []int64{act}); sales[act].Available != 1 {
		t.Errorf("available = %d, want 1 (7 - 6)", sales[act].Available)
	}
}

// A buyer asking for more than the sale has left, its last units spread over buckets,
// hears how many are left (and gets them, asking for that many), not that none is.
func TestFewerLeftThanAskedAcrossBuckets(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	const act, k = 13, 3
	stocktest.LoadBuckets(t, s, act, 3, 3, k)
	u := int64(1)
	if _, err := s.Reserve(ctx, stocktest.Purchase(act, u, 1)); err != nil { // one of the three units
		t.Fatal(err)
	}
	_, err := s.Reserve(ctx, stocktest.Purchase(act, u+1, 3))
	var detail *stock.DetailError
	if !errors.As(err, &detail) || detail.Detail != "only 2 left" {
		t.Fatalf("3 asked with 2 left in two buckets: %v, want sold out: only 2 left", err)
	}
	if _, err := s.Reserve(ctx, stocktest.Purchase(act, u+1, 2)); err != nil {
		t.Fatalf("the 2 left: %v", err)
	}
	if _, err := s.Reserve(ctx, stocktest.Purchase(act, u+2, 1)); !stocktest.NoneLeft(err) {
		t.Fatalf("after the last unit: %v, want sold out", err)
	}
}

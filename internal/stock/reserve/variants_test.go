package reserve_test

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
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/settle"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// Each step runs in order against a sale of three variants (2, 1 and 3 units) under a
// limit of 3 per buyer, and a second of two variants (5 and 5) under a limit of 4 and a
// per-variant limit of 2: a purchase names a variant of its sale, a variant sells out
// while the others sell, the limit counts across variants, the per-variant limit caps one,
// and a returned order's units go back to its variant and to its buyer's allowance of it.
func TestReserveVariants(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	s := stocktest.New(rdb)
	ctx := context.Background()
	stocktest.NewVariantSale(t, s, 1, []int64{2, 1, 3}, 3, 0, 1)
	// A sale of variants' hash is a hash table from the start, whatever the number of its
	// fields: a purchase's fields cost the same in a sale of 100 variants (variants.go).
	if enc, err := rdb.ObjectEncoding(ctx, "seckill:{act:1}:sale").Result(); err != nil || enc != "hashtable" {
		t.Errorf("the hash of a sale of three variants is a %q (%v), want a hashtable", enc, err)
	}
	stocktest.NewVariantSale(t, s, 2, []int64{5, 5}, 4, 2, 1)
	stocktest.NewSale(t, s, 3, 5, 3)
	plain := stocktest.Reservation(1, 9, 1, "", stocktest.T0.Add(time.Minute)) // no variant

	var returned reserve.Reservation
	steps := []struct {
		name     string
		r        reserve.Reservation
		wantErr  error
		wantLeft int64 // units of the variant left after it
	}{
		{"no variant in a sale of variants", plain, stock.ErrNoVariant, 0},
		{"a variant past the last", stocktest.VariantReservation(1, 9, 1, 3), stock.ErrNoVariant, 0},
		{"a variant in a sale without", stocktest.VariantReservation(3, 9, 1, 0), stock.ErrNoVariant, 0},
		{"all of one variant", stocktest.VariantReservation(1, 10, 2, 0), nil, 0},
		{"that variant again: sold out", stocktest.VariantReservation(1, 11, 1, 0), stock.ErrSoldOut, 0},
		{"another variant still sells", stocktest.VariantReservation(1, 10, 1, 2), nil, 2},
		{"the limit counts across variants", stocktest.VariantReservation(1, 10, 1, 1), stock.ErrLimitExceeded, 0},
		{"more of a variant than is left", stocktest.VariantReservation(1, 12, 3, 2), stock.ErrSoldOut, 0},
		{"the rest of it", stocktest.VariantReservation(1, 12, 2, 2), nil, 0},
		{"the last unit of the sale", stocktest.VariantReservation(1, 13, 1, 1), nil, 0},
		{"per-variant limit: up to it", stocktest.VariantReservation(2, 20, 2, 0), nil, 3},
		{"per-variant limit: past it", stocktest.VariantReservation(2, 20, 1, 0), stock.ErrLimitExceeded, 0},
		{"per-variant limit: another variant", stocktest.VariantReservation(2, 20, 2, 1), nil, 3},
		{"per-user limit across the two", stocktest.VariantReservation(2, 21, 2, 0), nil, 1},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			time.Sleep(2 * time.Millisecond) // the 1 ms user lock of the previous step expires
			got, err := s.Reserve(ctx, st.r)
			if !errors.Is(err, st.wantErr) {
				t.Fatalf("err = %v, want %v", err, st.wantErr)
			}
			if err == nil && got.Available != st.wantLeft {
				t.Errorf("left of the variant = %d, want %d", got.Available, st.wantLeft)
			}
			if err == nil && got.Order.Variant != st.r.Variant {
				t.Errorf("queued order's variant = %v, want %v", got.Order.Variant, st.r.Variant)
			}
			if err == nil && st.r.Buyer == "20" && st.r.Variant == stock.VariantAt(0) {
				returned = st.r
			}
		})
	}
	if sale, vs := stocktest.VariantsLeft(t, s, 1); sale != 0 || fmt.Sprint(vs) != "[0 0 0]" {
		t.Errorf("sale 1: %d left, variants %v; want 0 and [0 0 0]", sale, vs)
	}
	if sale, vs := stocktest.VariantsLeft(t, s, 2); sale != 4 || fmt.Sprint(vs) != "[1 3]" {
		t.Errorf("sale 2: %d left, variants %v; want 4 and [1 3]", sale, vs)
	}

	// Buyer 20's order of variant 0 comes back: its units go to variant 0, and the buyer
	// may hold 2 of it again.
	if _, err := s.Return(ctx, 2, settle.Returning{OrderID: returned.OrderID, Buyer: returned.Buyer, Quantity: returned.Quantity,
		Variant: returned.Variant}); err != nil {
		t.Fatal(err)
	}
	if sale, vs := stocktest.VariantsLeft(t, s, 2); sale != 6 || fmt.Sprint(vs) != "[3 3]" {
		t.Errorf("sale 2 after a return: %d left, variants %v; want 6 and [3 3]", sale, vs)
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := s.Reserve(ctx, stocktest.VariantReservation(2, 20, 1, 1)); !errors.Is(err, stock.ErrLimitExceeded) {
		t.Errorf("buyer 20 holds 2 of variant 1 still: %v, want limit_exceeded", err)
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := s.Reserve(ctx, stocktest.VariantReservation(2, 20, 2, 0)); err != nil {
		t.Errorf("buyer 20 after the return of their 2 of variant 0: %v", err)
	}

	// Units added to one variant sell at once, where the flag said sold out.
	if err := s.Patch(ctx, 1, nil, nil, 0, map[int]int64{0: 2}); err != nil {
		t.Fatal(err)
	}
	if sale, vs := stocktest.VariantsLeft(t, s, 1); sale != 2 || fmt.Sprint(vs) != "[2 0 0]" {
		t.Errorf("sale 1 after 2 units added to variant 0: %d left, variants %v", sale, vs)
	}
	if _, err := s.Reserve(ctx, stocktest.VariantReservation(1, 14, 2, 0)); err != nil {
		t.Errorf("a purchase of the units added: %v", err)
	}
	snap, err := s.Snapshot(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Sale.Total != 8 || snap.Sale.Variants[0].Total != 4 || snap.Sale.Available != 0 {
		t.Errorf("snapshot of sale 1: %+v", snap.Sale)
	}
}

// A crowd that wants more than each variant has buys a sale of five variants through
// two processes, one bucket and several: every variant sells all its units, none
// twice, and no buyer holds more than the limit across variants or the per-variant
// limit of one. The sold-out flag of one variant never refuses another's purchase.
func TestVariantsCrowd(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	for i, k := range []int{1, 3} {
		t.Run(fmt.Sprintf("buckets=%d", k), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			apis := []*stocktest.Side{stocktest.New(rdb), stocktest.New(rdb)}
			for _, api := range apis {
				go api.Watch(ctx)
			}
			act := int64(50 + i)
			units := []int64{7, 13, 1, 20, 9}
			const limit, vlimit, buyers = 3, 2, 200
			stocktest.NewVariantSale(t, apis[0], act, units, limit, vlimit, k)
			var mu sync.Mutex
			sold := make([]int64, len(units))
			held := map[int64]map[int]int{}
			var wg sync.WaitGroup
			for u := int64(1); u <= buyers; u++ {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(u), 7))
					for try := range 4 {
						v := rng.IntN(len(units))
						r := stocktest.VariantReservation(act, u, 1+rng.IntN(2), v)
						_, err := apis[(int(u)+try)%2].Reserve(ctx, r)
						mu.Lock()
						switch {
						case err == nil:
							sold[v] += int64(r.Quantity)
							if held[u] == nil {
								held[u] = map[int]int{}
							}
							held[u][v] += r.Quantity
						case !errors.Is(err, stock.ErrSoldOut) && !errors.Is(err, stock.ErrLimitExceeded) &&
							!errors.Is(err, stock.ErrBusy):
							t.Errorf("buyer %d: %v", u, err)
						}
						mu.Unlock()
						time.Sleep(2 * time.Millisecond)
					}
				})
			}
			wg.Wait()
			for v, n := range sold {
				if n > units[v] {
					t.Errorf("variant %d: %d sold of %d", v, n, units[v])
				}
			}
			for u, vs := range held {
				total := 0
				for v, n := range vs {
					total += n
					if n > vlimit {
						t.Errorf("buyer %d holds %d of variant %d, past the per-variant limit %d", u, n, v, vlimit)
					}
				}
				if total > limit {
					t.Errorf("buyer %d holds %d across variants, past the limit %d", u, total, limit)
				}
			}
			// What the crowd left, the snapshot shows, variant by variant; a buyer who
			// holds nothing yet buys what is left of each variant.
			snap, err := apis[0].Snapshot(ctx, act)
			if err != nil {
				t.Fatal(err)
			}
			var left int64
			for v, vs := range snap.Sale.Variants {
				if vs.Available != units[v]-sold[v] || vs.Total != units[v] {
					t.Errorf("variant %d: snapshot %+v, want %d of %d left", v, vs, units[v]-sold[v], units[v])
				}
				left += vs.Available
			}
			if snap.Sale.Available != left {
				t.Errorf("the sale has %d left, its variants %d", snap.Sale.Available, left)
			}
			next := int64(buyers + 1)
			for v := range units {
				for n := units[v] - sold[v]; n > 0; n-- {
					time.Sleep(2 * time.Millisecond)
					if _, err := apis[int(next)%2].Reserve(ctx, stocktest.VariantReservation(act, next, 1, v)); err != nil {
						t.Fatalf("variant %d with %d left: %v", v, n, err)
					}
					next++
				}
				if _, err := apis[0].Reserve(ctx, stocktest.VariantReservation(act, next, 1, v)); !errors.Is(err, stock.ErrSoldOut) {
					t.Errorf("variant %d once all sold: %v, want sold out", v, err)
				}
			}
			if sale, vs := stocktest.VariantsLeft(t, apis[1], act); sale != 0 {
				t.Errorf("after every unit sold: %d left, variants %v", sale, vs)
			}
			for _, q := range snap.Queued {
				if _, ok := q.Variant.Index(); !ok {
					t.Errorf("queued order %s has no variant", q.OrderID)
				}
			}
			if got := snap.Users[buyer.Of(1)]; got != int64(sumHeld(held[1])) {
				t.Errorf("buyer 1 holds %d in Redis, %d by the answers", got, sumHeld(held[1]))
			}
		})
	}
}

func sumHeld(vs map[int]int) int {
	n := 0
	for _, v := range vs {
		n += v
	}
	return n
}

// A sale of three variants in three buckets, with a per-variant limit, is rebuilt from
// MySQL's figures while some of its orders stay queued and some units are kept off
// sale: each variant's units left go to the reserve (reserve:<i>), its total less what
// MySQL's orders hold, those kept off sale and the orders that stay queued; a buyer's
// units of a variant come back with their holding, so the per-variant limit holds; and
// every unit left of each variant sells to buyers of any bucket, none more.
func TestVariantsBucketedRebuild(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	const act, k = 71, 3
	units := []int64{10, 6, 4}
	stocktest.NewVariantSale(t, s, act, units, 4, 2, k)
	// Queued before the loss: buyers 1..6 take 1 of variant 0 and 1 of variant 1 each.
	for u := int64(1); u <= 6; u++ {
		for _, v := range []int{0, 1} {
			time.Sleep(2 * time.Millisecond)
			if _, err := s.Reserve(ctx, stocktest.VariantReservation(act, u, 1, v)); err != nil {
				t.Fatalf("buyer %d, variant %d: %v", u, v, err)
			}
		}
	}
	closing, err := s.Close(ctx, act, k)
	if err != nil {
		t.Fatal(err)
	}
	from, err := s.RebuildPoint(ctx, act, k)
	if err != nil || len(from.Queued) != 12 {
		t.Fatalf("rebuild point: %d queued, %v", len(from.Queued), err)
	}
	// MySQL holds the orders of buyers 1 and 2 (stored), 2 units of variant 2 of buyer
	// 100, and 1 unit of variant 2 refunded without restock (off sale).
	var stored []stock.QueuedOrder
	for _, q := range from.Queued {
		if q.Buyer == "1" || q.Buyer == "2" {
			stored = append(stored, q)
		}
	}
	users := map[buyer.ID]int64{"1": 2, "2": 2, "100": 2}
	byVariant := map[buyer.ID]map[int]int64{"1": {0: 1, 1: 1}, "2": {0: 1, 1: 1}, "100": {2: 2}}
	sale := stock.Sale{ActivityID: act, Limit: 4, StartsAt: stocktest.T0, EndsAt: stocktest.T0.Add(time.Hour), PriceCents: 1999,
		PayWindow: 15 * time.Minute, VariantLimit: 2, Buckets: k, Gen: from.Gen + 1, Total: 20}
	for i, n := range units {
		sale.Variants = append(sale.Variants, stock.VariantStock{Total: n, OffSale: map[int]int64{2: 1}[i]})
	}
	if err := s.Rebuild(ctx, from, closing, sale, users, nil, 7, stored, byVariant); err != nil {
		t.Fatal(err)
	}
	// Left: variant 0 10 - 2 held - 4 queued = 4; variant 1 6 - 2 - 4 = 0; variant 2
	// 4 - 2 held - 1 off sale = 1; the sale 20 - 7 - 8 = 5.
	if sale, vs := stocktest.VariantsLeft(t, s, act); sale != 5 || fmt.Sprint(vs) != "[4 0 1]" {
		t.Fatalf("after the rebuild: %d left, variants %v; want 5 and [4 0 1]", sale, vs)
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := s.Reserve(ctx, stocktest.VariantReservation(act, 100, 1, 2)); !errors.Is(err, stock.ErrLimitExceeded) {
		t.Errorf("buyer 100 holds 2 of variant 2 in MySQL: one more got %v, want limit_exceeded", err)
	}
	if _, err := s.Reserve(ctx, stocktest.VariantReservation(act, 1, 1, 0)); err != nil {
		t.Errorf("buyer 1 holds 1 of variant 0 in MySQL, and may hold 2: %v", err)
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := s.Reserve(ctx, stocktest.VariantReservation(act, 1, 1, 0)); !errors.Is(err, stock.ErrLimitExceeded) {
		t.Errorf("buyer 1 holds 2 of variant 0 now: one more got %v, want limit_exceeded", err)
	}
	sold := make([]int, 3)
	for v := range units {
		for u := int64(300 + 100*v); ; u++ {
			if _, err := s.Reserve(ctx, stocktest.VariantReservation(act, u, 1, v)); err != nil {
				if !errors.Is(err, stock.ErrSoldOut) {
					t.Fatalf("buyer %d, variant %d: %v", u, v, err)
				}
				break
			}
			sold[v]++
		}
	}
	if fmt.Sprint(sold) != "[3 0 1]" { // buyer 1 took one of variant 0's 4 above
		t.Errorf("sold after the rebuild by variant: %v, want [3 0 1]", sold)
	}
}

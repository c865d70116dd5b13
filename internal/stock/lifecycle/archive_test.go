package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/lifecycle"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/settle"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// A finished sale whose orders went every way (bought with Idempotency-Keys, settled,
// failed back to stock, cancelled and returned, rolled back, refused past the limit;
// units moved between buckets; groups opened, filled and failed) is archived: marked,
// then removed. No key of it is left, on one server and on a Cluster, in one bucket or
// four; the neighbouring sale's keys are untouched. Every script a late worker or a late
// request could run on it afterwards (a return, a settle, a claim, a roll-back, a
// group's failure or extension, a move's repair, a purchase, a rebuild's Close and
// reopen) writes nothing back.
func TestRemoveLeavesNoKeyOfTheSale(t *testing.T) {
	topologies := []struct {
		name string
		rdb  func(t *testing.T) redis.UniversalClient
	}{
		{"one server", func(t *testing.T) redis.UniversalClient { return testutil.StartRedis(t).Client(t) }},
		{"cluster", func(t *testing.T) redis.UniversalClient {
			return testutil.StartCluster(t, testutil.ClusterOptions{ReplicasPerMaster: -1}).Client(t)
		}},
	}
	cases := []struct {
		name    string
		buckets int
		group   bool
	}{
		{"one bucket", 1, false},
		{"four buckets", 4, false},
		{"group-buy", 1, true},
	}
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb := topo.rdb(t)
			for i, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					ctx := context.Background()
					s := stocktest.New(rdb)
					neighbour, act := int64(100+2*i), int64(101+2*i)
					newSaleOf(t, s, neighbour, 10, 1, false)
					if _, err := s.Reserve(ctx, stocktest.Reservation(neighbour, 1, 1, "n1", stocktest.T0.Add(time.Minute))); err != nil {
						t.Fatal(err)
					}
					kept := testutil.SaleKeys(t, rdb, neighbour)

					newSaleOf(t, s, act, 40, tc.buckets, tc.group)
					names := finishSale(t, s, act, tc.group)
					if len(testutil.SaleKeys(t, rdb, act)) == 0 {
						t.Fatal("the finished sale has no key to remove")
					}

					closing, err := s.Close(ctx, act, tc.buckets)
					if err != nil {
						t.Fatal(err)
					}
					if err := s.MarkArchived(ctx, act, tc.buckets, closing); err != nil {
						t.Fatal(err)
					}
					if _, err := s.Close(ctx, act, tc.buckets); !errors.Is(err, lifecycle.ErrArchived) {
						t.Errorf("a rebuild's Close of the marked sale: %v, want ErrArchived", err)
					}
					late(t, s, act, tc.buckets, names)
					removed, err := s.Remove(ctx, act, tc.buckets, names)
					if err != nil {
						t.Fatal(err)
					}
					if left := testutil.SaleKeys(t, rdb, act); len(left) > 0 {
						t.Errorf("after Remove (%d keys removed): %v left", removed, left)
					}
					late(t, s, act, tc.buckets, names)
					c, err := s.Close(ctx, act, tc.buckets) // a rebuild that read MySQL before the archive ...
					if err != nil {
						t.Fatal(err)
					}
					if err := s.Reopen(ctx, act, tc.buckets, c); err != nil { // ... meets MySQL's refusal
						t.Fatal(err)
					}
					if left := testutil.SaleKeys(t, rdb, act); len(left) > 0 {
						t.Errorf("late writes after Remove left %v", left)
					}
					if got := testutil.SaleKeys(t, rdb, neighbour); !slices.Equal(got, kept) {
						t.Errorf("the neighbouring sale's keys: %v, want %v", got, kept)
					}
				})
			}
		})
	}
}

func newSaleOf(t *testing.T, s *stocktest.Side, act, units int64, buckets int, group bool) {
	t.Helper()
	sale := stock.Sale{ActivityID: act, Available: units, Total: units, Limit: 2, StartsAt: stocktest.T0, EndsAt: stocktest.T0.Add(time.Hour),
		PriceCents: 100, PayWindow: time.Minute, Buckets: buckets}
	if group {
		sale.Kind, sale.GroupSize, sale.GroupWindow = "group", 2, time.Minute
	}
	if err := s.Load(context.Background(), sale); err != nil {
		t.Fatal(err)
	}
}

// finishSale buys a sale's units every way, then leaves no order queued, and returns the
// names MySQL would give of its keys.
func finishSale(t *testing.T, s *stocktest.Side, act int64, group bool) lifecycle.Names {
	t.Helper()
	ctx := context.Background()
	at := stocktest.T0.Add(time.Minute)
	var names lifecycle.Names
	var orders []reserve.Reservation
	for u := int64(1); u <= 12; u++ {
		who := buyer.Of(u)
		if u%3 == 0 {
			who = buyer.ID(fmt.Sprintf("auth0|buyer %d", u))
		}
		names.Buyers = append(names.Buyers, who)
		for n := range 3 { // the third is over the limit of 2: refused, its allowance on a key of its own
			r := stocktest.Reservation(act, 0, 1, fmt.Sprintf("k%d-%d", u, n), at)
			r.Buyer, r.PerSecond = who, 1000
			if group {
				r.Group, r.OpenGroup = fmt.Sprintf("g%d-%d", u, n), true
			}
			_, err := s.Reserve(ctx, r)
			if err == nil {
				err = s.ReleaseUserLocks(ctx, r)
			}
			if err != nil {
				if n < 2 {
					t.Fatalf("buyer %q, purchase %d: %v", who, n, err)
				}
				continue
			}
			orders = append(orders, r)
			names.Keys = append(names.Keys, lifecycle.KeptKey{Buyer: who, Key: r.IdempotencyKey})
			if group {
				names.Groups = append(names.Groups, r.Group)
			}
		}
	}
	// One is rolled back (its buyer got 503), the rest claimed and settled: a third
	// failed (units back), the others stored; of those a third cancelled and returned.
	if _, err := s.Rollback(ctx, act, orders[0].Buyer, orders[0].OrderID, orders[0].IdempotencyKey); err != nil {
		t.Fatal(err)
	}
	var refs []settle.OrderRef
	var settling []settle.Settlement
	var returning []settle.Returning
	for i, r := range orders[1:] {
		refs = append(refs, settle.OrderRef{OrderID: r.OrderID, Buyer: r.Buyer})
		failed := i%3 == 0
		settling = append(settling, settle.Settlement{OrderID: r.OrderID, Buyer: r.Buyer, Failed: failed, Group: r.Group})
		if i%3 == 1 {
			returning = append(returning, settle.Returning{OrderID: r.OrderID, Buyer: r.Buyer, Quantity: 1})
		}
	}
	if _, err := s.Claim(ctx, act, refs); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, act, settling); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Return(ctx, act, returning...); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx, act, returning...); err != nil {
		t.Fatal(err)
	}
	if group { // a group's window passes unfilled: it fails, and is listed failing
		if _, err := s.Fail(ctx, act, orders[2].Group, stocktest.T0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// late runs on an archived sale what a late worker or request could: each must write
// nothing (the caller looks at the keys).
func late(t *testing.T, s *stocktest.Side, act int64, buckets int, names lifecycle.Names) {
	t.Helper()
	ctx := context.Background()
	who := names.Buyers[1]
	if _, err := s.Return(ctx, act, settle.Returning{OrderID: "late-return", Buyer: who, Quantity: 1}); err != nil {
		t.Error(err)
	}
	if err := s.Forget(ctx, act, settle.Returning{OrderID: "late-return", Buyer: who, Quantity: 1}); err != nil {
		t.Error(err)
	}
	if got, err := s.Claim(ctx, act, []settle.OrderRef{{OrderID: "late-claim", Buyer: who}}); err != nil || len(got) != 0 {
		t.Errorf("a late claim: %v, %v; want nothing claimed", got, err)
	}
	if err := s.Settle(ctx, act, []settle.Settlement{{OrderID: "late-settle", Buyer: who, Failed: true, Group: "g1-0"}}); err != nil {
		t.Error(err)
	}
	if res, err := s.Rollback(ctx, act, who, "late-rollback", "k2-0"); err != nil || res != settle.NotQueued {
		t.Errorf("a late roll-back: %v, %v; want NotQueued", res, err)
	}
	if len(names.Groups) > 0 {
		if failed, err := s.Fail(ctx, act, names.Groups[1], stocktest.T0.Add(2*time.Hour)); err != nil || failed {
			t.Errorf("a late failure of a group: %v, %v; want none", failed, err)
		}
		if _, err := s.Extend(ctx, act, names.Groups[1], noOutages{}, stocktest.T0.Add(2*time.Hour)); err != nil {
			t.Error(err)
		}
	}
	if _, err := s.FinishMoves(ctx, act, time.Now().Add(time.Hour)); err != nil {
		t.Error(err)
	}
	r := stocktest.Reservation(act, 0, 1, "k1-0", stocktest.T0.Add(2*time.Minute))
	r.Buyer = names.Buyers[0]
	if _, err := s.Reserve(ctx, r); !errors.Is(err, stock.ErrNoSale) {
		t.Errorf("a late purchase: %v, want ErrNoSale (closed, or gone)", err)
	}
}

// noOutages extends no window.
type noOutages struct{}

func (noOutages) Deadline(_, end, _ time.Time) time.Time { return end.Add(time.Hour) }

// Package stocktest gives tests the whole Redis side of sales on one client, as the
// service has it: the core and each family of scripts on one stock.Stock, their methods
// on one value (no two families share a method's name).
package stocktest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/group"
	"seckill/internal/stock/lifecycle"
	"seckill/internal/stock/moves"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/settle"
)

// Side is every family of the Redis side of sales on one stock.Stock.
type Side struct {
	*stock.Stock
	*reserve.Reserver
	*lifecycle.Sales
	*lifecycle.Rebuilds
	*group.Groups
	*moves.Mover
	*settle.Settler
}

// New returns the Redis side of sales on rdb.
func New(rdb redis.UniversalClient) *Side { return Of(stock.New(rdb)) }

// Of returns the families of scripts on sk: a second process's purchase path, say,
// beside the one a service built on sk.
func Of(sk *stock.Stock) *Side {
	return &Side{Stock: sk, Reserver: reserve.New(sk), Sales: lifecycle.New(sk),
		Rebuilds: lifecycle.NewRebuilds(sk), Groups: group.New(sk),
		Mover: moves.New(sk), Settler: settle.New(sk)}
}

// T0 is when the tests' sales start.
var T0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// NewSale loads sale id, of avail units and a per-user limit, on sale from T0 for an
// hour.
func NewSale(t testing.TB, s *Side, id, avail int64, limit int) {
	t.Helper()
	err := s.Load(context.Background(), stock.Sale{ActivityID: id, Available: avail, Total: avail,
		Limit: limit, StartsAt: T0, EndsAt: T0.Add(time.Hour), PriceCents: 1999, PayWindow: 15 * time.Minute})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
}

var orderSeq atomic.Int64

// Reservation is a purchase of qty units of sale act by user at now, with an
// Idempotency-Key ("" for none), a new order id and lock token, and a lock of a
// millisecond.
func Reservation(act, user int64, qty int, key string, now time.Time) reserve.Reservation {
	return reserve.Reservation{Purchase: stock.Purchase{ActivityID: act, Buyer: buyer.Of(user), Quantity: qty, IdempotencyKey: key},
		OrderID: fmt.Sprintf("o%d", orderSeq.Add(1)), Now: now, LockToken: fmt.Sprintf("t%d", orderSeq.Add(1)), LockTTL: time.Millisecond}
}

// Claim claims orders of a one-bucket sale (whose buyer does not matter there) and
// returns those claimed and the generation the claim reached.
func Claim(ctx context.Context, s *Side, act int64, ids ...string) (map[string]bool, int64, error) {
	refs := make([]settle.OrderRef, len(ids))
	for i, id := range ids {
		refs[i] = settle.OrderRef{OrderID: id}
	}
	got, err := s.Settler.Claim(ctx, act, refs)
	claimed := map[string]bool{}
	var gen int64
	for id, c := range got {
		claimed[id], gen = true, c.Gen
	}
	return claimed, gen, err
}

// WaitSubscribed polls Redis until n clients listen for returned units (each Watch has
// subscribed).
func WaitSubscribed(t testing.TB, rdb *redis.Client, n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		got, err := rdb.PubSubNumSub(context.Background(), stock.ReturnedChannel).Result()
		if err == nil && got[stock.ReturnedChannel] >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v listening for returned units (%v), want %d", got, err, n)
		}
	}
}

// LoadBuckets loads sale id of avail units in k buckets, with a per-user limit, on sale
// from T0 for an hour.
func LoadBuckets(t testing.TB, s *Side, id, avail int64, limit, k int) {
	t.Helper()
	err := s.Load(context.Background(), stock.Sale{ActivityID: id, Available: avail, Total: avail,
		Limit: limit, StartsAt: T0, EndsAt: T0.Add(time.Hour), PriceCents: 100, PayWindow: time.Minute, Buckets: k})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
}

// Purchase is a purchase of qty units of sale act by user a minute after T0, without an
// Idempotency-Key, with a lock of a minute.
func Purchase(act, user int64, qty int) reserve.Reservation {
	n := orderSeq.Add(1)
	return reserve.Reservation{Purchase: stock.Purchase{ActivityID: act, Buyer: buyer.Of(user), Quantity: qty},
		OrderID: fmt.Sprintf("c%d", n), Now: T0.Add(time.Minute), LockToken: fmt.Sprintf("l%d", n), LockTTL: time.Minute}
}

// NoneLeft reports whether err is the answer sold out with no unit left, from Redis or
// from the sold-out flag.
func NoneLeft(err error) bool {
	var d *stock.DetailError
	return errors.As(err, &d) && errors.Is(err, stock.ErrSoldOut) && d.Detail == "no units are left"
}

// newVariantSale loads sale id with the given variants' stock, a per-user limit and a
// per-variant limit (0: none), over buckets.
// NewVariantSale loads sale id of one variant per units (its units), with a per-user and a
// per-variant limit, in buckets, on sale from T0 for an hour.
func NewVariantSale(t testing.TB, s *Side, id int64, units []int64, limit, vlimit, buckets int) {
	t.Helper()
	sale := stock.Sale{ActivityID: id, Limit: limit, StartsAt: T0, EndsAt: T0.Add(time.Hour), PriceCents: 1999,
		PayWindow: 15 * time.Minute, VariantLimit: vlimit, Buckets: buckets}
	for _, n := range units {
		sale.Variants = append(sale.Variants, stock.VariantStock{Total: n, Available: n})
		sale.Total += n
	}
	sale.Available = sale.Total
	if err := s.Load(context.Background(), sale); err != nil {
		t.Fatalf("load: %v", err)
	}
}

// VariantReservation is a purchase of qty units of a variant of sale act by user, a
// minute after T0.
func VariantReservation(act, user int64, qty, variant int) reserve.Reservation {
	r := Reservation(act, user, qty, "", T0.Add(time.Minute))
	r.Variant = stock.VariantAt(variant)
	return r
}

// VariantsLeft is each variant's units available, and the sale's, as Sales reads them.
func VariantsLeft(t testing.TB, s *Side, id int64) (sale int64, variants []int64) {
	t.Helper()
	sales, err := s.Read(context.Background(), []int64{id})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range sales[id].Variants {
		variants = append(variants, v.Available)
	}
	return sales[id].Available, variants
}

package settle_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/settle"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// Units that come back go to the waitlist first, in join order: each returned unit to
// the first entry it fits (a larger entry waits for enough), as an order marked offered,
// never on open sale while an entry fits; an entry whose buyer would pass the limit is
// passed over; an offered order that comes back ends its entry and is offered to the
// next; units no entry fits go back on sale; a join while units are on sale, past the
// limit, or after the end is refused, and a buyer's second join answers the entry.
func TestWaitlistOffersInJoinOrder(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	s := stocktest.New(rdb)
	ctx := context.Background()
	stocktest.NewSale(t, s, 1, 3, 2)
	in := stocktest.T0.Add(time.Minute)
	s.SetClock(func() time.Time { return in })
	join := func(user int64, qty int) (settle.Entry, bool, error) {
		return s.JoinWaitlist(ctx, 1, buyer.Of(user), qty, 0, in, false)
	}
	if _, _, err := join(9, 1); !errors.Is(err, settle.ErrNotSoldOut) {
		t.Fatalf("a join while units are on sale: %v, want ErrNotSoldOut", err)
	}
	var bought []reserve.Reservation
	for u := int64(1); u <= 3; u++ {
		r := stocktest.Reservation(1, u, 1, "", in)
		if _, err := s.Reserve(ctx, r); err != nil {
			t.Fatal(err)
		}
		bought = append(bought, r)
	}
	persist := func(ids ...reserve.Reservation) {
		t.Helper()
		var ss []settle.Settlement
		for _, r := range ids {
			ss = append(ss, settle.Settlement{OrderID: r.OrderID, Buyer: r.Buyer})
		}
		if err := s.Settle(ctx, 1, ss); err != nil {
			t.Fatal(err)
		}
	}
	persist(bought...)

	for _, j := range []struct {
		user     int64
		qty      int
		position int
	}{{10, 2, 1}, {11, 1, 2}, {12, 1, 3}, {13, 1, 4}} {
		e, created, err := join(j.user, j.qty)
		if err != nil || !created || e.Position != j.position || e.Status != settle.EntryWaiting || e.Quantity != j.qty {
			t.Fatalf("buyer %d joins: %+v, %v, %v; want a new entry at %d", j.user, e, created, err, j.position)
		}
	}
	if e, created, err := join(10, 1); err != nil || created || e.Quantity != 2 || e.Position != 1 {
		t.Errorf("buyer 10 joins again: %+v, %v, %v; want the entry they have", e, created, err)
	}
	if _, _, err := join(1, 2); !errors.Is(err, stock.ErrLimitExceeded) {
		t.Errorf("buyer 1, who holds 1 of 2, joins for 2: %v, want ErrLimitExceeded", err)
	}
	// Buyer 13 leaves: their entry goes, and nothing is offered to them.
	if err := s.LeaveWaitlist(ctx, 1, "13"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitlistEntry(ctx, 1, "13"); !errors.Is(err, settle.ErrNoEntry) {
		t.Errorf("the entry of a buyer who left: %v, want ErrNoEntry", err)
	}

	entry := func(user int64) settle.Entry {
		t.Helper()
		e, err := s.WaitlistEntry(ctx, 1, buyer.Of(user))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	giveBack := func(r reserve.Reservation) []stock.QueuedOrder {
		t.Helper()
		offered, err := s.Return(ctx, 1, settle.Returning{OrderID: r.OrderID, Buyer: r.Buyer, Quantity: r.Quantity})
		if err != nil {
			t.Fatal(err)
		}
		return offered
	}
	left := func() int64 {
		t.Helper()
		n, _ := stocktest.VariantsLeft(t, s, 1)
		return n
	}

	// Buyer 1's unit comes back: buyer 10 wants 2 and waits on; buyer 11 gets it.
	offered := giveBack(bought[0])
	if len(offered) != 1 || offered[0].Buyer != "11" || offered[0].Quantity != 1 || !offered[0].Offered {
		t.Fatalf("the first unit back offered %+v, want one order of 1 to buyer 11", offered)
	}
	if e := entry(11); e.Status != settle.EntryOffered || e.OrderID != offered[0].OrderID || e.Position != 0 {
		t.Errorf("buyer 11's entry: %+v, want offered with order %s", e, offered[0].OrderID)
	}
	if e10, e12 := entry(10), entry(12); e10.Position != 1 || e12.Position != 2 {
		t.Errorf("positions after the offer: buyer 10 %d, buyer 12 %d; want 1 and 2", e10.Position, e12.Position)
	}
	if n := left(); n != 0 {
		t.Errorf("%d units on open sale while an entry fitted", n)
	}
	q, err := s.Queued(ctx, 1, offered[0].OrderID)
	if err != nil || !q.Offered || q.Buyer != "11" {
		t.Errorf("the offered order queued: %+v, %v", q, err)
	}
	if mine, err := s.UserQueued(ctx, []int64{1}, "11"); err != nil || len(mine) != 1 || mine[0].OrderID != offered[0].OrderID {
		t.Errorf("buyer 11's queued orders: %+v, %v; want the offered order", mine, err)
	}

	// Buyer 2's unit: buyer 12 gets it.
	if offered := giveBack(bought[1]); len(offered) != 1 || offered[0].Buyer != "12" {
		t.Fatalf("the second unit back offered %+v, want buyer 12's order", offered)
	}
	// Buyer 11's offered order is persisted, then expires unpaid: its entry ends, and its
	// unit fits nobody (buyer 10 wants 2): it goes back on sale.
	offer11 := reserve.Reservation{Purchase: stock.Purchase{ActivityID: 1, Buyer: "11", Quantity: 1}, OrderID: offered[0].OrderID}
	persist(offer11)
	if offered := giveBack(offer11); len(offered) != 0 {
		t.Errorf("a unit nobody fits was offered: %+v", offered)
	}
	if e := entry(11); e.Status != settle.EntryEnded {
		t.Errorf("the entry of an offered order that came back: %+v, want ended", e)
	}
	if n := left(); n != 1 {
		t.Errorf("%d units on sale, want the 1 no entry fits", n)
	}
	// Buyer 3's unit joins it: buyer 10 gets both, and none is left on sale.
	if offered := giveBack(bought[2]); len(offered) != 1 || offered[0].Buyer != "10" || offered[0].Quantity != 2 {
		t.Fatalf("two units back offered %+v, want buyer 10's order of 2", offered)
	}
	if n := left(); n != 0 {
		t.Errorf("%d units on sale after buyer 10's offer, want 0", n)
	}
	snap, err := s.Snapshot(ctx, 1)
	if err != nil || snap.Users["10"] != 2 || snap.Users["12"] != 1 || snap.Users["11"] != 0 {
		t.Errorf("holdings after the offers: %v, %v", snap.Users, err)
	}
	// After the end, nobody joins.
	if _, _, err := s.JoinWaitlist(ctx, 1, "20", 1, 0, stocktest.T0.Add(time.Hour), false); !errors.Is(err, stock.ErrEnded) {
		t.Errorf("a join at the end: %v, want ErrEnded", err)
	}
}

// An entry whose buyer bought meanwhile, up to the limit, is passed over: the unit goes
// to the next entry that fits within its buyer's limit.
func TestWaitlistOfferWithinTheLimit(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	stocktest.NewVariantSale(t, s, 2, []int64{1, 1}, 1, 0, 1)
	s.SetClock(func() time.Time { return stocktest.T0.Add(time.Minute) })
	r := stocktest.VariantReservation(2, 1, 1, 0)
	if _, err := s.Reserve(ctx, r); err != nil {
		t.Fatal(err)
	}
	in := stocktest.T0.Add(time.Minute)
	for _, u := range []int64{30, 31} {
		if _, _, err := s.JoinWaitlist(ctx, 2, buyer.Of(u), 1, stock.VariantAt(0), in, false); err != nil {
			t.Fatal(err)
		}
	}
	// Buyer 30 buys the other size meanwhile: they hold the limit of 1.
	if _, err := s.Reserve(ctx, stocktest.VariantReservation(2, 30, 1, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, 2, []settle.Settlement{{OrderID: r.OrderID, Buyer: r.Buyer}}); err != nil {
		t.Fatal(err)
	}
	offered, err := s.Return(ctx, 2, settle.Returning{OrderID: r.OrderID, Buyer: r.Buyer, Quantity: 1, Variant: stock.VariantAt(0)})
	if err != nil || len(offered) != 1 || offered[0].Buyer != "31" || offered[0].Variant != stock.VariantAt(0) {
		t.Fatalf("the unit of size 0 back offered %+v, %v; want buyer 31's order of size 0", offered, err)
	}
	if e, _ := s.WaitlistEntry(ctx, 2, "30"); e.Status != settle.EntryWaiting {
		t.Errorf("buyer 30, at the limit, was passed over: %+v, want still waiting", e)
	}
}

// A unit that comes back goes to the first entry it fits however many entries before it
// do not: behind 150 entries of 5 units, the entry of 1 unit gets it, and none goes back
// on open sale.
func TestWaitlistOfferPastUnfitEntries(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	stocktest.NewSale(t, s, 3, 1, 5)
	in := stocktest.T0.Add(time.Minute)
	s.SetClock(func() time.Time { return in })
	r := stocktest.Reservation(3, 1, 1, "", in)
	if _, err := s.Reserve(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, 3, []settle.Settlement{{OrderID: r.OrderID, Buyer: r.Buyer}}); err != nil {
		t.Fatal(err)
	}
	const unfit = 150
	for u := int64(100); u < 100+unfit; u++ {
		if _, _, err := s.JoinWaitlist(ctx, 3, buyer.Of(u), 5, 0, in, false); err != nil {
			t.Fatal(err)
		}
	}
	if e, _, err := s.JoinWaitlist(ctx, 3, "500", 1, 0, in, false); err != nil || e.Position != unfit+1 {
		t.Fatalf("buyer 500 joins behind %d entries: %+v, %v", unfit, e, err)
	}
	offered, err := s.Return(ctx, 3, settle.Returning{OrderID: r.OrderID, Buyer: r.Buyer, Quantity: 1})
	if err != nil || len(offered) != 1 || offered[0].Buyer != "500" {
		t.Fatalf("the unit back offered %+v, %v; want buyer 500's order of 1", offered, err)
	}
	if n, _ := stocktest.VariantsLeft(t, s, 3); n != 0 {
		t.Errorf("%d units on open sale while an entry fitted", n)
	}
	if e, err := s.WaitlistEntry(ctx, 3, "100"); err != nil || e.Status != settle.EntryWaiting || e.Position != 1 {
		t.Errorf("the first unfit entry: %+v, %v; want still waiting, first", e, err)
	}
}

// A buyer's second join, naming another variant, answers the entry they have: its own
// variant and its position in its own variant's line.
func TestWaitlistSecondJoinAnswersTheEntry(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	stocktest.NewVariantSale(t, s, 4, []int64{1, 1}, 2, 0, 1)
	in := stocktest.T0.Add(time.Minute)
	s.SetClock(func() time.Time { return in })
	for i := range 2 {
		if _, err := s.Reserve(ctx, stocktest.VariantReservation(4, int64(1+i), 1, i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []int64{30, 31} {
		if _, _, err := s.JoinWaitlist(ctx, 4, buyer.Of(u), 1, stock.VariantAt(0), in, false); err != nil {
			t.Fatal(err)
		}
	}
	e, created, err := s.JoinWaitlist(ctx, 4, "31", 1, stock.VariantAt(1), in, false)
	if err != nil || created || e.Variant != stock.VariantAt(0) || e.Position != 2 || e.Status != settle.EntryWaiting {
		t.Errorf("buyer 31 joins again naming variant 1: %+v, %v, %v; want their entry of variant 0 at 2", e, created, err)
	}
}

// BenchmarkWaitlistOffer measures a return of one unit whose offer passes over n waiting
// entries that do not fit (each wants 5) before the one that does (1): the script reads
// every entry it passes, so a return costs Redis time in proportion to them.
//
//	go test -run '^$' -bench WaitlistOffer -benchtime 200x ./internal/stock
//
// benchSales numbers BenchmarkWaitlistOffer's sales.
var benchSales atomic.Int64

func BenchmarkWaitlistOffer(b *testing.B) {
	s := stocktest.New(testutil.StartRedis(b).Client(b))
	ctx := context.Background()
	in := stocktest.T0.Add(time.Minute)
	s.SetClock(func() time.Time { return in })
	for _, unfit := range []int{0, 1000, 10000} {
		b.Run(fmt.Sprintf("unfit=%d", unfit), func(b *testing.B) {
			act := 1000 + benchSales.Add(1) // a sale of its own for each run of the function
			if err := s.Load(ctx, stock.Sale{ActivityID: act, Available: 1, Total: 1, Limit: 5, StartsAt: stocktest.T0,
				EndsAt: stocktest.T0.Add(time.Hour), PriceCents: 1999, PayWindow: 15 * time.Minute}); err != nil {
				b.Fatal(err)
			}
			r := stocktest.Reservation(act, 1, 1, "", in)
			if _, err := s.Reserve(ctx, r); err != nil {
				b.Fatal(err)
			}
			back := settle.Returning{OrderID: r.OrderID, Buyer: r.Buyer, Quantity: 1}
			for u := range unfit {
				if _, _, err := s.JoinWaitlist(ctx, act, buyer.Of(int64(1000+u)), 5, 0, in, false); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for n := range b.N {
				// Each unit back goes to a new entry behind the unfit ones; its order comes
				// back in the next round.
				b.StopTimer()
				who := buyer.Of(int64(1_000_000 + n)) // behind every unfit entry
				if _, _, err := s.JoinWaitlist(ctx, act, who, 1, 0, in, false); err != nil {
					b.Fatal(err)
				}
				if err := s.Settle(ctx, act, []settle.Settlement{{OrderID: back.OrderID, Buyer: back.Buyer}}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				offered, err := s.Return(ctx, act, back)
				if err != nil || len(offered) != 1 || offered[0].Buyer != who {
					b.Fatalf("offered %+v, %v; want %s's order", offered, err, who)
				}
				back = settle.Returning{OrderID: offered[0].OrderID, Buyer: who, Quantity: 1}
			}
		})
	}
}

package reserve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/lifecycle"
	"seckill/internal/stock/settle"
	"seckill/internal/testutil"
)

// apart are buyers whose names a naive scheme would mix up: a subject that is another's
// field ("p1", "l1" and "a1" are decimal 1's participations, lock and allowance under a
// bare prefix), one that looks like a key ("~1"), a decimal with a leading zero, a
// subject with a space and the same with the space escaped, subjects that differ in a
// trailing space or in letter case, 21 digits, and a UUID.
var apart = []buyer.ID{"1", "p1", "l1", "a1", "~1", "01", "a b", "a%20b", "a", "a ", "auth0|AbC", "auth0|abc",
	"109876543210987654321", "8f14e45f-ceea-467f-a0e7-5ad1c4b1c0c2"}

func purchaseBy(act int64, who buyer.ID, qty int) Reservation {
	r := purchase(act, 0, qty)
	r.Buyer = who
	r.PerSecond = 1000 // each purchase writes its buyer's allowance field too
	return r
}

// Every buyer's units, participations, lock, allowance, queued orders and
// Idempotency-Keys are its own: each of the apart buyers buys up to the cap on
// participations with the same Idempotency-Key, replays it, and is refused past the cap,
// whatever the others did; a roll-back, a settle and a rebuild from MySQL's figures
// touch the one buyer they name. On one bucket and on four.
func TestBuyersStayApart(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	s := newSide(rdb)
	ctx := context.Background()
	for _, k := range []int{1, 4} {
		t.Run(fmt.Sprintf("buckets=%d", k), func(t *testing.T) {
			act := orderSeq.Add(1)
			sale := stock.Sale{ActivityID: act, Available: 1000, Total: 1000, Limit: 3, ParticipationCap: 2, StartsAt: start,
				EndsAt: start.Add(time.Hour), PriceCents: 100, PayWindow: time.Minute, Buckets: k}
			if err := s.Load(ctx, sale); err != nil {
				t.Fatal(err)
			}
			buy := func(r Reservation) (Reserved, error) {
				t.Helper()
				got, err := s.Reserve(ctx, r)
				if err == nil && !got.Replayed {
					if err := s.ReleaseUserLocks(ctx, r); err != nil {
						t.Fatal(err)
					}
				}
				return got, err
			}
			first, second := map[buyer.ID]Reservation{}, map[buyer.ID]Reservation{}
			for _, who := range apart {
				r := purchaseBy(act, who, 1)
				r.IdempotencyKey = "the-same-key"
				if got, err := buy(r); err != nil || got.Replayed {
					t.Fatalf("%q's first purchase: %+v, %v", who, got, err)
				}
				first[who], second[who] = r, purchaseBy(act, who, 1)
				if _, err := buy(second[who]); err != nil {
					t.Fatalf("%q's second purchase: %v", who, err)
				}
			}
			for _, who := range apart {
				again := purchaseBy(act, who, 1)
				again.IdempotencyKey = "the-same-key"
				if got, err := buy(again); err != nil || !got.Replayed || got.OrderID != first[who].OrderID {
					t.Errorf("%q's replay: %+v, %v; want its own first order %s", who, got, err, first[who].OrderID)
				}
				var detail *stock.DetailError
				if _, err := buy(purchaseBy(act, who, 1)); !errors.As(err, &detail) || !strings.Contains(detail.Detail, "take part 2 times") {
					t.Errorf("%q's third purchase: %v, want refused over the cap of 2 participations", who, err)
				}
			}
			holds := func(when string, want map[buyer.ID]int64) {
				t.Helper()
				snap, err := s.Snapshot(ctx, act)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(snap.Users) != fmt.Sprint(want) {
					t.Errorf("%s: holdings %v, want %v", when, snap.Users, want)
				}
				for who, n := range want {
					qs, err := s.UserQueued(ctx, []int64{act}, who)
					var units int64
					for _, q := range qs {
						if q.Buyer != who {
							t.Errorf("%s: %q's queued orders include %+v", when, who, q)
						}
						units += int64(q.Quantity)
					}
					if err != nil || units > n {
						t.Errorf("%s: %q's queued orders %+v (%v), more than the %d it holds", when, who, qs, err, n)
					}
				}
			}
			want := map[buyer.ID]int64{}
			for _, who := range apart {
				want[who] = 2
			}
			holds("after the purchases", want)

			// A roll-back of "p1"'s second order and a failed settle of "a b"'s give back
			// theirs alone.
			if got, err := s.Rollback(ctx, act, "p1", second["p1"].OrderID, ""); err != nil || got != settle.RolledBack {
				t.Fatalf("roll back p1's second order: %v, %v", got, err)
			}
			if err := s.Settle(ctx, act, []settle.Settlement{{OrderID: first["a b"].OrderID, Buyer: "a b", Failed: true}}); err != nil {
				t.Fatal(err)
			}
			want["p1"], want["a b"] = 1, 1
			holds("after a roll-back and a failed settle", want)
			locks, err := s.UserLocks(ctx, act)
			if err != nil || len(locks) != 0 {
				t.Errorf("locks %v (%v), want none: every purchase's was released", locks, err)
			}

			// A rebuild from MySQL, which has every queued order: each buyer holds what
			// MySQL says, units and participations, and the cap still holds.
			closing := lifecycle.Closing{}
			if k > 1 {
				if closing, err = s.Close(ctx, act, k); err != nil {
					t.Fatal(err)
				}
			}
			from, err := s.RebuildPoint(ctx, act, k)
			if err != nil {
				t.Fatal(err)
			}
			units, parts, held := map[buyer.ID]int64{}, map[buyer.ID]int64{}, int64(0)
			for _, q := range from.Queued {
				units[q.Buyer] += int64(q.Quantity)
				parts[q.Buyer]++
				held += int64(q.Quantity)
			}
			sale.Gen = from.Gen + 1
			if err := s.Rebuild(ctx, from, closing, sale, units, parts, held, from.Queued, nil); err != nil {
				t.Fatal(err)
			}
			holds("after a rebuild", want)
			for _, who := range apart {
				var detail *stock.DetailError
				_, err := buy(purchaseBy(act, who, 1))
				switch {
				case want[who] == 2 && (!errors.As(err, &detail) || !strings.Contains(detail.Detail, "take part 2 times")):
					t.Errorf("%q after the rebuild: %v, want refused over the cap", who, err)
				case want[who] == 1 && err != nil:
					t.Errorf("%q after the rebuild, holding one order: %v, want a second", who, err)
				}
			}
		})
	}
}

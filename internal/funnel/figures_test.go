package funnel

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"seckill/internal/apitime"
	"seckill/internal/stock"
	"seckill/internal/store"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
func ptr[T any](v T) *T   { return &v }

// A sale of 5 units, every kind of order in it, summed by hand.
func TestOrdersOf(t *testing.T) {
	facts := []store.OrderFact{
		// paid after 2 s, then refunded with restock: created, paid, refunded; 1 unit back
		{ID: "a", Quantity: 1, Status: store.StatusRefunded, CreatedAt: at(100), WindowStartsAt: ptr(at(100)),
			ExpiresAt: at(60_100), PaidAt: ptr(at(2100)), RefundedAt: ptr(at(9000)), Restock: ptr(true), PersistedAt: at(110)},
		// bought in the early window, paid after 4 s
		{ID: "b", Quantity: 2, Status: store.StatusPaid, EarlyAccess: true, CreatedAt: at(200), WindowStartsAt: ptr(at(200)),
			ExpiresAt: at(60_200), PaidAt: ptr(at(4200)), PersistedAt: at(210)},
		// cancelled by its buyer: 1 unit back at 3 s
		{ID: "c", Quantity: 1, Status: store.StatusCancelled, CreatedAt: at(300), WindowStartsAt: ptr(at(300)),
			ExpiresAt: at(60_300), CancelledAt: ptr(at(3000)), PersistedAt: at(310)},
		// its pay window ran out: cancelled and expired
		{ID: "d", Quantity: 1, Status: store.StatusCancelled, CreatedAt: at(400), WindowStartsAt: ptr(at(400)),
			ExpiresAt: at(60_400), CancelledAt: ptr(at(60_500)), PersistedAt: at(410)},
		// the waitlist's order of c's unit, still created
		{ID: "e", Quantity: 1, Status: store.StatusCreated, Offered: true, CreatedAt: at(3000), WindowStartsAt: ptr(at(3000)),
			ExpiresAt: at(63_000), PersistedAt: at(3010)},
		// refused by MySQL: failed, its unit back
		{ID: "f", Quantity: 1, Status: store.StatusFailed, CreatedAt: at(500), ExpiresAt: at(60_500), PersistedAt: at(520)},
		// refunded without restock: off sale
		{ID: "g", Quantity: 1, Status: store.StatusRefunded, CreatedAt: at(600), WindowStartsAt: ptr(at(600)),
			ExpiresAt: at(60_600), PaidAt: ptr(at(1600)), RefundedAt: ptr(at(9500)), Restock: ptr(false), PersistedAt: at(610)},
	}
	queued := []stock.QueuedOrder{
		{OrderID: "h", Quantity: 1, CreatedAt: at(700), EarlyAccess: true}, // not in MySQL yet, early
		{OrderID: "b", Quantity: 2, CreatedAt: at(200), EarlyAccess: true}, // written, not yet settled: counted once
		{OrderID: "i", Quantity: 1, CreatedAt: at(50), Offered: true},      // the waitlist's, queued
	}
	var f Figures
	ordersOf(&f, facts, queued, 5, at(0))
	want := Figures{
		Purchases: Purchases{Accepted: 7, AcceptedEarly: 2}, // a b c d f g h; early: b h
		Orders: Orders{Created: 6, Paid: 3, Cancelled: 2, Expired: 1, Failed: 1, Refunded: 2, Offered: 2,
			EarlyAccess: 2},
		// b (2), e (1), h (1), i (1) held
		Units:           Units{Sold: 5, Returned: 4, ToWaitlist: 2},
		FirstPurchaseAt: ptr(apitime.Of(at(100))),
		// held: i 50 (1), a 100 (2), b 200 (4), c 300 (5): sold out at 300 ms
		SoldOutAt:      ptr(apitime.Of(at(300))),
		SellOutSeconds: ptr(0.3),
		// pays: g 1 s, a 2 s, b 4 s
		PaySeconds: &PaySeconds{P50: 2, P90: 4, P99: 4},
	}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Errorf("figures (-want +got):\n%s", diff)
	}
}

func TestOrdersOfGroupSeats(t *testing.T) {
	facts := []store.OrderFact{
		// a seat of a group that failed: never payable
		{ID: "a", Quantity: 1, Status: store.StatusCancelled, Group: true, CreatedAt: at(0), ExpiresAt: at(1000),
			CancelledAt: ptr(at(1500)), PersistedAt: at(10)},
		// a seat still waiting for its group
		{ID: "b", Quantity: 1, Status: store.StatusGrouping, Group: true, CreatedAt: at(100), ExpiresAt: at(1000), PersistedAt: at(110)},
		// a seat of a group that filled, then expired unpaid
		{ID: "c", Quantity: 1, Status: store.StatusCancelled, Group: true, CreatedAt: at(200), WindowStartsAt: ptr(at(900)),
			ExpiresAt: at(5000), CancelledAt: ptr(at(5001)), PersistedAt: at(210)},
	}
	var f Figures
	ordersOf(&f, facts, nil, 10, at(0))
	want := Orders{Created: 1, Cancelled: 2, Expired: 1}
	if diff := cmp.Diff(want, f.Orders); diff != "" {
		t.Errorf("orders (-want +got):\n%s", diff)
	}
	if f.SoldOutAt != nil || f.PaySeconds != nil || f.Units != (Units{Sold: 1, Returned: 2}) {
		t.Errorf("sold out %v, pay %v, units %+v: want none, none, 1 sold and 2 back", f.SoldOutAt, f.PaySeconds, f.Units)
	}
}

func TestLineOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		waits map[int64]int64
		want  *WaitSeconds
		dist  map[float64]int64 // range start -> buyers
	}{
		{"none admitted", nil, nil, nil},
		{"one", map[int64]int64{1500: 1}, &WaitSeconds{P50: 1.5, P90: 1.5, P99: 1.5, Max: 1.5}, map[float64]int64{1: 1}},
		// 100 buyers: 50 at 0.2 s, 40 at 3 s, 9 at 10 s (a range's lower bound), 1 at 2 h
		{"a lottery", map[int64]int64{200: 50, 3000: 40, 10_000: 9, 7_200_000: 1},
			&WaitSeconds{P50: 0.2, P90: 3, P99: 10, Max: 7200}, map[float64]int64{0: 50, 2: 40, 10: 9, 3600: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := lineOf(100, 80, 99, 3, tc.waits)
			if l.Joined != 100 || l.JoinedBeforeStart != 80 || l.Admitted != 99 || l.PassesExpired != 3 {
				t.Errorf("counts %+v", l)
			}
			if diff := cmp.Diff(tc.want, l.WaitSeconds); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			for _, r := range l.WaitDistribution {
				if r.Buyers != tc.dist[r.FromSeconds] {
					t.Errorf("range from %g s: %d buyers, want %d", r.FromSeconds, r.Buyers, tc.dist[r.FromSeconds])
				}
			}
			if last := l.WaitDistribution[len(l.WaitDistribution)-1]; last.ToSeconds != nil {
				t.Errorf("the last range ends at %v, want open", *last.ToSeconds)
			}
		})
	}
}

func TestRows(t *testing.T) {
	f := Figures{ActivityID: 7, AsOf: apitime.Of(at(0)), Purchases: Purchases{Accepted: 3, AcceptedEarly: 1,
		Refused: map[string]int64{"sold_out": 12, "limit_exceeded": 2}}, Orders: Orders{Created: 3, Paid: 1, EarlyAccess: 1}}
	var got []string
	for _, r := range f.Rows() {
		got = append(got, r[0]+","+r[1])
	}
	want := []string{"activity_id,7", "as_of,2026-12-01T12:00:00.000Z", "line,", "purchases.accepted,3",
		"purchases.accepted_early,1", "purchases.refused.limit_exceeded,2", "purchases.refused.sold_out,12",
		"orders.created,3", "orders.paid,1", "orders.cancelled,0", "orders.expired,0", "orders.failed,0",
		"orders.refunded,0", "orders.offered,0", "orders.early_access,1", "units.sold,0", "units.returned,0",
		"units.to_waitlist,0", "pay_seconds,"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	f.Line = lineOf(1, 1, 1, 0, map[int64]int64{2500: 1})
	f.PaySeconds = &PaySeconds{P50: 1}
	rows := f.Rows()
	var all []string
	for _, r := range rows {
		all = append(all, r[0])
	}
	for _, name := range []string{"line.joined", "line.wait_seconds.p50", "line.wait_seconds.max", "pay_seconds.p99"} {
		if !slices.Contains(all, name) {
			t.Errorf("no row %s among %v", name, all)
		}
	}
	for _, name := range []string{"line", "pay_seconds"} {
		if slices.Contains(all, name) {
			t.Errorf("a row %s, null, beside its figures: %v", name, all)
		}
	}
	f.Line = lineOf(1, 1, 0, 0, map[int64]int64{}) // nobody admitted yet: no waits
	if rows := f.Rows(); !slices.Contains(rows, [2]string{"line.wait_seconds", ""}) {
		t.Errorf("no row line.wait_seconds, null, before any admission: %v", rows)
	}
}

package funnel

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"seckill/internal/apitime"
	"seckill/internal/stock"
	"seckill/internal/store"
)

// Figures are a sale's funnel, as GET /api/v1/admin/activities/{id}/funnel answers it.
type Figures struct {
	ActivityID int64        `json:"activity_id"`
	AsOf       apitime.Time `json:"as_of"`
	// Line is nil for a sale without a waiting room.
	Line      *Line     `json:"line"`
	Purchases Purchases `json:"purchases"`
	Orders    Orders    `json:"orders"`
	Units     Units     `json:"units"`
	// FirstPurchaseAt is when the first purchase was taken; SoldOutAt when the sale
	// first had no unit left (against its stock as it is now), and SellOutSeconds the
	// time from its start to then (0 when it sold out before its start, in an early
	// window). Absent before they happen.
	FirstPurchaseAt *apitime.Time `json:"first_purchase_at,omitempty"`
	SoldOutAt       *apitime.Time `json:"sold_out_at,omitempty"`
	SellOutSeconds  *float64      `json:"sell_out_seconds,omitempty"`
	// PaySeconds is the time from created (the pay window's start) to paid; nil before
	// any payment.
	PaySeconds *PaySeconds `json:"pay_seconds"`
}

// Line is what the waiting room did.
type Line struct {
	Joined            int64 `json:"joined"`
	JoinedBeforeStart int64 `json:"joined_before_start"`
	Admitted          int64 `json:"admitted"`
	PassesExpired     int64 `json:"passes_expired"`
	// WaitSeconds are the waits from the join (or the start, for an earlier join; the
	// early window's opening for a code holder's) to the admission, of every admitted
	// buyer; nil before any admission.
	WaitSeconds *WaitSeconds `json:"wait_seconds"`
	// WaitDistribution counts the admitted buyers by wait, in the ranges of
	// waitRanges, for the admin's chart.
	WaitDistribution []WaitRange `json:"wait_distribution"`
}

// WaitSeconds are percentiles of the waits (nearest rank: p50 is the least wait that
// at least half the buyers waited no longer than) and the longest.
type WaitSeconds struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// PaySeconds are percentiles (nearest rank) of the time from created to paid.
type PaySeconds struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// WaitRange is how many admitted buyers waited from FromSeconds up to (not including)
// ToSeconds; ToSeconds is nil for the last range.
type WaitRange struct {
	FromSeconds float64  `json:"from_seconds"`
	ToSeconds   *float64 `json:"to_seconds"`
	Buyers      int64    `json:"buyers"`
}

// waitRanges are the bounds (s) of the wait distribution's ranges.
var waitRanges = []float64{1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// Purchases are the purchase requests of the sale: those answered 202 (a replay
// counted once: the orders its buyers made) and those refused 4xx, by error code.
type Purchases struct {
	Accepted int64 `json:"accepted"`
	// AcceptedEarly are those of Accepted bought in the sale's early window, with an
	// access code.
	AcceptedEarly int64            `json:"accepted_early"`
	Refused       map[string]int64 `json:"refused"`
}

// Orders count the orders that ever reached each status: a refunded order counts in
// created, paid and refunded; Expired counts those of the cancelled ones whose pay
// window ran out; Offered the orders the waitlist made.
type Orders struct {
	Created   int64 `json:"created"`
	Paid      int64 `json:"paid"`
	Cancelled int64 `json:"cancelled"`
	Expired   int64 `json:"expired"`
	Failed    int64 `json:"failed"`
	Refunded  int64 `json:"refunded"`
	Offered   int64 `json:"offered"`
	// EarlyAccess are the orders bought in the early window (queued ones too).
	EarlyAccess int64 `json:"early_access"`
}

// Units count the sale's units: Sold those in orders queued, grouping, created or paid
// now (as the stats count them); Returned those that came back (a cancel, an expiry, a
// failure, a refund with restock); ToWaitlist those of them the waitlist took.
type Units struct {
	Sold       int64 `json:"sold"`
	Returned   int64 `json:"returned"`
	ToWaitlist int64 `json:"to_waitlist"`
}

// ordersOf sums a sale's orders: those in MySQL (facts) and those still queued in
// Redis (an order in both, between its write and its settle, counts once), against
// the sale's stock and start. It fills Purchases.Accepted, Orders, Units, the first
// purchase, the sell-out and the pay times of f.
func ordersOf(f *Figures, facts []store.OrderFact, queued []stock.QueuedOrder, stockTotal int64, startsAt time.Time) {
	type change struct {
		at    time.Time
		units int64 // taken (+) or back (-)
	}
	var changes []change
	var pays []int64 // ms
	stored := make(map[string]bool, len(facts))
	// taken counts an order that took units, in MySQL or queued: a purchase or a
	// waitlist's offer, bought in the early window or not.
	taken := func(at time.Time, q int64, offered, early bool) {
		changes = append(changes, change{at, q})
		if offered {
			f.Orders.Offered++
			f.Units.ToWaitlist += q
		} else {
			f.Purchases.Accepted++
			if f.FirstPurchaseAt == nil || at.Before(f.FirstPurchaseAt.Time) {
				t := apitime.Of(at)
				f.FirstPurchaseAt = &t
			}
		}
		if early {
			f.Purchases.AcceptedEarly++
			f.Orders.EarlyAccess++
		}
	}
	for _, o := range facts {
		stored[o.ID] = true
		q := int64(o.Quantity)
		taken(o.CreatedAt, q, o.Offered, o.EarlyAccess)
		// created: every order that became payable (a group's seat only once its group
		// filled); a failed order never was
		payable := o.Status != store.StatusFailed && o.Status != store.StatusGrouping &&
			(!o.Group || o.WindowStartsAt != nil || o.Status != store.StatusCancelled)
		if payable {
			f.Orders.Created++
		}
		if o.PaidAt != nil {
			f.Orders.Paid++
			from := o.CreatedAt
			if o.WindowStartsAt != nil {
				from = *o.WindowStartsAt
			}
			pays = append(pays, o.PaidAt.Sub(from).Milliseconds())
		}
		switch o.Status {
		case store.StatusGrouping, store.StatusCreated, store.StatusPaid:
			f.Units.Sold += q
		case store.StatusCancelled:
			f.Orders.Cancelled++
			if payable && o.CancelledAt != nil && !o.CancelledAt.Before(o.ExpiresAt) {
				f.Orders.Expired++
			}
			f.Units.Returned += q
			if o.CancelledAt != nil {
				changes = append(changes, change{*o.CancelledAt, -q})
			}
		case store.StatusFailed:
			f.Orders.Failed++
			f.Units.Returned += q
			changes = append(changes, change{o.PersistedAt, -q})
		case store.StatusRefunded:
			f.Orders.Refunded++
			if o.Restock != nil && *o.Restock {
				f.Units.Returned += q
				if o.RefundedAt != nil {
					changes = append(changes, change{*o.RefundedAt, -q})
				}
			}
		}
	}
	for _, o := range queued {
		if stored[o.OrderID] {
			continue
		}
		q := int64(o.Quantity)
		taken(o.CreatedAt, q, o.Offered, o.EarlyAccess)
		f.Units.Sold += q
	}

	// Sold out: the first instant the units held reach the stock; a return and a
	// purchase at the same instant, the return first.
	slices.SortFunc(changes, func(a, b change) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.units, b.units)
	})
	var held int64
	for _, c := range changes {
		if held += c.units; held >= stockTotal && stockTotal > 0 {
			at := apitime.Of(c.at)
			f.SoldOutAt = &at
			s := max(0, seconds(c.at.Sub(startsAt).Milliseconds()))
			f.SellOutSeconds = &s
			break
		}
	}
	if len(pays) > 0 {
		slices.Sort(pays)
		f.PaySeconds = &PaySeconds{P50: seconds(rank(pays, 0.50)), P90: seconds(rank(pays, 0.90)), P99: seconds(rank(pays, 0.99))}
	}
}

// lineOf is the funnel's line of a line's counts (internal/line.Counts or the kept row).
func lineOf(joined, early, admitted, expired int64, waits map[int64]int64) *Line {
	l := &Line{Joined: joined, JoinedBeforeStart: early, Admitted: admitted, PassesExpired: expired,
		WaitDistribution: make([]WaitRange, len(waitRanges)+1)}
	from := 0.0
	for i := range l.WaitDistribution {
		l.WaitDistribution[i].FromSeconds = from
		if i < len(waitRanges) {
			to := waitRanges[i]
			l.WaitDistribution[i].ToSeconds = &to
			from = to
		}
	}
	if len(waits) == 0 {
		return l
	}
	ms := make([]int64, 0, len(waits))
	var n int64
	for w, c := range waits {
		ms = append(ms, w)
		n += c
		i, _ := slices.BinarySearch(waitRanges, seconds(w))
		if i < len(waitRanges) && waitRanges[i] == seconds(w) {
			i++ // a range holds its lower bound, not its upper
		}
		l.WaitDistribution[i].Buyers += c
	}
	slices.Sort(ms)
	at := func(p float64) float64 { // nearest rank over the buyers
		need := int64(math.Ceil(p * float64(n)))
		var seen int64
		for _, w := range ms {
			if seen += waits[w]; seen >= need {
				return seconds(w)
			}
		}
		return seconds(ms[len(ms)-1])
	}
	l.WaitSeconds = &WaitSeconds{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: seconds(ms[len(ms)-1])}
	return l
}

// rank is the nearest-rank percentile p of sorted values.
func rank(sorted []int64, p float64) int64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// seconds is ms in seconds.
func seconds(ms int64) float64 { return float64(ms) / 1000 }

// Rows are the figures as the CSV's rows (figure, value), every figure once, in the
// body's order: a null one (the line of a sale without one, its waits before any
// admission, the pay times before any payment) with an empty value, as the JSON has it;
// those the JSON leaves out (first_purchase_at, sold_out_at, sell_out_seconds before
// they happen) have no row.
func (f Figures) Rows() [][2]string {
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	s := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	rows := [][2]string{{"activity_id", n(f.ActivityID)}, {"as_of", f.AsOf.Format(apitime.Layout)}}
	if l := f.Line; l == nil {
		rows = append(rows, [2]string{"line", ""})
	} else {
		rows = append(rows, [][2]string{{"line.joined", n(l.Joined)}, {"line.joined_before_start", n(l.JoinedBeforeStart)},
			{"line.admitted", n(l.Admitted)}, {"line.passes_expired", n(l.PassesExpired)}}...)
		if w := l.WaitSeconds; w != nil {
			rows = append(rows, [][2]string{{"line.wait_seconds.p50", s(w.P50)}, {"line.wait_seconds.p90", s(w.P90)},
				{"line.wait_seconds.p99", s(w.P99)}, {"line.wait_seconds.max", s(w.Max)}}...)
		} else {
			rows = append(rows, [2]string{"line.wait_seconds", ""})
		}
	}
	rows = append(rows, [2]string{"purchases.accepted", n(f.Purchases.Accepted)},
		[2]string{"purchases.accepted_early", n(f.Purchases.AcceptedEarly)})
	for _, code := range slices.Sorted(maps.Keys(f.Purchases.Refused)) {
		rows = append(rows, [2]string{"purchases.refused." + code, n(f.Purchases.Refused[code])})
	}
	o, u := f.Orders, f.Units
	rows = append(rows, [][2]string{{"orders.created", n(o.Created)}, {"orders.paid", n(o.Paid)},
		{"orders.cancelled", n(o.Cancelled)}, {"orders.expired", n(o.Expired)}, {"orders.failed", n(o.Failed)},
		{"orders.refunded", n(o.Refunded)}, {"orders.offered", n(o.Offered)}, {"orders.early_access", n(o.EarlyAccess)},
		{"units.sold", n(u.Sold)}, {"units.returned", n(u.Returned)}, {"units.to_waitlist", n(u.ToWaitlist)}}...)
	if f.FirstPurchaseAt != nil {
		rows = append(rows, [2]string{"first_purchase_at", f.FirstPurchaseAt.Format(apitime.Layout)})
	}
	if f.SoldOutAt != nil {
		rows = append(rows, [2]string{"sold_out_at", f.SoldOutAt.Format(apitime.Layout)},
			[2]string{"sell_out_seconds", s(*f.SellOutSeconds)})
	}
	if p := f.PaySeconds; p != nil {
		rows = append(rows, [][2]string{{"pay_seconds.p50", s(p.P50)}, {"pay_seconds.p90", s(p.P90)}, {"pay_seconds.p99", s(p.P99)}}...)
	} else {
		rows = append(rows, [2]string{"pay_seconds", ""})
	}
	return rows
}

package reserve_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/codes"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// earlySale loads sale 1 of units, limit per buyer, from t0 for an hour, open early at
// window to the holders of codes.
func earlySale(t *testing.T, s *stocktest.Side, units int64, limit int, window time.Time, given ...string) {
	t.Helper()
	err := s.Load(context.Background(), stock.Sale{ActivityID: 1, Available: units, Total: units, Limit: limit,
		StartsAt: t0, EndsAt: t0.Add(time.Hour), PriceCents: 100, PayWindow: time.Minute, EarlyAt: window})
	if err != nil {
		t.Fatal(err)
	}
	if err := codes.New(s.Stock).Put(context.Background(), 1, given); err != nil {
		t.Fatal(err)
	}
}

// t0 is when the tests' sales start.
var t0 = stocktest.T0

// A sale that starts at t0 with an early window from t0 - 10 min, 6 units, limit 2, and
// codes CODE-0 to CODE-9: in the window a purchase with a valid code is one of the start,
// marked early, and its code becomes the buyer's; anything else is refused and takes no
// unit (a valid code presented with a purchase refused for another reason, a quantity over
// the limit here, is the presenter's all the same). The limit counts the window's
// purchases and the start's together, and from the start a code changes nothing.
func TestEarlyAccessReserve(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	s := stocktest.New(rdb)
	ctx := context.Background()
	window := t0.Add(-10 * time.Minute)
	codes := make([]string, 10)
	for i := range codes {
		codes[i] = fmt.Sprintf("CODE-%d", i)
	}
	earlySale(t, s, 6, 2, window, codes...)
	in := window.Add(time.Minute)
	buy := func(user int64, qty int, code string, now time.Time) reserve.Reservation {
		r := stocktest.Reservation(1, user, qty, "", now)
		r.AccessCode = code
		return r
	}
	tests := []struct {
		name  string
		r     reserve.Reservation
		want  error
		early bool
		left  int64
	}{
		{"before the window, with a code", buy(10, 1, codes[0], window.Add(-time.Millisecond)), stock.ErrNotStarted, false, 0},
		{"in the window, without a code", buy(10, 1, "", in), stock.ErrNotStarted, false, 0},
		{"in the window, a code never issued", buy(10, 1, "CODE-X", in), stock.ErrCodeInvalid, false, 0},
		{"in the window, with code 0", buy(10, 1, codes[0], in), nil, true, 5},
		{"another buyer with code 0", buy(11, 1, codes[0], in), stock.ErrCodeTaken, false, 0},
		{"code 0's owner again, to the limit", buy(10, 1, codes[0], in), nil, true, 4},
		{"code 0's owner past the limit", buy(10, 1, codes[0], in), stock.ErrLimitExceeded, false, 0},
		{"a code presented with a quantity over the limit", buy(12, 3, codes[1], in), stock.ErrQuantityOverLimit, false, 0},
		{"code 1, owned by the buyer refused just before", buy(11, 1, codes[1], in), stock.ErrCodeTaken, false, 0},
		{"code 1's owner", buy(12, 2, codes[1], in), nil, true, 2},
		{"at the start, without a code", buy(13, 1, "", t0), nil, false, 1},
		{"at the start, a code never issued", buy(14, 1, "CODE-X", t0), nil, false, 0},
		{"at the start, code 0 by another buyer", buy(11, 1, codes[0], t0), stock.ErrSoldOut, false, 0},
	}
	for _, tc := range tests {
		got, err := s.Reserve(ctx, tc.r)
		switch {
		case !errors.Is(err, tc.want):
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		case err == nil && (got.EarlyAccess != tc.early || got.Order.EarlyAccess != tc.early || got.Available != tc.left):
			t.Errorf("%s: early %v (order %v), %d left; want early %v, %d left", tc.name, got.EarlyAccess,
				got.Order.EarlyAccess, got.Available, tc.early, tc.left)
		case err == nil:
			q, qerr := s.Queued(ctx, 1, tc.r.OrderID)
			if qerr != nil || q.EarlyAccess != tc.early {
				t.Errorf("%s: the queued order %+v, %v; want early %v", tc.name, q, qerr, tc.early)
			}
			again, err := s.Reserve(ctx, tc.r) // the same call again (its reply lost): the same answer
			if err != nil || again.EarlyAccess != tc.early {
				t.Errorf("%s, run again: early %v, %v; want %v", tc.name, again.EarlyAccess, err, tc.early)
			}
		}
		if err == nil {
			if err := s.ReleaseUserLocks(ctx, tc.r); err != nil {
				t.Fatal(err)
			}
		}
	}
	owners, err := rdb.HGetAll(ctx, stock.CodesKey(stock.One(1))).Result()
	if err != nil {
		t.Fatal(err)
	}
	for code, owner := range owners {
		switch code {
		case codes[0], codes[1]:
			if owner == "" {
				t.Errorf("%s is free, want owned", code)
			}
		default:
			if owner != "" {
				t.Errorf("%s is owned (%q): nothing took it", code, owner)
			}
		}
	}
	if who := strings.Fields(owners[codes[0]])[0]; who != "10" {
		t.Errorf("code 0 is %s's, want 10's", who)
	}
}

// Buyers who share a code race for it in the window, in many calls at once: one buyer
// owns it and buys, the others are refused access_code_taken, and the units taken are
// the owner's alone.
func TestSharedCodeRace(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	s := stocktest.New(rdb)
	ctx := context.Background()
	earlySale(t, s, 100, 1, t0.Add(-time.Hour), "SHARED-1", "SHARED-2")
	var mu sync.Mutex
	bought := map[string][]buyer.ID{}
	var wg sync.WaitGroup
	for u := int64(1); u <= 60; u++ {
		wg.Go(func() {
			code := []string{"SHARED-1", "SHARED-2"}[u%2]
			r := stocktest.Reservation(1, u, 1, "", t0.Add(-time.Minute))
			r.AccessCode = code
			_, err := s.Reserve(ctx, r)
			switch {
			case err == nil:
				mu.Lock()
				bought[code] = append(bought[code], r.Buyer)
				mu.Unlock()
			case !errors.Is(err, stock.ErrCodeTaken):
				t.Errorf("buyer %d with %s: %v, want bought or taken", u, code, err)
			}
		})
	}
	wg.Wait()
	for _, code := range []string{"SHARED-1", "SHARED-2"} {
		if len(bought[code]) != 1 {
			t.Errorf("%s bought for %v, want exactly one buyer", code, bought[code])
		}
	}
	if sale, err := s.Read(ctx, []int64{1}); err != nil || sale[1].Available != 98 {
		t.Errorf("units left %d, %v; want 98", sale[1].Available, err)
	}
}

// The last units sold in the window set no sold-out flag: a purchase without a code in
// the window is refused as not started, by the script, not as sold out by the flag; from
// the start the flag answers as always.
func TestEarlySoldOutSetsNoFlag(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	s := stocktest.New(rdb)
	ctx := context.Background()
	earlySale(t, s, 1, 1, t0.Add(-time.Hour), "ONLY", "LATE")
	in := t0.Add(-time.Minute)
	r := stocktest.Reservation(1, 1, 1, "", in)
	r.AccessCode = "ONLY"
	if _, err := s.Reserve(ctx, r); err != nil {
		t.Fatal(err)
	}
	late := stocktest.Reservation(1, 2, 1, "", in)
	late.AccessCode = "LATE"
	if _, err := s.Reserve(ctx, late); !errors.Is(err, stock.ErrSoldOut) || reserve.AnsweredInProcess(err) {
		t.Fatalf("a code holder after the last unit: %v, want sold out from the script", err)
	}
	if _, err := s.Reserve(ctx, stocktest.Reservation(1, 3, 1, "", in)); !errors.Is(err, stock.ErrNotStarted) {
		t.Errorf("no code in the window, the units gone: %v, want not started", err)
	}
	if _, err := s.Reserve(ctx, stocktest.Reservation(1, 4, 1, "", t0)); !errors.Is(err, stock.ErrSoldOut) {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, stocktest.Reservation(1, 5, 1, "", t0)); !reserve.AnsweredInProcess(err) {
		t.Errorf("after the start: %v, want the flag's answer", err)
	}
}

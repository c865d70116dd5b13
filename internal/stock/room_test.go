package stock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"seckill/internal/stock"
	"seckill/internal/testutil"
)

// The sale's window is judged by Redis' clock: a caller whose own clock runs an hour
// ahead (or behind) neither buys before the start nor after the end.
func TestReserveJudgesTheWindowByRedisClock(t *testing.T) {
	s := stock.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	now := time.Now()
	load := func(id int64, start, end time.Time) {
		if err := s.Load(ctx, stock.Sale{ActivityID: id, Available: 5, Total: 5, Limit: 5, StartsAt: start,
			EndsAt: end, PriceCents: 1, PayWindow: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	load(1, now.Add(time.Minute), now.Add(2*time.Hour)) // starts in a minute
	load(2, now.Add(-2*time.Hour), now.Add(-time.Minute))
	load(3, now.Add(-time.Minute), now.Add(time.Hour))
	for _, c := range []struct {
		name string
		act  int64
		skew time.Duration
		want error
	}{
		{"clock an hour ahead, before the start", 1, time.Hour, stock.ErrNotStarted},
		{"clock an hour behind, after the end", 2, -time.Hour, stock.ErrEnded},
		{"clock two hours behind, during the sale", 3, -2 * time.Hour, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := reservation(c.act, 10, 1, "", time.Now().Add(c.skew))
			r.RedisClock = true
			_, err := s.Reserve(ctx, r)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

// A waiting-room sale sells only to a buyer whose pass has not expired (by the same
// clock), takes nothing otherwise, and counts a pass holder's first purchase as a used
// pass; a sale whose room is turned off sells without one.
func TestReserveNeedsAPassInAWaitingRoom(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	s := stock.New(rdb)
	ctx := context.Background()
	newSale(t, s, 1, 5, 2)
	room := stock.Room{On: true, AdmitPerSecond: 10, PassTTL: time.Minute, Prequeue: time.Minute, ChallengeCost: 1000}
	if err := s.SetRoom(ctx, 1, room); err != nil {
		t.Fatal(err)
	}
	in := t0.Add(time.Minute)
	withPass := func(user int64, expires time.Time) stock.Reservation {
		r := reservation(1, user, 1, "", in)
		r.PassExpires = expires
		return r
	}
	steps := []struct {
		name  string
		r     stock.Reservation
		want  error
		avail int64
	}{
		{"no pass", withPass(10, time.Time{}), stock.ErrNotAdmitted, 5},
		{"expired pass", withPass(10, in), stock.ErrNotAdmitted, 5},
		{"valid pass", withPass(10, in.Add(time.Second)), nil, 4},
		{"valid pass, second purchase", withPass(10, in.Add(time.Second)), nil, 3},
		{"another holder", withPass(11, in.Add(time.Minute)), nil, 2},
	}
	for _, st := range steps {
		time.Sleep(2 * time.Millisecond) // the previous step's 1 ms user lock
		_, err := s.Reserve(ctx, st.r)
		if !errors.Is(err, st.want) {
			t.Fatalf("%s: err = %v, want %v", st.name, err, st.want)
		}
		sales, err := s.Sales(ctx, []int64{1})
		if err != nil {
			t.Fatal(err)
		}
		if got := sales[1].Available; got != st.avail {
			t.Errorf("%s: %d units left, want %d", st.name, got, st.avail)
		}
	}
	if used, _ := rdb.HGet(ctx, stock.SaleKey(1), "rused").Int(); used != 2 {
		t.Errorf("passes used = %d, want 2 (two holders, one of them twice)", used)
	}
	room.On = false
	if err := s.SetRoom(ctx, 1, room); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := s.Reserve(ctx, reservation(1, 12, 1, "", in)); err != nil {
		t.Errorf("room off, no pass: %v", err)
	}
}

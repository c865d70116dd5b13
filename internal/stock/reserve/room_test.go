package reserve_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"seckill/internal/stock"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// The sale's window is judged by Redis' clock: a caller whose own clock runs an hour
// ahead (or behind) neither buys before the start nor after the end.
func TestReserveJudgesTheWindowByRedisClock(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
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
			r := stocktest.Reservation(c.act, 10, 1, "", time.Now().Add(c.skew))
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
	s := stocktest.New(rdb)
	ctx := context.Background()
	stocktest.NewSale(t, s, 1, 5, 2)
	room := stock.Room{On: true, AdmitPerSecond: 10, PassTTL: time.Minute, Prequeue: time.Minute, ChallengeCost: 1000}
	if err := s.SetRoom(ctx, 1, room); err != nil {
		t.Fatal(err)
	}
	in := stocktest.T0.Add(time.Minute)
	withPass := func(user int64, expires time.Time) reserve.Reservation {
		r := stocktest.Reservation(1, user, 1, "", in)
		r.PassExpires = expires
		return r
	}
	steps := []struct {
		name  string
		r     reserve.Reservation
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
		// The previous step's 1 ms user lock runs out (a lease, by Redis' clock).
		time.Sleep(2 * time.Millisecond)
		_, err := s.Reserve(ctx, st.r)
		if !errors.Is(err, st.want) {
			t.Fatalf("%s: err = %v, want %v", st.name, err, st.want)
		}
		sales, err := s.Read(ctx, []int64{1})
		if err != nil {
			t.Fatal(err)
		}
		if got := sales[1].Available; got != st.avail {
			t.Errorf("%s: %d units left, want %d", st.name, got, st.avail)
		}
	}
	if used, _ := rdb.HGet(ctx, stock.SaleKey(stock.One(1)), "rused").Int(); used != 2 {
		t.Errorf("passes used = %d, want 2 (two holders, one of them twice)", used)
	}
	room.On = false
	if err := s.SetRoom(ctx, 1, room); err != nil {
		t.Fatal(err)
	}
	// The previous purchase's 1 ms user lock runs out (a lease, by Redis' clock).
	time.Sleep(2 * time.Millisecond)
	if _, err := s.Reserve(ctx, stocktest.Reservation(1, 12, 1, "", in)); err != nil {
		t.Errorf("room off, no pass: %v", err)
	}
}

// Once a waiting-room sale is sold out, this process's flag answers a purchase without
// a pass as the script would, not admitted, and one with a pass sold out, both without
// Redis; a sale without a room answers sold out either way. The flag is set by the
// last unit's purchase and by a purchase that finds none left.
func TestSoldOutFlagOfAWaitingRoom(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	s := stocktest.New(rdb)
	ctx := context.Background()
	room := stock.Room{On: true, AdmitPerSecond: 10, PassTTL: time.Minute, Prequeue: time.Minute, ChallengeCost: 1000}
	stocktest.NewSale(t, s, 1, 1, 2) // a room, one unit: the last unit's purchase sets the flag
	stocktest.NewSale(t, s, 2, 1, 2) // a room, its unit gone before: "none left" sets it
	stocktest.NewSale(t, s, 3, 1, 2) // no room
	for _, id := range []int64{1, 2} {
		if err := s.SetRoom(ctx, id, room); err != nil {
			t.Fatal(err)
		}
	}
	in := stocktest.T0.Add(time.Minute)
	buy := func(act, user int64, pass bool) error {
		r := stocktest.Reservation(act, user, 1, "", in)
		if pass {
			r.PassExpires = in.Add(time.Minute)
		}
		// A previous purchase's 1 ms user lock runs out (a lease, by Redis' clock).
		time.Sleep(2 * time.Millisecond)
		_, err := s.Reserve(ctx, r)
		return err
	}
	// Another process takes sale 2's unit: this one has no flag for it yet.
	r := stocktest.Reservation(2, 9, 1, "", in)
	r.PassExpires = in.Add(time.Minute)
	if _, err := stocktest.New(rdb).Reserve(ctx, r); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		act  int64
		sets error // the purchase that meets the last unit or none
	}{{1, nil}, {2, stock.ErrSoldOut}, {3, nil}} {
		if err := buy(c.act, 10, true); !errors.Is(err, c.sets) && !(c.sets == nil && err == nil) {
			t.Fatalf("sale %d: the purchase that sets the flag: %v, want %v", c.act, err, c.sets)
		}
	}
	for _, c := range []struct {
		name string
		act  int64
		pass bool
		want error
	}{
		{"room, last unit sold, no pass", 1, false, stock.ErrNotAdmitted},
		{"room, last unit sold, a pass", 1, true, stock.ErrSoldOut},
		{"room, none left met, no pass", 2, false, stock.ErrNotAdmitted},
		{"room, none left met, a pass", 2, true, stock.ErrSoldOut},
		{"no room, no pass", 3, false, stock.ErrSoldOut},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := buy(c.act, 11, c.pass)
			if !errors.Is(err, c.want) || !reserve.AnsweredInProcess(err) {
				t.Errorf("err = %v (answered in process: %v), want %v from the flag", err, reserve.AnsweredInProcess(err), c.want)
			}
			var expires time.Time
			if c.pass {
				expires = in.Add(time.Minute)
			}
			if err := s.FlaggedSoldOut(reserve.Reservation{Purchase: stock.Purchase{ActivityID: c.act, PassExpires: expires},
				Now: in}); !errors.Is(err, c.want) {
				t.Errorf("FlaggedSoldOut: %v, want %v", err, c.want)
			}
		})
	}
}

package waitingroom_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sort"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/reserve"
	"seckill/internal/testutil"
	"seckill/internal/waitingroom"
)

// The bands of places (places.go), as the contract sees them: positive, below 2^53.
const (
	lotteryFrom, lotteryTo = 3e15, 4e15
	arrivalFrom            = 4e15
)

// Every ticket has a place, distinct and fixed from the join on: those who join before
// the start at random in the lottery's band, later ones in join order above them. The
// line admits strictly in place order: at every step the status's admitted_through is
// the highest place admitted, every admitted ticket's place is at or below it and every
// waiting one's above.
func TestPlacesAdmitInOrder(t *testing.T) {
	f := newFixture(t, testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	const early, late = 300, 60
	f.sale(1, 10*(early+late), room(50))

	places := map[int64]int64{} // user -> place at the join
	f.clock.set(t0.Add(-5 * time.Minute))
	for u := int64(1); u <= early; u++ {
		p := f.join(1, u).Place
		if p < lotteryFrom || p >= lotteryTo {
			t.Fatalf("user %d joined before the start at place %d, want one in [3e15, 4e15)", u, p)
		}
		places[u] = p
	}
	if again := f.join(1, 7); again.Place != places[7] {
		t.Errorf("a second join moved user 7 from place %d to %d", places[7], again.Place)
	}
	st, err := f.rooms.ReadStatus(ctx, 1)
	if err != nil || st.State != waitingroom.StateBefore || st.AdmittedThrough != 0 || st.Joined != early {
		t.Fatalf("status before the start: %+v %v, want before, nothing admitted, %d joined", st, err, early)
	}
	f.clock.set(t0)
	for u := int64(early + 1); u <= early+late; u++ {
		p := f.join(1, u).Place
		if want := int64(arrivalFrom) + u - early; p != want {
			t.Fatalf("user %d joined after the start at place %d, want %d (join order)", u, p, want)
		}
		places[u] = p
	}
	if distinct := len(slices.Compact(slices.Sorted(maps.Values(places)))); distinct != early+late {
		t.Fatalf("%d distinct places for %d tickets", distinct, early+late)
	}

	var admittedPlaces []int64 // in the order the line admitted them (by position)
	for step := 0; ; step++ {
		if _, err := f.rooms.Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
		st, err := f.rooms.ReadStatus(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if step%5 == 0 || st.Admitted == early+late {
			admittedPlaces = checkPlaces(t, f, places, st)
		}
		if st.Admitted == early+late {
			break
		}
		f.clock.add(100 * time.Millisecond)
	}
	if !slices.IsSorted(admittedPlaces) {
		t.Errorf("the line admitted out of place order")
	}
}

// checkPlaces holds every ticket to the status: its place as at the join, admitted if
// and only if its place is at most admitted_through, and admitted_through the highest
// place admitted. It returns the admitted tickets' places by position.
func checkPlaces(t *testing.T, f *fixture, places map[int64]int64, st waitingroom.Status) []int64 {
	t.Helper()
	type adm struct{ pos, place int64 }
	var admitted []adm
	for u, place := range places {
		tk, err := f.rooms.Ticket(context.Background(), 1, buyer.Of(u))
		if err != nil {
			t.Fatal(err)
		}
		if tk.Place != place {
			t.Fatalf("user %d: place %d, %d at the join", u, tk.Place, place)
		}
		if got, want := tk.Status == waitingroom.Admitted, place <= st.AdmittedThrough; got != want {
			t.Fatalf("user %d at place %d reads %s while admitted_through is %d", u, place, tk.Status, st.AdmittedThrough)
		}
		if tk.Status == waitingroom.Admitted {
			admitted = append(admitted, adm{tk.Position, place})
		}
	}
	if int64(len(admitted)) != st.Admitted {
		t.Fatalf("%d tickets admitted, the status says %d", len(admitted), st.Admitted)
	}
	sort.Slice(admitted, func(i, j int) bool { return admitted[i].pos < admitted[j].pos })
	out := make([]int64, len(admitted))
	for i, a := range admitted {
		out[i] = a.place
	}
	if len(out) > 0 && out[len(out)-1] != st.AdmittedThrough {
		t.Fatalf("admitted_through %d, the last admitted holds place %d", st.AdmittedThrough, out[len(out)-1])
	}
	return out
}

// A draw that lands on a waiting buyer's place is drawn again, with nothing changed by
// the first; a join whose draws all land on places taken fails and changes nothing.
func TestPlaceTakenDrawsAgain(t *testing.T) {
	f := newFixture(t, testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	f.sale(1, 100, room(10))
	draws := []int64{5, 5, 9}
	f.rooms.SetDraw(func() (int64, error) {
		d := draws[0]
		if len(draws) > 1 {
			draws = draws[1:]
		}
		return d, nil
	})
	if p := f.join(1, 1).Place; p != lotteryFrom+5 {
		t.Fatalf("first join: place %d, want %d", p, int64(lotteryFrom+5))
	}
	if p := f.join(1, 2).Place; p != lotteryFrom+9 {
		t.Fatalf("a join whose draw is taken: place %d, want the next draw's %d", p, int64(lotteryFrom+9))
	}
	f.rooms.SetDraw(func() (int64, error) { return 9, nil })
	if _, _, err := f.rooms.Join(ctx, 1, buyer.Of(3), "", ""); err == nil {
		t.Fatal("a join whose every draw is taken succeeded")
	}
	if _, err := f.rooms.Ticket(ctx, 1, buyer.Of(3)); !errors.Is(err, waitingroom.ErrNoTicket) {
		t.Errorf("the failed join left a ticket: %v", err)
	}
	if st, err := f.rooms.ReadStatus(ctx, 1); err != nil || st.Joined != 2 {
		t.Errorf("status after the failed join: %+v %v, want 2 joined", st, err)
	}
	// After the start no draw is used: join order.
	f.clock.set(t0)
	if p := f.join(1, 3).Place; p != arrivalFrom+1 {
		t.Errorf("the first join after the start: place %d, want %d", p, int64(arrivalFrom+1))
	}
}

// The status reads each state from the sale and the line, and the errors of a sale
// without a line or without a sale.
func TestStatusStates(t *testing.T) {
	f := newFixture(t, testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	f.sale(1, 1, room(10))
	f.sale(2, 5, stock.Room{})
	status := func(want string) waitingroom.Status {
		t.Helper()
		st, err := f.rooms.ReadStatus(ctx, 1)
		if err != nil || st.State != want || st.ActivityID != 1 || st.AdmitPerSecond != 10 || !st.AsOf.Equal(f.clock.now()) {
			t.Fatalf("status: %+v %v, want state %s of sale 1 at 10/s as of %v", st, err, want, f.clock.now())
		}
		return st
	}
	f.clock.set(t0.Add(-time.Second))
	f.join(1, 1)
	f.join(1, 2)
	if st := status(waitingroom.StateBefore); st.Joined != 2 || st.UnitsLeft != 1 {
		t.Errorf("before: %+v, want 2 joined, 1 unit left", st)
	}
	f.clock.set(t0)
	status(waitingroom.StateAdmitting)
	if _, err := f.rooms.Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	st := status(waitingroom.StateAdmitting)
	one, two := f.join(1, 1), f.join(1, 2)
	if st.Admitted != 2 || st.AdmittedThrough != max(one.Place, two.Place) || one.Status != waitingroom.Admitted ||
		two.Status != waitingroom.Admitted {
		t.Errorf("after admitting both: %+v, want admitted 2 through the higher of %d and %d (%+v, %+v)", st, one.Place,
			two.Place, one, two)
	}
	if _, err := f.stock.Reserve(ctx, reserve.Reservation{Purchase: stock.Purchase{ActivityID: 1, Buyer: buyer.Of(1), Quantity: 1,
		PassExpires: f.clock.now().Add(time.Minute)}, OrderID: "o1", Now: f.clock.now(), LockToken: "x", LockTTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	if st := status(waitingroom.StateSoldOut); st.UnitsLeft != 0 {
		t.Errorf("sold out: %+v, want 0 units left", st)
	}
	f.clock.set(t0.Add(time.Hour))
	status(waitingroom.StateEnded)

	if _, err := f.rooms.ReadStatus(ctx, 2); !errors.Is(err, waitingroom.ErrNoWaitingRoom) {
		t.Errorf("a sale without a line: %v, want ErrNoWaitingRoom", err)
	}
	if _, err := f.rooms.ReadStatus(ctx, 3); !errors.Is(err, waitingroom.ErrNoSale) {
		t.Errorf("no sale: %v, want ErrNoSale", err)
	}
}

// Status answers a crowd from its snapshot: one read of Redis per sale per StatusAge,
// however many ask, refusals (a sale without a line) included.
func TestStatusReadOncePerSecond(t *testing.T) {
	srv := testutil.StartRedis(t)
	f := newFixture(t, srv.Client(t))
	ctx := context.Background()
	f.sale(1, 100, room(10))
	f.sale(2, 100, stock.Room{})
	f.clock.set(t0)
	f.join(1, 1)
	for _, id := range []int64{1, 2} {
		if _, err := f.rooms.Status(ctx, id); err != nil && !errors.Is(err, waitingroom.ErrNoWaitingRoom) {
			t.Fatal(err) // loads the script, and the first snapshot
		}
	}
	before := srv.Calls(t)
	for range 1000 {
		if st, err := f.rooms.Status(ctx, 1); err != nil || st.Joined != 1 {
			t.Fatalf("status %+v %v", st, err)
		}
		if _, err := f.rooms.Status(ctx, 2); !errors.Is(err, waitingroom.ErrNoWaitingRoom) {
			t.Fatalf("status of a sale without a line: %v", err)
		}
	}
	if calls := srv.Calls(t) - before; calls != 0 {
		t.Errorf("2000 statuses within a second cost %d Redis calls, want 0", calls)
	}
	f.join(1, 2)
	f.clock.add(waitingroom.StatusAge)
	before = srv.Calls(t)
	if _, err := f.rooms.ReadStatus(ctx, 1); err != nil {
		t.Fatal(err)
	}
	oneRead := srv.Calls(t) - before // the script and the commands it runs
	before = srv.Calls(t)
	for range 1000 {
		if st, err := f.rooms.Status(ctx, 1); err != nil || st.Joined != 2 {
			t.Fatalf("status a second later: %+v %v, want 2 joined", st, err)
		}
	}
	if calls := srv.Calls(t) - before; calls != oneRead {
		t.Errorf("1000 statuses a second later cost %d Redis calls, want one read's %d", calls, oneRead)
	}
}

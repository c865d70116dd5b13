package waitingroom_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/codes"
	"seckill/internal/testutil"
	"seckill/internal/waitingroom"
)

// The bands of code holders' places (places.go).
const (
	earlyFrom, earlyTo = 1e15, 2e15
	membersFrom        = 2e15
)

// A sale with an early window of 10 minutes before t0, a line that opens 5 minutes before
// the window: code holders who join before the window are drawn at random below every
// buyer without a code, those who join in it follow them in join order, and nobody
// joins in the window without one. The line admits code holders from the window's
// opening, and nobody else before the start; the status stays before until the start
// while admitted_through rises through the code holders' places. From the start a code
// changes nothing.
func TestEarlyAccessLine(t *testing.T) {
	f := newFixture(t, testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	window := t0.Add(-10 * time.Minute)
	r := room(1000)
	r.Prequeue, r.PassTTL = 5*time.Minute, time.Hour
	err := f.stock.Load(ctx, stock.Sale{ActivityID: 1, Available: 100, Total: 100, Limit: 1, StartsAt: t0,
		EndsAt: t0.Add(time.Hour), PriceCents: 100, PayWindow: time.Minute, Room: r, EarlyAt: window})
	if err != nil {
		t.Fatal(err)
	}
	given := make([]string, 40)
	for i := range given {
		given[i] = fmt.Sprintf("CODE-%02d", i)
	}
	if err := codes.New(f.stock.Stock).Put(ctx, 1, given); err != nil {
		t.Fatal(err)
	}
	join := func(user int64, code string) (waitingroom.Ticket, error) {
		tk, _, err := f.rooms.Join(ctx, 1, buyer.Of(user), "", code)
		return tk, err
	}

	f.clock.set(window.Add(-5*time.Minute - time.Second))
	if _, err := join(1, given[1]); !errors.Is(err, waitingroom.ErrNotOpen) {
		t.Fatalf("a code holder's join before the line opens: %v, want ErrNotOpen", err)
	}
	f.clock.set(window.Add(-time.Minute)) // the line is open; the window is not
	places := map[int64]int64{}
	for u := int64(1); u <= 10; u++ { // code holders, each with their own code
		tk, err := join(u, given[u])
		if err != nil || tk.Place < earlyFrom || tk.Place >= earlyTo {
			t.Fatalf("code holder %d before the window: place %d, %v; want one in [1e15, 2e15)", u, tk.Place, err)
		}
		places[u] = tk.Place
	}
	for u := int64(11); u <= 20; u++ { // buyers without a code
		tk, err := join(u, "")
		if err != nil || tk.Place < lotteryFrom || tk.Place >= lotteryTo {
			t.Fatalf("buyer %d without a code: place %d, %v; want one in [3e15, 4e15)", u, tk.Place, err)
		}
		places[u] = tk.Place
	}
	for _, tc := range []struct {
		user int64
		code string
		want error
	}{
		{21, given[1], stock.ErrCodeTaken},    // buyer 1's code
		{21, "NO-SUCH", stock.ErrCodeInvalid}, // never issued
		{1, given[39], nil},                   // a second join: the ticket, and buyer 1 takes no other code
	} {
		tk, err := join(tc.user, tc.code)
		if !errors.Is(err, tc.want) || tc.want == nil && tk.Place != places[tc.user] {
			t.Errorf("buyer %d presents %q: %+v, %v; want %v", tc.user, tc.code, tk, err, tc.want)
		}
	}
	if tk, err := join(22, given[39]); err != nil || tk.Place >= earlyTo {
		t.Errorf("code 39, left free by buyer 1's second join: %+v, %v", tk, err)
	} else {
		places[22] = tk.Place
	}
	if _, err := f.rooms.Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.rooms.ReadStatus(ctx, 1); st.Admitted != 0 {
		t.Fatalf("admitted %d before the window", st.Admitted)
	}

	f.clock.set(window) // the early window
	if _, err := join(30, ""); !errors.Is(err, stock.ErrNotStarted) {
		t.Errorf("a join without a code in the window: %v, want stock.ErrNotStarted", err)
	}
	for u := int64(31); u <= 35; u++ {
		tk, err := join(u, given[u])
		if want := int64(membersFrom) + u - 30; err != nil || tk.Place != want {
			t.Fatalf("code holder %d in the window: place %d, %v; want %d (join order)", u, tk.Place, err, want)
		}
		places[u] = tk.Place
	}
	if tk, err := f.rooms.Ticket(ctx, 1, buyer.Of(35)); err != nil || tk.Status != waitingroom.Waiting || tk.EstimatedWaitSeconds > 1 {
		t.Errorf("a code holder waiting in the window: %+v, %v; want an estimate of the line's pace, not the time to the start", tk, err)
	}
	if tk, err := f.rooms.Ticket(ctx, 1, buyer.Of(11)); err != nil || tk.EstimatedWaitSeconds < 600 {
		t.Errorf("a buyer without a code in the window: %+v, %v; want an estimate past the start, 600 s away", tk, err)
	}
	members := 16 // 1 to 10, 22, 31 to 35
	for step := 0; step < 200; step++ {
		if _, err := f.rooms.Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
		f.clock.add(100 * time.Millisecond)
		if f.clock.now().After(t0.Add(-time.Second)) {
			t.Fatal("the window ran out before its code holders were admitted")
		}
	}
	st, err := f.rooms.ReadStatus(ctx, 1)
	if err != nil || st.State != waitingroom.StateBefore || st.Admitted != int64(members) || st.AdmittedThrough >= lotteryFrom {
		t.Fatalf("in the window, after the code holders: %+v, %v; want before, %d admitted, through below 3e15", st, err, members)
	}
	admitted := checkPlaces(t, f, places, st)
	if !slices.IsSorted(admitted) || admitted[len(admitted)-1] != int64(membersFrom)+5 {
		t.Errorf("admitted in the window: %v, want the code holders' places in order, the window's last", admitted)
	}

	f.clock.set(t0) // the start: everyone else, in place order; a code is nobody's business now
	tk, err := join(36, given[36])
	if err != nil || tk.Place != int64(arrivalFrom)+1 {
		t.Errorf("a code holder's join after the start: place %d, %v; want %d (join order)", tk.Place, err, int64(arrivalFrom)+1)
	}
	places[36] = tk.Place
	if tk, err = join(37, "NO-SUCH"); err != nil {
		t.Errorf("an unknown code after the start: %v, want it ignored", err)
	}
	places[37] = tk.Place
	if owner, _ := f.rdb.HGet(ctx, stock.CodesKey(stock.One(1)), given[36]).Result(); owner != "" {
		t.Errorf("code 36 presented after the start is owned (%q): a code changes nothing from the start", owner)
	}
	for step := 0; step < 50; step++ {
		if _, err := f.rooms.Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
		f.clock.add(100 * time.Millisecond)
	}
	st, err = f.rooms.ReadStatus(ctx, 1)
	if err != nil || st.State != waitingroom.StateAdmitting || st.Admitted != int64(members)+10+2 {
		t.Fatalf("after the start: %+v, %v; want admitting, everyone admitted", st, err)
	}
	if admitted := checkPlaces(t, f, places, st); !slices.IsSorted(admitted) {
		t.Errorf("admitted out of place order: %v", admitted)
	}
}

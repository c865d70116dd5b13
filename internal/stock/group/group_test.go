package group_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/outage"
	"seckill/internal/stock"
	"seckill/internal/stock/group"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/settle"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// newGroupSale loads a group-buy sale: groups of size, a window of a minute, a cap of
// caps participations per user (0: none).
func newGroupSale(t testing.TB, s *stocktest.Side, id, avail int64, size, caps int) {
	t.Helper()
	err := s.Load(context.Background(), stock.Sale{ActivityID: id, Available: avail, Total: avail, Limit: 5,
		StartsAt: stocktest.T0, EndsAt: stocktest.T0.Add(time.Hour), PriceCents: 100, PayWindow: time.Minute, Kind: "group",
		GroupSize: size, GroupWindow: time.Minute, ParticipationCap: caps})
	if err != nil {
		t.Fatal(err)
	}
}

func seat(act, user int64, group string, open bool, at time.Time) reserve.Reservation {
	r := stocktest.Reservation(act, user, 1, "", at)
	r.Group, r.OpenGroup = group, open
	return r
}

// Seats, step by step on one group of 3 in a sale that caps participations at 2.
func TestGroupSeats(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	newGroupSale(t, s, 1, 100, 3, 2)
	stocktest.NewSale(t, s, 2, 10, 1)
	in := stocktest.T0.Add(time.Second)
	steps := []struct {
		name    string
		r       reserve.Reservation
		want    error
		members int
		status  group.Status
	}{
		{"a purchase in a group sale", stocktest.Reservation(1, 1, 1, "", in), stock.ErrGroupSale, 0, 0},
		{"a seat in a plain sale", seat(2, 1, "gx", true, in), stock.ErrNotGroupSale, 0, 0},
		{"join an unknown group", seat(1, 1, "nope", false, in), stock.ErrNoGroup, 0, 0},
		{"user 1 opens g1", seat(1, 1, "g1", true, in), nil, 1, group.Open},
		{"user 1 again in g1", seat(1, 1, "g1", false, in), stock.ErrAlreadyInGroup, 0, 0},
		{"user 2 joins g1", seat(1, 2, "g1", false, in), nil, 2, group.Open},
		{"user 1 opens g2", seat(1, 1, "g2", true, in), nil, 1, group.Open},
		{"user 1 past the cap of 2 participations", seat(1, 1, "g3", true, in), stock.ErrLimitExceeded, 0, 0},
		{"user 3 fills g1", seat(1, 3, "g1", false, in), nil, 3, group.Complete},
		{"user 4 on the complete g1", seat(1, 4, "g1", false, in), stock.ErrGroupFull, 0, 0},
		{"user 3 again on the complete g1", seat(1, 3, "g1", false, in), stock.ErrAlreadyInGroup, 0, 0},
		{"user 4 on g2 after its window", seat(1, 4, "g2", false, in.Add(time.Minute)), stock.ErrGroupClosed, 0, 0},
	}
	for _, st := range steps {
		got, err := s.Reserve(ctx, st.r)
		// The user lock's 1 ms lease runs out (by Redis' clock).
		time.Sleep(2 * time.Millisecond)
		if !errors.Is(err, st.want) {
			t.Fatalf("%s: %v, want %v", st.name, err, st.want)
		}
		if err != nil {
			continue
		}
		if got.Group == nil || got.Group.Members != st.members || got.Group.Status != st.status || got.Group.Size != 3 {
			t.Fatalf("%s: group %+v, want %d of 3 members, %v", st.name, got.Group, st.members, st.status)
		}
	}
	g, err := s.Get(ctx, 1, "g1", true)
	if err != nil || len(g.Seats) != 3 || g.Seats["2"].Quantity != 1 {
		t.Fatalf("g1 = %+v, %v; want three seats", g, err)
	}
	open, err := s.OpenGroups(ctx, 1, in, 10)
	if err != nil || len(open) != 1 || open[0].ID != "g2" {
		t.Errorf("open groups = %+v, %v; want only g2", open, err)
	}
}

// Fifty buyers race for the last two seats of a group of 3: exactly two get one, and
// the group is complete with 3 members.
func TestGroupLastSeatRace(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	newGroupSale(t, s, 1, 1000, 3, 0)
	in := stocktest.T0.Add(time.Second)
	if _, err := s.Reserve(ctx, seat(1, 1, "g", true, in)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for u := int64(100); u < 150; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Reserve(ctx, seat(1, u, "g", false, in))
			mu.Lock()
			defer mu.Unlock()
			outcomes[fmt.Sprint(err)]++
		}()
	}
	wg.Wait()
	if outcomes["<nil>"] != 2 || outcomes[stock.ErrGroupFull.Error()] != 48 {
		t.Errorf("50 buyers for 2 seats: %v; want 2 seats taken, 48 refused", outcomes)
	}
	g, err := s.Get(ctx, 1, "g", true)
	if err != nil || g.Members != 3 || len(g.Seats) != 3 || g.Status != group.Complete {
		t.Errorf("group = %+v, %v; want complete with 3 seats", g, err)
	}
	if sales, _ := s.Read(ctx, []int64{1}); sales[1].Available != 997 {
		t.Errorf("available = %d, want 997", sales[1].Available)
	}
}

// A group whose window passed unfilled fails once its seats' orders are settled: units
// and participations come back once; a complete group never fails. A seat whose order
// MySQL refused is free again.
func TestGroupFail(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	newGroupSale(t, s, 1, 10, 3, 1)
	in := stocktest.T0.Add(time.Second)
	a, b := seat(1, 1, "g", true, in), seat(1, 2, "g", false, in)
	for _, r := range []reserve.Reservation{a, b} {
		if _, err := s.Reserve(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	after := in.Add(time.Minute)
	if due, _ := s.DueGroups(ctx, 1, after, 10); len(due) != 1 {
		t.Fatalf("due groups after the window: %v, want g", due)
	}
	if _, err := s.Fail(ctx, 1, "g", after); !errors.Is(err, group.ErrGroupPending) {
		t.Fatalf("fail with seats still queued: %v, want ErrGroupPending", err)
	}
	// MySQL refuses b (its seat comes back), stores a.
	if err := s.Settle(ctx, 1, []settle.Settlement{{OrderID: a.OrderID, Buyer: "1", Group: "g"},
		{OrderID: b.OrderID, Buyer: "2", Group: "g", Failed: true}}); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.Get(ctx, 1, "g", true); g.Members != 1 || len(g.Seats) != 1 {
		t.Fatalf("after b failed in MySQL: %+v, want 1 member", g)
	}
	for i, want := range []bool{true, false} {
		failed, err := s.Fail(ctx, 1, "g", after)
		if err != nil || failed != want {
			t.Fatalf("fail #%d: %v, %v; want %v", i+1, failed, err, want)
		}
	}
	snap, _ := s.Snapshot(ctx, 1)
	if snap.Sale.Available != 10 || len(snap.Users) != 0 {
		t.Errorf("after the failure: %+v; want every unit back and no user holding any", snap)
	}
	if failing, _ := s.Failing(ctx, 1); len(failing) != 1 {
		t.Errorf("failing = %v, want g until MySQL has cancelled its orders", failing)
	}
	// User 1's participation came back: the cap of 1 lets them open another group.
	// The user lock's 1 ms lease runs out, should the steps above be quicker (by Redis'
	// clock).
	time.Sleep(2 * time.Millisecond)
	if _, err := s.Reserve(ctx, seat(1, 1, "h", true, after)); err != nil {
		t.Errorf("user 1 after their group failed: %v", err)
	}
}

// A group that fills in the same instant its window ends has one outcome: the last seat
// (taken just before the end) and the failure (at the end) race, fifty times over, and
// each group ends either complete with its units held or failed with every unit back,
// never both.
func TestGroupFillRacesFailure(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	newGroupSale(t, s, 1, 1000, 2, 0)
	opened := stocktest.T0.Add(time.Second)
	end := opened.Add(time.Minute) // the group window of newGroupSale
	outcomes := map[string]int{}
	for i := range 50 {
		g := fmt.Sprintf("g%d", i)
		opener, joiner := int64(1000+i), int64(2000+i)
		if _, err := s.Reserve(ctx, seat(1, opener, g, true, opened)); err != nil {
			t.Fatal(err)
		}
		var joined error
		var failed bool
		var failErr error
		var wg sync.WaitGroup
		on := testutil.NewGoroutines(t)
		wg.Go(func() {
			_, joined = s.Reserve(ctx, seat(1, joiner, g, false, end.Add(-time.Millisecond)))
		})
		wg.Go(func() {
			for { // the fail waits for the seats' orders to be settled, as the worker's job does
				failed, failErr = s.Fail(ctx, 1, g, end)
				if !errors.Is(failErr, group.ErrGroupPending) {
					return
				}
				settleAll(on, s, 1)
			}
		})
		wg.Wait()
		on.Report()
		settleAll(t, s, 1)
		grp, err := s.Get(ctx, 1, g, false)
		switch {
		case err != nil || failErr != nil:
			t.Fatalf("group %s: %v, %v", g, err, failErr)
		case joined == nil && !failed && grp.Status == group.Complete && grp.Members == 2:
			outcomes["complete"]++
		case joined != nil && failed && grp.Status == group.Failed:
			outcomes["failed"]++
		default:
			t.Fatalf("group %s: join %v, failed %v, ends %+v: two outcomes or none", g, joined, failed, grp)
		}
	}
	snap, _ := s.Snapshot(ctx, 1)
	if held := 1000 - snap.Sale.Available; held != int64(2*outcomes["complete"]) {
		t.Errorf("%d units held, want 2 per complete group (%v)", held, outcomes)
	}
	t.Logf("outcomes: %v", outcomes)
}

// settleAll settles every queued order of a sale as stored (what the worker does).
func settleAll(t testing.TB, s *stocktest.Side, activityID int64) {
	t.Helper()
	snap, err := s.Snapshot(context.Background(), activityID)
	if err != nil {
		t.Fatal(err)
	}
	var ss []settle.Settlement
	for _, q := range snap.Queued {
		ss = append(ss, settle.Settlement{OrderID: q.OrderID, Buyer: q.Buyer, Group: q.Group})
	}
	if len(ss) > 0 {
		if err := s.Settle(context.Background(), activityID, ss); err != nil {
			t.Fatal(err)
		}
	}
}

// The buyers' list of open groups is fullest first, then soonest to close, and follows
// every change of a group: seats taken, a seat whose order MySQL refused (a complete
// group reopens), a group filled or failed, groups restored by a rebuild. Groups whose
// window has passed but that the worker has not failed yet are skipped, also when they
// fill more than a page of the sorted set.
func TestOpenGroupsFullestFirst(t *testing.T) {
	srv := testutil.StartRedis(t)
	rdb := srv.Client(t)
	s := stocktest.New(rdb)
	ctx := context.Background()
	newGroupSale(t, s, 1, 1000, 4, 0)
	stocktest.NewSale(t, s, 2, 10, 1)
	user := int64(100)
	seats := map[string][]reserve.Reservation{}
	take := func(g string, n int, at time.Time) {
		t.Helper()
		for i := range n {
			user++
			r := seat(1, user, g, i == 0 && len(seats[g]) == 0, at)
			if _, err := s.Reserve(ctx, r); err != nil {
				t.Fatalf("seat %d of %s: %v", i, g, err)
			}
			seats[g] = append(seats[g], r)
		}
	}
	// Twelve groups of 3 opened first (they close first); g1..g5 a second apart after.
	for i := range 12 {
		take(fmt.Sprintf("old%d", i), 3, stocktest.T0.Add(100*time.Millisecond))
	}
	for i, n := range []int{3, 3, 1, 4, 2} {
		take(fmt.Sprintf("g%d", i+1), n, stocktest.T0.Add(time.Duration(i+1)*time.Second))
	}
	now := stocktest.T0.Add(60500 * time.Millisecond) // the old groups' windows have passed
	settle := func(g string, i int, failed bool) {
		t.Helper()
		r := seats[g][i]
		if err := s.Settle(ctx, 1, []settle.Settlement{{OrderID: r.OrderID, Buyer: r.Buyer, Group: g, Failed: failed}}); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name   string
		change func()
		limit  int
		want   string
	}{
		{"fullest first, then soonest to close", func() {}, 10, "g1:3 g2:3 g5:2 g3:1"},
		{"a limit below the expired groups' page", func() {}, 3, "g1:3 g2:3 g5:2"},
		{"a limit of one", func() {}, 1, "g1:3"},
		{"g1 loses a seat MySQL refused", func() { settle("g1", 1, true) }, 10, "g2:3 g1:2 g5:2 g3:1"},
		{"complete g4 reopens with a refused seat", func() { settle("g4", 3, true) }, 10, "g2:3 g4:3 g1:2 g5:2 g3:1"},
		{"g2 fills", func() { take("g2", 1, stocktest.T0.Add(10*time.Second)) }, 10, "g4:3 g1:2 g5:2 g3:1"},
		{"g3 fails after its window", func() {
			settle("g3", 0, false)
			if failed, err := s.Fail(ctx, 1, "g3", stocktest.T0.Add(64*time.Second)); !failed || err != nil {
				t.Fatalf("fail g3: %v, %v", failed, err)
			}
		}, 10, "g4:3 g1:2 g5:2"},
		{"the old groups fail", func() {
			settleAll(t, s, 1)
			due, err := s.DueGroups(ctx, 1, now, 100)
			if err != nil || len(due) != 12 {
				t.Fatalf("due groups: %v, %v; want the 12 old ones", due, err)
			}
			for _, g := range due {
				if failed, err := s.Fail(ctx, 1, g, now); !failed || err != nil {
					t.Fatalf("fail %s: %v, %v", g, failed, err)
				}
			}
		}, 2, "g4:3 g1:2"},
	}
	for _, st := range steps {
		st.change()
		open, err := s.OpenGroups(ctx, 1, now, st.limit)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := listed(open); got != st.want {
			t.Errorf("%s: open groups %q, want %q", st.name, got, st.want)
		}
	}
	// Both sorted sets hold the same groups: the end of the windows and the fullest first.
	byEnd, _ := rdb.ZRange(ctx, "seckill:{act:1}:groups:open", 0, -1).Result()
	byFill, _ := rdb.ZRange(ctx, "seckill:{act:1}:groups:fill", 0, -1).Result()
	if len(byEnd) != 3 || len(byFill) != 3 {
		t.Errorf("sorted sets of open groups: by end %v, fullest first %v; want g1, g4 and g5 in both", byEnd, byFill)
	}

	// A rebuilt sale lists the open groups it restored, in the same order.
	newGroupSale(t, s, 3, 1000, 4, 0)
	restored := []group.Group{
		{ID: "r1", Size: 4, ExpiresAt: stocktest.T0.Add(2 * time.Minute), Seats: seatsOf(1)},
		{ID: "r2", Size: 4, ExpiresAt: stocktest.T0.Add(3 * time.Minute), Seats: seatsOf(3)},
		{ID: "r3", Size: 4, ExpiresAt: stocktest.T0.Add(time.Minute), Seats: seatsOf(3)},
		{ID: "r4", Size: 4, ExpiresAt: stocktest.T0.Add(time.Minute), Seats: seatsOf(4), Status: group.Complete},
	}
	for i := range restored {
		restored[i].Members = len(restored[i].Seats)
	}
	if n, err := s.Restore(ctx, 3, restored); n != 4 || err != nil {
		t.Fatalf("restore: %d, %v", n, err)
	}
	if open, err := s.OpenGroups(ctx, 3, stocktest.T0, 10); err != nil || listed(open) != "r3:3 r2:3 r1:1" {
		t.Errorf("restored groups listed %q (%v), want r3:3 r2:3 r1:1", listed(open), err)
	}

	for _, c := range []struct {
		id   int64
		want error
	}{{2, stock.ErrNotGroupSale}, {9, stock.ErrNoSale}} {
		if _, err := s.OpenGroups(ctx, c.id, now, 10); !errors.Is(err, c.want) {
			t.Errorf("open groups of sale %d: %v, want %v", c.id, err, c.want)
		}
	}
}

// listed writes groups as "id:members" in their order.
func listed(gs []group.Group) string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = fmt.Sprintf("%s:%d", g.ID, g.Members)
	}
	return strings.Join(out, " ")
}

// seatsOf returns n seats of users 1..n.
func seatsOf(n int) map[buyer.ID]group.Seat {
	m := map[buyer.ID]group.Seat{}
	for u := int64(1); u <= int64(n); u++ {
		m[buyer.Of(u)] = group.Seat{OrderID: fmt.Sprintf("x%d", u), Quantity: 1}
	}
	return m
}

// Once a sale is sold out, this process's flag answers only what it can vouch for:
// sold out for a request of the kind, and within the limit, of the one that set it. A
// request of the sale's other kind (a plain purchase of a group-buy sale, a seat in a
// plain sale) or above the per-user limit goes to the script, which refuses it before
// it looks at stock: ErrGroupSale, ErrNotGroupSale, ErrQuantityOverLimit, as it would
// with stock left, whether the flag was set by a seat or by a purchase.
func TestSoldOutFlagKnowsTheKind(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	newGroupSale(t, s, 1, 1, 2, 0)   // one unit: the seat that opens a group takes it; limit 5
	stocktest.NewSale(t, s, 2, 1, 2) // one unit: the purchase takes it; limit 2
	in := stocktest.T0.Add(time.Second)
	if _, err := s.Reserve(ctx, seat(1, 1, "g1", true, in)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, stocktest.Reservation(2, 1, 1, "", in)); err != nil {
		t.Fatal(err)
	}
	over := stocktest.Reservation(2, 2, 3, "", in)
	for _, c := range []struct {
		name     string
		r        reserve.Reservation
		want     error
		fromFlag bool
	}{
		{"group sale, a purchase", stocktest.Reservation(1, 2, 1, "", in), stock.ErrGroupSale, false},
		{"group sale, a seat opening a group", seat(1, 2, "g2", true, in), stock.ErrSoldOut, true},
		{"group sale, a seat joining one", seat(1, 2, "g1", false, in), stock.ErrSoldOut, true},
		{"plain sale, a purchase", stocktest.Reservation(2, 2, 1, "", in), stock.ErrSoldOut, true},
		{"plain sale, a purchase above the limit", over, stock.ErrQuantityOverLimit, false},
		{"plain sale, a seat opening a group", seat(2, 2, "g3", true, in), stock.ErrNotGroupSale, false},
		{"plain sale, a seat joining one", seat(2, 2, "g1", false, in), stock.ErrNotGroupSale, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The user lock's 1 ms lease runs out (by Redis' clock).
			time.Sleep(2 * time.Millisecond)
			_, err := s.Reserve(ctx, c.r)
			if !errors.Is(err, c.want) || reserve.AnsweredInProcess(err) != c.fromFlag {
				t.Errorf("Reserve: %v (answered in process: %v), want %v (from the flag: %v)", err, reserve.AnsweredInProcess(err), c.want, c.fromFlag)
			}
			early := c.r
			if early.OpenGroup {
				early.Group = "" // as the sale package asks, before it mints the group's id
			}
			flagged := s.FlaggedSoldOut(early)
			if c.fromFlag && !errors.Is(flagged, c.want) || !c.fromFlag && flagged != nil {
				t.Errorf("FlaggedSoldOut: %v, want %v from the flag: %v", flagged, c.want, c.fromFlag)
			}
		})
	}
}

// A change of what a sold-out flag remembers (the waiting room, the limit) drops the
// flag on every process at once (the time of the purchases stays fixed, so the flag
// never goes stale on its own here): the next purchase gets the script's answer.
func TestSoldOutFlagDroppedWhenSettingsChange(t *testing.T) {
	srv := testutil.StartRedis(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := stocktest.New(srv.Client(t))
	go s.Watch(ctx)
	stocktest.WaitSubscribed(t, srv.Client(t), 1)
	stocktest.NewSale(t, s, 1, 1, 2)
	stocktest.NewSale(t, s, 2, 1, 2)
	in := stocktest.T0.Add(time.Second)
	for _, id := range []int64{1, 2} {
		if _, err := s.Reserve(ctx, stocktest.Reservation(id, 1, 1, "", in)); err != nil {
			t.Fatal(err)
		}
	}
	one := 1
	for _, c := range []struct {
		name   string
		change func() error
		r      reserve.Reservation
		want   error
	}{
		{"a waiting room set", func() error {
			return s.SetRoom(ctx, 1, stock.Room{On: true, AdmitPerSecond: 10, PassTTL: time.Minute, Prequeue: time.Minute, ChallengeCost: 1000})
		}, stocktest.Reservation(1, 2, 1, "", in), stock.ErrNotAdmitted},
		{"the limit lowered", func() error { return s.Patch(ctx, 2, &one, nil, 0, nil) }, stocktest.Reservation(2, 2, 2, "", in), stock.ErrQuantityOverLimit},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := s.Reserve(ctx, c.r); !errors.Is(err, stock.ErrSoldOut) || !reserve.AnsweredInProcess(err) {
				t.Fatalf("before the change: %v, want sold out from the flag", err)
			}
			if err := c.change(); err != nil {
				t.Fatal(err)
			}
			var err error
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if _, err = s.Reserve(ctx, c.r); errors.Is(err, c.want) {
					return
				}
			}
			t.Errorf("after the change: %v, want %v", err, c.want)
		})
	}
}

// A group whose window (a minute from stocktest.T0+1s) an outage overlapped is given the time back:
// the worker or a refused join extends it (ExtendGroup), joins and the buyers' list
// follow the extended end, it does not fail before it, and a second extension with the
// same outages counts them once.
func TestExtendGroup(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	newGroupSale(t, s, 1, 10, 3, 0)
	in := stocktest.T0.Add(time.Second)
	for _, r := range []reserve.Reservation{seat(1, 1, "g", true, in), seat(1, 2, "full", true, in),
		seat(1, 3, "full", false, in), seat(1, 4, "full", false, in)} {
		if _, err := s.Reserve(ctx, r); err != nil {
			t.Fatal(err)
		}
		// The user lock's 1 ms lease runs out (by Redis' clock).
		time.Sleep(2 * time.Millisecond)
	}
	at := func(s float64) time.Time { return stocktest.T0.Add(time.Duration(s * float64(time.Second))) }
	outages := outage.Outages{Spans: []outage.Span{{From: at(40), To: at(70)}}}
	if _, err := s.Reserve(ctx, seat(1, 5, "g", false, at(65))); !errors.Is(err, stock.ErrGroupClosed) {
		t.Fatalf("a join past the window as opened, before any extension: %v, want ErrGroupClosed", err)
	}
	for i := range 2 {
		end, err := s.Extend(ctx, 1, "g", outages, at(65))
		if err != nil || !end.Equal(at(91)) {
			t.Fatalf("extension %d: %v, %v; want stocktest.T0+91s (61 s + the 30 s outage)", i+1, end.Sub(stocktest.T0), err)
		}
	}
	if end, err := s.Extend(ctx, 1, "full", outages, at(65)); err != nil || !end.IsZero() {
		t.Errorf("a complete group: %v, %v; want no extension", end, err)
	}
	if due, err := s.DueGroups(ctx, 1, at(90), 10); err != nil || len(due) != 0 {
		t.Errorf("due at stocktest.T0+90s: %v, %v; want none", due, err)
	}
	if open, err := s.OpenGroups(ctx, 1, at(80), 10); err != nil || len(open) != 1 || !open[0].ExpiresAt.Equal(at(91)) {
		t.Errorf("open groups at stocktest.T0+80s: %+v, %v; want g until stocktest.T0+91s", open, err)
	}
	if _, err := s.Reserve(ctx, seat(1, 5, "g", false, at(80))); err != nil {
		t.Errorf("a join within the extended window: %v", err)
	}
	if failed, err := s.Fail(ctx, 1, "g", at(90)); failed || err != nil {
		t.Errorf("fail at stocktest.T0+90s: %t, %v; want not yet", failed, err)
	}
	if due, err := s.DueGroups(ctx, 1, at(91), 10); err != nil || len(due) != 1 {
		t.Errorf("due at stocktest.T0+91s: %v, %v; want g", due, err)
	}
}

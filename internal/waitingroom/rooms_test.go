package waitingroom_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/altcha"
	"seckill/internal/auth"
	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
	"seckill/internal/waitingroom"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

const secret = "line-test-secret-0123456789abcdef"

// clock is a settable time for the line and the stock.
type clock struct{ ms atomic.Int64 }

func (c *clock) set(t time.Time)         { c.ms.Store(t.UnixMilli()) }
func (c *clock) add(d time.Duration)     { c.ms.Add(d.Milliseconds()) }
func (c *clock) now() time.Time          { return time.UnixMilli(c.ms.Load()).UTC() }
func newClock(t time.Time) *clock        { c := &clock{}; c.set(t); return c }
func (c *clock) since(t time.Time) int64 { return c.now().Sub(t).Milliseconds() }

type fixture struct {
	t     *testing.T
	rdb   *redis.Client
	stock *stocktest.Side
	rooms *waitingroom.Rooms
	clock *clock
	pow   *altcha.Issuer
}

func newFixture(t *testing.T, rdb *redis.Client) *fixture {
	c := newClock(t0.Add(-time.Minute))
	pow := altcha.New(auth.DeriveKey(secret, "altcha"))
	l := waitingroom.New(rdb, auth.NewPasses(secret), pow)
	l.SetClock(c.now)
	return &fixture{t: t, rdb: rdb, stock: stocktest.New(rdb), rooms: l, clock: c, pow: pow}
}

// sale loads a sale of units that starts at t0 and ends an hour later, limit 1, with
// a waiting room admitting rate per second.
func (f *fixture) sale(id, units int64, room stock.Room) {
	f.t.Helper()
	err := f.stock.Load(context.Background(), stock.Sale{ActivityID: id, Available: units, Total: units,
		Limit: 1, StartsAt: t0, EndsAt: t0.Add(time.Hour), PriceCents: 100, PayWindow: time.Minute, Room: room})
	if err != nil {
		f.t.Fatal(err)
	}
}

func room(rate int) stock.Room {
	return stock.Room{On: true, AdmitPerSecond: rate, PassTTL: time.Minute, Prequeue: 10 * time.Minute,
		ChallengeCost: 1000}
}

func (f *fixture) join(id, user int64) waitingroom.Ticket {
	f.t.Helper()
	t, _, err := f.rooms.Join(context.Background(), id, buyer.Of(user), "", "")
	if err != nil {
		f.t.Fatalf("user %d joins: %v", user, err)
	}
	return t
}

// admitAll advances the line in steps of 100 ms until it is empty, recording who was
// admitted when (ms after t0), in order.
func (f *fixture) admitAll(id int64) (order []int64, at map[int64]int64) {
	f.t.Helper()
	ctx := context.Background()
	at = map[int64]int64{}
	seen := map[int64]bool{}
	for range 100_000 {
		step, err := f.rooms.Admit(ctx, id)
		if err != nil {
			f.t.Fatal(err)
		}
		if step.Admitted > 0 {
			got := f.admittedSince(id, seen)
			for _, u := range got {
				at[u] = f.clock.since(t0)
			}
			order = append(order, got...)
		}
		if step.Waiting == 0 {
			return order, at
		}
		f.clock.add(100 * time.Millisecond)
	}
	f.t.Fatal("the line never emptied")
	return nil, nil
}

// admittedSince returns the users admitted that seen does not hold, by position.
func (f *fixture) admittedSince(id int64, seen map[int64]bool) []int64 {
	f.t.Helper()
	all, err := f.rdb.HGetAll(context.Background(), stock.Prefix(stock.One(id))+"line:tickets").Result()
	if err != nil {
		f.t.Fatal(err)
	}
	type adm struct{ user, pos int64 }
	var fresh []adm
	for k, v := range all {
		var u, at, pos, exp int64
		fmt.Sscan(k, &u)
		fmt.Sscan(v, &at, &pos, &exp)
		if !seen[u] {
			seen[u] = true
			fresh = append(fresh, adm{u, pos})
		}
	}
	sort.Slice(fresh, func(i, j int) bool { return fresh[i].pos < fresh[j].pos })
	out := make([]int64, len(fresh))
	for i, a := range fresh {
		out[i] = a.user
	}
	return out
}

func TestJoinEdges(t *testing.T) {
	f := newFixture(t, testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	f.sale(1, 10, room(10))
	f.sale(2, 10, stock.Room{})
	f.sale(3, 1, room(10))
	withChallenge := room(10)
	withChallenge.Challenge = true
	f.sale(4, 10, withChallenge)

	f.clock.set(t0.Add(-11 * time.Minute))
	if _, _, err := f.rooms.Join(ctx, 1, buyer.Of(7), "", ""); !errors.Is(err, waitingroom.ErrNotOpen) {
		t.Errorf("11 minutes before the start: %v, want ErrNotOpen", err)
	}
	f.clock.set(t0.Add(-10 * time.Minute))
	first, created, err := f.rooms.Join(ctx, 1, buyer.Of(7), "", "")
	if err != nil || !created || first.Status != waitingroom.Waiting || first.Position != 1 || first.Ahead != 0 {
		t.Fatalf("first join: %+v created %v err %v", first, created, err)
	}
	if first.EstimatedWaitSeconds != 600 || first.UnitsLeft != 10 {
		t.Errorf("first ticket: wait %d s, %d units; want 600 s (the start) and 10", first.EstimatedWaitSeconds, first.UnitsLeft)
	}
	again, created, err := f.rooms.Join(ctx, 1, buyer.Of(7), "", "")
	if err != nil || created || again != first {
		t.Errorf("second join: %+v created %v err %v, want the same ticket", again, created, err)
	}
	if _, err := f.rooms.Ticket(ctx, 1, buyer.Of(8)); !errors.Is(err, waitingroom.ErrNoTicket) {
		t.Errorf("ticket of a user who never joined: %v", err)
	}
	if _, _, err := f.rooms.Join(ctx, 2, buyer.Of(7), "", ""); !errors.Is(err, waitingroom.ErrNoWaitingRoom) {
		t.Errorf("sale without a room: %v", err)
	}
	if _, _, err := f.rooms.Join(ctx, 99, buyer.Of(7), "", ""); !errors.Is(err, waitingroom.ErrNoSale) {
		t.Errorf("no such sale: %v", err)
	}
	if _, err := f.rooms.Challenge(ctx, 2); !errors.Is(err, waitingroom.ErrNoWaitingRoom) {
		t.Errorf("challenge of a sale without a room: %v", err)
	}

	// The challenge: required, accepted once, bound to its sale, refused expired or wrong.
	if _, _, err := f.rooms.Join(ctx, 4, buyer.Of(7), "", ""); !errors.Is(err, waitingroom.ErrChallengeRequired) {
		t.Errorf("no solution: %v", err)
	}
	solve := func(id int64) string {
		c, err := f.rooms.Challenge(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		s, err := altcha.Solve(c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := solve(4)
	if _, created, err := f.rooms.Join(ctx, 4, buyer.Of(7), s, ""); err != nil || !created {
		t.Fatalf("solved: created %v err %v", created, err)
	}
	if _, _, err := f.rooms.Join(ctx, 4, buyer.Of(8), s, ""); !errors.Is(err, waitingroom.ErrChallengeFailed) {
		t.Errorf("the same solution for another user: %v, want ErrChallengeFailed", err)
	}
	if _, created, err := f.rooms.Join(ctx, 4, buyer.Of(7), "", ""); err != nil || created {
		t.Errorf("a second join of a joined user needs no solution: created %v err %v", created, err)
	}
	// The sale's state comes before the solution: a joined user's ticket, a sale
	// without a room, whatever solution came.
	for _, sol := range []string{s, "bm90IGpzb24=", solve(1)} {
		if _, created, err := f.rooms.Join(ctx, 4, buyer.Of(7), sol, ""); err != nil || created {
			t.Errorf("a second join with a used, garbled or another sale's solution: created %v err %v; want the ticket", created, err)
		}
	}
	if _, _, err := f.rooms.Join(ctx, 2, buyer.Of(7), "bm90IGpzb24=", ""); !errors.Is(err, waitingroom.ErrNoWaitingRoom) {
		t.Errorf("sale without a room, a garbled solution: %v", err)
	}
	if _, _, err := f.rooms.Join(ctx, 1, buyer.Of(9), "bm90IGpzb24=", ""); !errors.Is(err, waitingroom.ErrChallengeFailed) {
		t.Errorf("a room without the challenge, a garbled solution: %v, want ErrChallengeFailed", err)
	}
	if _, _, err := f.rooms.Join(ctx, 4, buyer.Of(9), solve(1), ""); !errors.Is(err, waitingroom.ErrChallengeFailed) {
		t.Errorf("another sale's solution: %v", err)
	}
	late := solve(4)
	f.clock.add(11 * time.Minute)
	if _, _, err := f.rooms.Join(ctx, 4, buyer.Of(10), late, ""); !errors.Is(err, waitingroom.ErrChallengeFailed) {
		t.Errorf("an expired solution: %v", err)
	}

	// Sold out and ended: new joins refused, waiting tickets read sold_out, one flag.
	f.clock.set(t0.Add(-time.Minute))
	f.join(3, 7)
	f.clock.set(t0.Add(time.Second))
	joiner := f.join(3, 8)
	if joiner.Position != 2 {
		t.Errorf("a late joiner's position: %d, want 2", joiner.Position)
	}
	if _, err := f.stock.Reserve(ctx, reserve.Reservation{Purchase: stock.Purchase{ActivityID: 3, Buyer: "50", Quantity: 1, PassExpires: f.clock.now().Add(time.Minute)},
		OrderID: "o1", Now: f.clock.now(), LockToken: "x", LockTTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.rooms.Join(ctx, 3, buyer.Of(9), "", ""); !errors.Is(err, stock.ErrSoldOut) {
		t.Errorf("join of a sold-out sale: %v", err)
	}
	if got, err := f.rooms.Ticket(ctx, 3, buyer.Of(7)); err != nil || got.Status != waitingroom.SoldOut {
		t.Errorf("waiting ticket of a sold-out sale: %+v %v", got, err)
	}
	f.clock.set(t0.Add(time.Hour))
	if _, _, err := f.rooms.Join(ctx, 1, buyer.Of(9), "", ""); !errors.Is(err, stock.ErrEnded) {
		t.Errorf("join after the end: %v", err)
	}
	if got, err := f.rooms.Ticket(ctx, 1, buyer.Of(7)); err != nil || got.Status != waitingroom.SoldOut {
		t.Errorf("waiting ticket after the end: %+v %v", got, err)
	}
}

// A challenge's life is judged by Redis' clock, the one of every instance, not by the
// clock of the process that made or checks it: a challenge lasts ten minutes from its
// making by that clock, a solution is refused once it has passed, and an accepted
// solution is remembered until exactly then, so no instance can take it again.
func TestChallengeLivesByRedisClock(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	f := newFixture(t, rdb)
	ctx := context.Background()
	withChallenge := room(10)
	withChallenge.Challenge = true
	now, err := rdb.Time(ctx).Result() // Redis' clock
	if err != nil {
		t.Fatal(err)
	}
	if err := f.stock.Load(ctx, stock.Sale{ActivityID: 1, Available: 10, Total: 10, Limit: 1,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PriceCents: 1, PayWindow: time.Minute,
		Room: withChallenge}); err != nil {
		t.Fatal(err)
	}
	real := waitingroom.New(rdb, auth.NewPasses(secret), f.pow) // Redis' clock
	c, err := real.Challenge(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	sol, err := altcha.Solve(c)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.pow.Check(sol)
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Expires.Sub(now); d < 10*time.Minute-time.Second || d > 10*time.Minute+time.Second {
		t.Errorf("the challenge expires %v after Redis' now, want 10m", d)
	}
	// Challenges made by a line whose clock is 11 and 9 minutes behind Redis': the first
	// has expired by Redis' clock, the second has about a minute left.
	behind := func(d time.Duration) string {
		l := waitingroom.New(rdb, auth.NewPasses(secret), f.pow)
		l.SetClock(func() time.Time { return time.Now().Add(-d) })
		c, err := l.Challenge(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		sol, err := altcha.Solve(c)
		if err != nil {
			t.Fatal(err)
		}
		return sol
	}
	if _, _, err := real.Join(ctx, 1, buyer.Of(7), behind(11*time.Minute), ""); !errors.Is(err, waitingroom.ErrChallengeFailed) {
		t.Errorf("a challenge past its life by Redis' clock: %v, want ErrChallengeFailed", err)
	}
	late := behind(9 * time.Minute)
	if _, created, err := real.Join(ctx, 1, buyer.Of(7), late, ""); err != nil || !created {
		t.Fatalf("a challenge with a minute left: created %v err %v", created, err)
	}
	lateSolution, err := f.pow.Check(late)
	if err != nil {
		t.Fatal(err)
	}
	ttl, err := rdb.PTTL(ctx, stock.Prefix(stock.One(1))+"line:pow:"+lateSolution.Challenge).Result()
	if err != nil || ttl < 55*time.Second || ttl > 61*time.Second {
		t.Errorf("the accepted solution is remembered for %v (%v), want about a minute: until its challenge expires", ttl, err)
	}
	if _, _, err := real.Join(ctx, 1, buyer.Of(8), late, ""); !errors.Is(err, waitingroom.ErrChallengeFailed) {
		t.Errorf("the solution again, by another buyer: %v, want ErrChallengeFailed", err)
	}
}

// Buyers who join before the start are admitted in a uniformly random order, those who
// join later behind them in arrival order, each once, positions 1..N.
func TestLotteryThenArrivalOrder(t *testing.T) {
	f := newFixture(t, testutil.StartRedis(t).Client(t))
	const early, late = 2000, 200
	f.sale(1, 10*early, room(500))
	f.clock.set(t0.Add(-5 * time.Minute))
	for u := int64(1); u <= early; u++ {
		f.join(1, u)
	}
	f.clock.set(t0)
	for u := int64(early + 1); u <= early+late; u++ {
		got := f.join(1, u)
		if got.Position != u || got.Ahead != u-1 {
			t.Fatalf("late joiner %d: position %d ahead %d", u, got.Position, got.Ahead)
		}
	}
	order, _ := f.admitAll(1)
	if len(order) != early+late {
		t.Fatalf("admitted %d, want %d", len(order), early+late)
	}
	seen := map[int64]bool{}
	for i, u := range order {
		if seen[u] {
			t.Fatalf("user %d admitted twice", u)
		}
		seen[u] = true
		if i >= early && u != int64(i+1) {
			t.Fatalf("admission %d is user %d: late joiners must follow in arrival order", i+1, u)
		}
		if i < early && u > early {
			t.Fatalf("admission %d is late joiner %d, before an early one", i+1, u)
		}
	}
	// The first half admitted is spread over the whole join order: its mean join index
	// is (early+1)/2 with a standard deviation of early/sqrt(12 x early/2 ...) under a
	// uniform lottery; a line in join order (or any strong bias) is far outside.
	firstHalf := order[:early/2]
	var sum float64
	inFirstQuarter := 0
	for _, u := range firstHalf {
		sum += float64(u)
		if u <= early/4 {
			inFirstQuarter++
		}
	}
	mean := sum / float64(len(firstHalf))
	// Sampling half of 1..n without replacement: sd of the mean = sqrt((n^2-1)/12 / k x (n-k)/(n-1)).
	n, k := float64(early), float64(len(firstHalf))
	sd := math.Sqrt((n*n - 1) / 12 / k * (n - k) / (n - 1))
	if math.Abs(mean-(n+1)/2) > 5*sd {
		t.Errorf("mean join index of the first half admitted = %.1f, want %.1f ± %.1f (5 sd)", mean, (n+1)/2, 5*sd)
	}
	// Each quarter of the join order holds about a quarter of the first half.
	if want := k / 4; math.Abs(float64(inFirstQuarter)-want) > 5*math.Sqrt(want*0.75*0.5) {
		t.Errorf("%d of the first half admitted joined in the first quarter, want about %.0f", inFirstQuarter, want)
	}
	// The order is not join order, nor its reverse.
	if order[0] == 1 && order[1] == 2 && order[2] == 3 {
		t.Errorf("the first three admitted are the first three joiners")
	}
}

// From the last join before the start on, a waiting buyer's estimated wait never
// grows while they keep their place: through the start (the countdown gives way to the
// buyers ahead), while later buyers join behind, while the inventory cap holds the line
// still, and as the line moves. (Before then a later joiner's draw may land ahead.)
func TestEstimatedWaitNeverGrows(t *testing.T) {
	f := newFixture(t, testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	const early = 60
	f.sale(1, 10, room(5)) // 10 units: at most 20 passes outstanding, so the line stalls
	f.clock.set(t0.Add(-3 * time.Second))
	for u := int64(1); u <= early; u++ {
		f.join(1, u)
	}
	last := map[int64]int64{} // the estimate each early buyer read last, while waiting
	read := func(when string) {
		t.Helper()
		for u := int64(1); u <= early; u++ {
			tk, err := f.rooms.Ticket(ctx, 1, buyer.Of(u))
			if err != nil {
				t.Fatal(err)
			}
			if tk.Status != waitingroom.Waiting {
				continue
			}
			if prev, ok := last[u]; ok && tk.EstimatedWaitSeconds > prev {
				t.Fatalf("%s: user %d's estimated wait grew from %d s to %d s (%+v)", when, u, prev, tk.EstimatedWaitSeconds, tk)
			}
			last[u] = tk.EstimatedWaitSeconds
		}
	}
	read("before the start")
	late := int64(1000)
	for range 100 { // 10 s from 3 s before the start, a step every 100 ms
		f.clock.add(100 * time.Millisecond)
		for range 3 {
			if f.clock.now().Before(t0) {
				break // a join now would draw a place, maybe ahead
			}
			late++
			f.join(1, late)
		}
		f.step(1)
		read(fmt.Sprint(f.clock.since(t0), " ms after the start"))
	}
	if fig, err := f.rooms.Figures(ctx, 1); err != nil || fig.Admitted != 20 {
		t.Fatalf("figures %+v %v: want 20 admitted, the cap holding the rest", fig, err)
	}
	if len(last) != early {
		t.Fatalf("%d of the early buyers read a waiting ticket, want %d", len(last), early)
	}
}

// However late and unevenly the advancing runs come, no 10 s window holds more than
// 10 x admit_per_second admissions; with runs at most Tolerance apart the line moves at
// close to that rate (a stall longer than that loses the slots it skipped: admissions
// stay spread evenly rather than catching up in a burst).
func TestAdmissionRateOverAnyTenSeconds(t *testing.T) {
	steady := []time.Duration{100, 100, 13, 187, 100, 250, 90, 110, 100, 40}
	stalls := []time.Duration{13, 100, 100, 700, 1, 250, 90, 2100, 100, 40}
	for _, c := range []struct {
		rate int
		gaps []time.Duration
		fast bool // runs at most Tolerance apart: the rate is kept
	}{{1, steady, true}, {7, steady, true}, {50, steady, true}, {7, stalls, false}, {50, stalls, false}} {
		t.Run(fmt.Sprint(c.rate, "/", c.fast), func(t *testing.T) {
			f := newFixture(t, testutil.StartRedis(t).Client(t))
			ctx := context.Background()
			rate := c.rate
			buyers := int64(rate * 40)
			f.sale(1, 1_000_000, room(rate))
			f.clock.set(t0.Add(-time.Minute))
			for u := int64(1); u <= buyers; u++ {
				f.join(1, u)
			}
			f.clock.set(t0)
			var times []int64
			for i := 0; len(times) < int(buyers); i++ {
				step, err := f.rooms.Admit(ctx, 1)
				if err != nil {
					t.Fatal(err)
				}
				for range step.Admitted {
					times = append(times, f.clock.since(t0))
				}
				f.clock.add(c.gaps[i%len(c.gaps)] * time.Millisecond)
				if i > 1_000_000 {
					t.Fatal("the line stalled")
				}
			}
			worst := 0
			for i := range times {
				j := sort.Search(len(times), func(j int) bool { return times[j] >= times[i]+10_000 })
				worst = max(worst, j-i)
			}
			if worst > 10*rate {
				t.Errorf("a 10 s window holds %d admissions, want at most %d", worst, 10*rate)
			}
			span := float64(times[len(times)-1]) / 1000
			got := float64(len(times)-1) / span
			if c.fast && got < 0.85*float64(rate) {
				t.Errorf("admitted %.2f per second, want close to %d", got, rate)
			}
			t.Logf("rate %d: %d admissions in %.1f s (%.2f/s), at most %d in a 10 s window", rate, len(times), span, got, worst)
		})
	}
}

// The line never admits far more buyers than the units left can serve: passes
// outstanding and unused stay at most max(admit, 2 x units left); a pass that expires
// unused frees its slot, a used one counts as used; a pass holder's purchase is gated
// by the pass's expiry on Redis' clock.
func TestAdmissionFollowsUnitsAndPasses(t *testing.T) {
	f := newFixture(t, testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	f.sale(1, 5, room(4))
	f.clock.set(t0.Add(-time.Minute))
	for u := int64(1); u <= 40; u++ {
		f.join(1, u)
	}
	f.clock.set(t0)
	step := f.run(1, 10*time.Second)
	if step.Admitted != 10 || step.Outstanding != 10 || step.Waiting != 30 {
		t.Fatalf("after 10 s: %+v, want 10 admitted (2 x 5 units), 10 outstanding, 30 waiting", step)
	}
	admitted := f.admittedSince(1, map[int64]bool{})
	buy := func(user int64, pass waitingroom.Ticket) error {
		exp := time.Time{}
		if pass.PassExpiresAt != nil {
			exp = pass.PassExpiresAt.Time
		}
		_, err := f.stock.Reserve(ctx, reserve.Reservation{Purchase: stock.Purchase{ActivityID: 1, Buyer: buyer.Of(user), Quantity: 1, PassExpires: exp},
			OrderID: fmt.Sprint("o", user), Now: f.clock.now(), LockToken: "t", LockTTL: time.Millisecond})
		return err
	}
	// A purchase without a pass is refused and takes nothing; with one it goes through.
	if err := buy(admitted[0], waitingroom.Ticket{}); !errors.Is(err, stock.ErrNotAdmitted) {
		t.Fatalf("purchase without a pass: %v, want ErrNotAdmitted", err)
	}
	for _, u := range admitted[:2] {
		tk, err := f.rooms.Ticket(ctx, 1, buyer.Of(u))
		if err != nil || tk.Status != waitingroom.Admitted || tk.Pass == "" {
			t.Fatalf("admitted ticket: %+v %v", tk, err)
		}
		// The pass is a JWT, its expiry in whole seconds: never less than the TTL.
		if d := tk.PassExpiresAt.Sub(tk.AdmittedAt.Time); d < time.Minute || d >= time.Minute+time.Second {
			t.Errorf("pass lasts %v from its admission, want [1m, 1m1s) for a TTL of 1m", d)
		}
		if err := buy(u, tk); err != nil {
			t.Fatalf("purchase with a pass: %v", err)
		}
	}
	// 3 units left: the cap is now 6, and 8 passes are unused.
	if step := f.run(1, 5*time.Second); step.Admitted != 0 || step.Outstanding != 8 || step.Used != 2 {
		t.Fatalf("after two purchases: %+v, want none admitted, 8 outstanding, 2 used", step)
	}
	// The passes expire (TTL one minute, rounded up to the second): the unused ones
	// free their slots.
	f.clock.add(time.Minute + time.Second)
	tk, _ := f.rooms.Ticket(ctx, 1, buyer.Of(admitted[5]))
	if tk.Status != waitingroom.Expired || tk.Pass != "" {
		t.Errorf("an unused pass past its TTL: %+v, want expired without a pass", tk)
	}
	if err := buy(admitted[5], waitingroom.Ticket{PassExpiresAt: tk.PassExpiresAt}); !errors.Is(err, stock.ErrNotAdmitted) {
		t.Errorf("purchase with an expired pass: %v, want ErrNotAdmitted", err)
	}
	if tk, _ := f.rooms.Ticket(ctx, 1, buyer.Of(admitted[0])); tk.Status != waitingroom.Admitted {
		t.Errorf("a used pass past its TTL: %+v, want admitted", tk)
	}
	if step := f.run(1, 5*time.Second); step.Admitted != 6 || step.Outstanding != 6 {
		t.Errorf("after the passes expired: %+v, want 6 admitted (2 x 3 units)", step)
	}
	figures, err := f.rooms.Figures(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := waitingroom.Figures{Joined: 40, Waiting: 24, Admitted: 16, Outstanding: 6, Used: 2, Expired: 8}
	if figures != want {
		t.Errorf("figures = %+v, want %+v", figures, want)
	}
}

// run advances the line every 100 ms for d and returns the last step with Admitted
// summed over the run.
func (f *fixture) run(id int64, d time.Duration) waitingroom.Step {
	f.t.Helper()
	var total int64
	var s waitingroom.Step
	for end := f.clock.now().Add(d); f.clock.now().Before(end); f.clock.add(100 * time.Millisecond) {
		s = f.step(id)
		total += s.Admitted
	}
	s.Admitted = total
	return s
}

func (f *fixture) step(id int64) waitingroom.Step {
	f.t.Helper()
	s, err := f.rooms.Admit(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// Many buyers join at once while several advancers run at once: each buyer has one
// place, each is admitted once, and positions are 1..N without a gap.
func TestConcurrentJoinsAndAdvancers(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	f := newFixture(t, rdb)
	const buyers = 3000
	real := waitingroom.New(rdb, auth.NewPasses(secret), f.pow) // Redis' clock
	ctx := context.Background()
	// The sale started a minute ago by Redis' clock.
	now := time.Now()
	if err := f.stock.Load(ctx, stock.Sale{ActivityID: 1, Available: 1_000_000, Total: 1_000_000, Limit: 1,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PriceCents: 1, PayWindow: time.Minute,
		Room: room(100_000)}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var created atomic.Int64
	stop := make(chan struct{})
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := real.Admit(ctx, 1); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var joins sync.WaitGroup
	for g := range 50 {
		joins.Add(1)
		go func() {
			defer joins.Done()
			for u := int64(g); u < buyers; u += 50 {
				for range 2 { // a double click
					_, c, err := real.Join(ctx, 1, buyer.Of(u+1), "", "")
					if err != nil {
						t.Error(err)
						return
					}
					if c {
						created.Add(1)
					}
				}
			}
		}()
	}
	joins.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for {
		fig, err := real.Figures(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if fig.Waiting == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if created.Load() != buyers {
		t.Errorf("%d joins created a ticket, want %d", created.Load(), buyers)
	}
	positions := map[int64]int64{}
	for u := int64(1); u <= buyers; u++ {
		tk, err := real.Ticket(ctx, 1, buyer.Of(u))
		if err != nil || tk.Status != waitingroom.Admitted {
			t.Fatalf("user %d: %+v %v", u, tk, err)
		}
		if other, dup := positions[tk.Position]; dup {
			t.Fatalf("users %d and %d both at position %d", other, u, tk.Position)
		}
		positions[tk.Position] = u
	}
	for p := int64(1); p <= buyers; p++ {
		if _, ok := positions[p]; !ok {
			t.Fatalf("no one at position %d", p)
		}
	}
}

// A buyer of any subject has a place of its own: buyers whose keys a naive scheme would
// mix up ("7" and "~7", "a b" and "a%20b") join once each, in arrival order, are
// admitted with a pass made out to them alone, and their tickets name them ("user_id"
// only for the decimal one). A purchase with the pass counts as its use.
func TestLineOfAnyBuyer(t *testing.T) {
	f := newFixture(t, testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	f.sale(1, 10, room(100))
	f.clock.set(t0)
	buyers := []buyer.ID{"7", "~7", "a b", "a%20b", "auth0|64f1c2", "8f14e45f-ceea-467f-a0e7-5ad1c4b1c0c2"}
	for i, who := range buyers {
		for range 2 { // a second join is the same place
			tk, _, err := f.rooms.Join(ctx, 1, who, "", "")
			if err != nil || tk.Buyer != who || tk.Position != int64(i+1) {
				t.Fatalf("%q joins: %+v, %v; want its own place %d", who, tk, err, i+1)
			}
		}
	}
	f.clock.add(time.Second)
	if _, err := f.rooms.Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	passes := auth.NewPasses(secret)
	for i, who := range buyers {
		tk, err := f.rooms.Ticket(ctx, 1, who)
		if err != nil || tk.Status != waitingroom.Admitted || tk.Buyer != who || tk.Pass == "" {
			t.Fatalf("%q's ticket: %+v, %v; want admitted, with a pass", who, tk, err)
		}
		if n, decimal := who.UserID(); tk.UserID != n || decimal != (tk.UserID != 0) {
			t.Errorf("%q's ticket names user %d", who, tk.UserID)
		}
		if _, err := passes.Verify(tk.Pass, who, 1, f.clock.now()); err != nil {
			t.Errorf("%q's pass for %q: %v", who, who, err)
		}
		other := buyers[(i+1)%len(buyers)]
		if _, err := passes.Verify(tk.Pass, other, 1, f.clock.now()); !errors.Is(err, auth.ErrInvalidPass) {
			t.Errorf("%q's pass for %q: %v, want ErrInvalidPass", who, other, err)
		}
	}
	// "a b" buys with its pass; once the passes expire, its ticket alone stays admitted
	// (the pass was used), the others' expire.
	tk, _ := f.rooms.Ticket(ctx, 1, "a b")
	_, err := f.stock.Reserve(ctx, reserve.Reservation{Purchase: stock.Purchase{ActivityID: 1, Buyer: "a b", Quantity: 1,
		PassExpires: tk.PassExpiresAt.Time}, OrderID: "o1", Now: f.clock.now(), LockToken: "t", LockTTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.set(tk.PassExpiresAt.Time)
	for _, who := range buyers {
		want := waitingroom.Expired
		if who == "a b" {
			want = waitingroom.Admitted
		}
		if got, err := f.rooms.Ticket(ctx, 1, who); err != nil || got.Status != want {
			t.Errorf("%q's ticket after the passes expired: %+v, %v; want %s", who, got, err, want)
		}
	}
}

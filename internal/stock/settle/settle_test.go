package settle_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/settle"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

func TestRollbackClaimSettle(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	stocktest.NewSale(t, s, 1, 3, 3)
	take := func(user int64, key string) reserve.Reservation {
		r := stocktest.Reservation(1, user, 1, key, stocktest.T0)
		if _, err := s.Reserve(ctx, r); err != nil {
			t.Fatal(err)
		}
		// The 1 ms user lock runs out (a lease, by Redis' clock).
		time.Sleep(2 * time.Millisecond)
		return r
	}
	a, b, c := take(1, "ka"), take(2, ""), take(3, "")

	// a: its reserve reply was lost, nobody claimed it: units, allowance and key come back.
	if got, err := s.Rollback(ctx, 1, "1", a.OrderID, "ka"); err != nil || got != settle.RolledBack {
		t.Fatalf("rollback a = %v, %v", got, err)
	}
	if got, _ := s.Rollback(ctx, 1, "1", a.OrderID, "ka"); got != settle.NotQueued {
		t.Errorf("second rollback of a = %v, want NotQueued", got)
	}
	again := stocktest.Reservation(1, 1, 1, "ka", stocktest.T0)
	if r, err := s.Reserve(ctx, again); err != nil || r.Replayed {
		t.Errorf("key of a rolled-back order must be free again: %+v, %v", r, err)
	}

	// b: claimed by a worker before the API's rollback: the rollback must not happen.
	claimed, gen, err := stocktest.Claim(ctx, s, 1, b.OrderID, a.OrderID)
	if err != nil || !claimed[b.OrderID] || claimed[a.OrderID] || gen != 2 {
		t.Fatalf("claim = %v, generation %d, %v; want b claimed, generation 2 (a's rollback moved it too)", claimed, gen, err)
	}
	if got, _ := s.Rollback(ctx, 1, "2", b.OrderID, ""); got != settle.AlreadyClaimed {
		t.Errorf("rollback of claimed b = %v, want AlreadyClaimed", got)
	}

	// Settle b as created and c as failed, c twice in the batch and the batch twice:
	// c's unit comes back once, and the queued units drop by two.
	settle := []settle.Settlement{{OrderID: b.OrderID, Buyer: "2"}, {OrderID: c.OrderID, Buyer: "3", Failed: true},
		{OrderID: c.OrderID, Buyer: "3", Failed: true}}
	for i := 0; i < 2; i++ {
		if err := s.Settle(ctx, 1, settle); err != nil {
			t.Fatal(err)
		}
	}
	sales, _ := s.Read(ctx, []int64{1})
	if sales[1].Available != 1 {
		t.Errorf("available = %d, want 1 (3 - a again - b)", sales[1].Available)
	}
	snap, _ := s.Snapshot(ctx, 1)
	users := snap.Users
	if users["2"] != 1 || users["3"] != 0 || users["1"] != 1 {
		t.Errorf("users = %v, want 1:1 2:1 and none for 3", users)
	}
	queued, units, err := s.QueuedTotals(ctx, 1)
	if err != nil || queued != 1 || units != 1 {
		t.Errorf("queued totals = %d orders, %d units, %v; want 1, 1", queued, units, err)
	}
	stale, err := s.Stale(ctx, 1, stocktest.T0, 10)
	if err != nil || len(stale) != 1 || stale[0].OrderID != again.OrderID || stale[0].Claimed {
		t.Errorf("stale = %+v, %v; want only unclaimed %s", stale, err, again.OrderID)
	}
	if none, _ := s.Stale(ctx, 1, stocktest.T0.Add(-time.Millisecond), 10); len(none) != 0 {
		t.Errorf("orders taken after the cut-off listed as stale: %+v", none)
	}
	mine, _ := s.UserQueued(ctx, []int64{1}, "1")
	if len(mine) != 1 || mine[0].OrderID != again.OrderID || mine[0].Quantity != 1 || mine[0].Limit != 3 {
		t.Errorf("user 1's queued = %+v", mine)
	}
	all, err := s.QueuedOrders(ctx, 1) // the funnel's read: every order still queued, whole
	if err != nil || len(all) != 1 || all[0].OrderID != again.OrderID || all[0].Buyer != "1" || all[0].Quantity != 1 ||
		all[0].CreatedAt.IsZero() || all[0].Offered {
		t.Errorf("queued orders = %+v, %v; want only %s, user 1's unit", all, err, again.OrderID)
	}
}

// The returned set remembers an order from its return until ReturnedRetention after
// MySQL records it (Forget), and no longer: it holds the last half-minute's returns,
// not the sale's history. Ageing is simulated by rewriting a member's score.
func TestReturnedSetBounded(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	s := stocktest.New(rdb)
	ctx := context.Background()
	stocktest.NewSale(t, s, 9, 10, 10)
	const key = "seckill:{act:9}:returns"
	available := func() int64 {
		t.Helper()
		sales, err := s.Read(ctx, []int64{9})
		if err != nil {
			t.Fatal(err)
		}
		return sales[9].Available
	}
	redisNow := func() time.Time {
		now, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return now
	}
	score := func(id string) (float64, bool) {
		v, err := rdb.ZScore(ctx, key, id).Result()
		return v, err == nil
	}
	ret := func(id string) {
		t.Helper()
		if _, err := s.Return(ctx, 9, settle.Returning{OrderID: id, Buyer: "3", Quantity: 1}); err != nil {
			t.Fatal(err)
		}
	}
	age := func(id string, by time.Duration) { // as if MySQL recorded it by ago
		t.Helper()
		if err := rdb.ZAdd(ctx, key, redis.Z{Score: float64(redisNow().Add(-by).UnixMilli()), Member: id}).Err(); err != nil {
			t.Fatal(err)
		}
	}

	ret("o1")
	ret("o1")
	if got := available(); got != 11 {
		t.Fatalf("after returning o1 twice: %d available, want 11 (once)", got)
	}
	if v, ok := score("o1"); !ok || !math.IsInf(v, 1) {
		t.Fatalf("o1 before MySQL records it: score %v (%v), want +inf", v, ok)
	}
	if err := s.Forget(ctx, 9, settle.Returning{OrderID: "o1"}, settle.Returning{OrderID: "never-returned"}); err != nil {
		t.Fatal(err)
	}
	if v, ok := score("o1"); !ok || math.Abs(v-float64(redisNow().UnixMilli())) > 5000 {
		t.Fatalf("o1 once forgotten: score %v (%v), want Redis' clock in ms", v, ok)
	}
	if _, ok := score("never-returned"); ok {
		t.Error("Forget added an order that was never returned")
	}
	ret("o1") // within its retention: still remembered
	if got := available(); got != 11 {
		t.Fatalf("o1 returned again within its retention: %d available, want 11", got)
	}

	// A pinned order (+inf: MySQL has not recorded it) stays however old; forgotten ones
	// older than the retention go at the next return or forget.
	ret("pinned")
	for i := range 1000 {
		id := fmt.Sprintf("old%d", i)
		ret(id)
		age(id, settle.ReturnedRetention+time.Second)
	}
	age("o1", settle.ReturnedRetention-5*time.Second) // recent enough to stay
	ret("o2")
	members, err := rdb.ZRange(ctx, key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(members)
	if want := []string{"o1", "o2", "pinned"}; !slices.Equal(members, want) {
		t.Errorf("returned set after the trim: %v, want %v", members, want)
	}
	if got := available(); got != 10+1+1+1000+1 {
		t.Errorf("%d available, want %d: each order's units once", got, 10+1+1+1000+1)
	}
}

// A replay answered with an order whose purchase then rolls it back (its replicas did not
// confirm in time) leaves the order standing: the replay's 200 stays true. Without a
// replay the roll-back gives the units back and the key is free for a new purchase.
func TestRollbackAfterReplayLeavesOrder(t *testing.T) {
	s := stocktest.New(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	stocktest.NewSale(t, s, 1, 10, 5)
	in := stocktest.T0.Add(time.Minute)
	first, err := s.Reserve(ctx, stocktest.Reservation(1, 7, 1, "tap", in))
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Reserve(ctx, stocktest.Reservation(1, 7, 1, "tap", in))
	if err != nil || !again.Replayed || again.OrderID != first.OrderID {
		t.Fatalf("replay: %+v, %v; want order %s replayed", again, err, first.OrderID)
	}
	if got, err := s.Rollback(ctx, 1, "7", first.OrderID, "tap"); err != nil || got != settle.AlreadyClaimed {
		t.Fatalf("roll back a replayed order: %v, %v; want it standing (AlreadyClaimed)", got, err)
	}
	if _, err := s.Queued(ctx, 1, first.OrderID); err != nil {
		t.Errorf("the replayed order is no longer queued: %v", err)
	}
	third, err := s.Reserve(ctx, stocktest.Reservation(1, 7, 1, "tap", in))
	if err != nil || !third.Replayed || third.OrderID != first.OrderID {
		t.Errorf("a later replay: %+v, %v; want order %s", third, err, first.OrderID)
	}

	other, err := s.Reserve(ctx, stocktest.Reservation(1, 8, 1, "solo", in))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Rollback(ctx, 1, "8", other.OrderID, "solo"); err != nil || got != settle.RolledBack {
		t.Fatalf("roll back an order never replayed: %v, %v; want RolledBack", got, err)
	}
	// The purchase's 1 ms lock runs out (a lease, by Redis' clock).
	time.Sleep(10 * time.Millisecond)
	fresh, err := s.Reserve(ctx, stocktest.Reservation(1, 8, 1, "solo", in))
	if err != nil || fresh.Replayed || fresh.OrderID == other.OrderID {
		t.Errorf("the key after its roll-back: %+v, %v; want a new purchase", fresh, err)
	}
}

// A buyer's queued ids field (stock.QueuedField) holds the ids of exactly the buyer's
// orders still queued: each reservation adds its id, and a settle, failed or not, and a
// roll-back take theirs out; the field goes once none is left. Orders queued in the set
// the release before kept (stock.UserQueuedKey) are still listed by UserQueued.
func TestQueuedIDsFieldFollowsOrders(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	s := stocktest.New(rdb)
	ctx := context.Background()
	stocktest.NewSale(t, s, 1, 10, 5)
	b := stock.One(1)
	var rs []reserve.Reservation
	for range 4 {
		r := stocktest.Reservation(1, 1, 1, "", stocktest.T0)
		if _, err := s.Reserve(ctx, r); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // the 1 ms user lock runs out
		rs = append(rs, r)
	}
	other := stocktest.Reservation(1, 2, 1, "", stocktest.T0)
	if _, err := s.Reserve(ctx, other); err != nil {
		t.Fatal(err)
	}
	field := func(who buyer.ID) string {
		t.Helper()
		v, err := rdb.HGet(ctx, stock.UsersKey(b), stock.QueuedField(who)).Result()
		if errors.Is(err, redis.Nil) {
			return "(none)"
		}
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ids := func(rs ...reserve.Reservation) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.OrderID)
		}
		return strings.Join(out, " ")
	}
	for _, step := range []struct {
		name string
		do   func() error
		want string
	}{
		{"reserved", func() error { return nil }, ids(rs...)},
		{"the second settled", func() error {
			return s.Settle(ctx, 1, []settle.Settlement{{OrderID: rs[1].OrderID, Buyer: "1"}})
		}, ids(rs[0], rs[2], rs[3])},
		{"the fourth failed", func() error {
			return s.Settle(ctx, 1, []settle.Settlement{{OrderID: rs[3].OrderID, Buyer: "1", Failed: true}})
		}, ids(rs[0], rs[2])},
		{"the first rolled back", func() error {
			_, err := s.Rollback(ctx, 1, "1", rs[0].OrderID, "")
			return err
		}, ids(rs[2])},
		{"the last settled, twice in a batch with another buyer's", func() error {
			return s.Settle(ctx, 1, []settle.Settlement{{OrderID: rs[2].OrderID, Buyer: "1"},
				{OrderID: rs[2].OrderID, Buyer: "1"}, {OrderID: rs[1].OrderID, Buyer: "1"}})
		}, "(none)"},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := field("1"); got != step.want {
			t.Errorf("%s: buyer 1's queued ids %q, want %q", step.name, got, step.want)
		}
		if got := field("2"); got != other.OrderID {
			t.Errorf("%s: buyer 2's queued ids %q, want %q", step.name, got, other.OrderID)
		}
	}

	// an order an API of the release before queued: its id in the buyer's set
	if err := rdb.SAdd(ctx, stock.UserQueuedKey(b, "2"), other.OrderID, "gone").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HDel(ctx, stock.UsersKey(b), stock.QueuedField("2")).Err(); err != nil {
		t.Fatal(err)
	}
	if q, err := s.UserQueued(ctx, []int64{1}, "2"); err != nil || len(q) != 1 || q[0].OrderID != other.OrderID {
		t.Errorf("buyer 2's queued orders from the set of the release before = %+v, %v; want %s", q, err, other.OrderID)
	}
}

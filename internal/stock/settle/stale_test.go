package settle_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/stock"
	"seckill/internal/stock/settle"
	"seckill/internal/stock/stocktest"
	"seckill/internal/testutil"
)

// staleIndex is a one-bucket sale whose queued-since index a test writes member by
// member, as reserve calls (several ids) and an older release or the waitlist (one id)
// write it, over orders reserved for real.
type staleIndex struct {
	t     *testing.T
	rdb   *redis.Client
	s     *stocktest.Side
	act   int64
	since string
	users int64
}

func newStaleIndex(t *testing.T, act int64) *staleIndex {
	rdb := testutil.StartRedis(t).Client(t)
	x := &staleIndex{t: t, rdb: rdb, s: stocktest.New(rdb), act: act, since: stock.QueuedSinceKey(stock.One(act))}
	stocktest.NewSale(t, x.s, act, 1000, 1)
	return x
}

// reserve queues n orders of new buyers and returns their ids; the index is left to
// the test (each reserve call wrote its own member: they are dropped).
func (x *staleIndex) reserve(n int) []string {
	x.t.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		x.users++
		r := stocktest.Reservation(x.act, x.users, 1, "", stocktest.T0)
		if _, err := x.s.Reserve(ctx, r); err != nil {
			x.t.Fatal(err)
		}
		ids[i] = r.OrderID
	}
	if err := x.rdb.Del(ctx, x.since).Err(); err != nil {
		x.t.Fatal(err)
	}
	return ids
}

// index writes members: each a list of ids, scored ago before T0.
func (x *staleIndex) index(ago time.Duration, members ...[]string) {
	x.t.Helper()
	zs := make([]redis.Z, len(members))
	for i, ids := range members {
		zs[i] = redis.Z{Score: float64(stocktest.T0.Add(-ago).UnixMilli()), Member: strings.Join(ids, " ")}
	}
	if err := x.rdb.ZAdd(context.Background(), x.since, zs...).Err(); err != nil {
		x.t.Fatal(err)
	}
}

func (x *staleIndex) settle(ids ...string) {
	x.t.Helper()
	var done []settle.Settlement
	for _, id := range ids {
		q, err := x.s.Queued(context.Background(), x.act, id)
		if err != nil {
			x.t.Fatal(err)
		}
		done = append(done, settle.Settlement{OrderID: id, Buyer: q.Buyer})
	}
	if err := x.s.Settle(context.Background(), x.act, done); err != nil {
		x.t.Fatal(err)
	}
}

func (x *staleIndex) members() []string {
	x.t.Helper()
	ms, err := x.rdb.ZRange(context.Background(), x.since, 0, -1).Result()
	if err != nil {
		x.t.Fatal(err)
	}
	return ms
}

func ids(qs []stock.QueuedOrder) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.OrderID
		if q.Claimed {
			out[i] += "*"
		}
	}
	return out
}

// The repair pass lists the queued orders of each member taken at or before its cut-off,
// oldest member first and in a member's order, claimed ones marked; drops a member none
// of whose orders is queued, whether written by a reserve call (several ids) or one
// order (an older release, the waitlist); keeps a member with an order queued, and one
// after the cut-off; and lists at most limit orders.
func TestStaleReadsMembersOfOneOrMoreOrders(t *testing.T) {
	x := newStaleIndex(t, 1)
	o := x.reserve(10)
	x.index(5*time.Second, o[0:3])   // partly settled: o[1]
	x.index(4*time.Second, o[3:5])   // wholly settled
	x.index(3*time.Second, o[5:6])   // one order, queued and claimed
	x.index(2*time.Second, o[6:7])   // one order, settled
	x.index(-time.Second, o[7:9])    // after the cut-off
	x.index(-2*time.Second, o[9:10]) // after the cut-off, settled
	x.settle(o[1], o[3], o[4], o[6], o[9])
	if claimed, _, err := stocktest.Claim(context.Background(), x.s, 1, o[5]); err != nil || !claimed[o[5]] {
		t.Fatalf("claim = %v, %v", claimed, err)
	}
	all := []string{o[0], o[2], o[5] + "*"}
	for _, limit := range []int{1, 2, 3, 10} {
		got, err := x.s.Stale(context.Background(), 1, stocktest.T0, limit)
		if err != nil || !slices.Equal(ids(got), all[:min(limit, len(all))]) {
			t.Errorf("limit %d: stale = %v, %v; want %v", limit, ids(got), err, all[:min(limit, len(all))])
		}
	}
	want := []string{strings.Join(o[0:3], " "), o[5], strings.Join(o[7:9], " "), o[9]}
	if got := x.members(); !slices.Equal(got, want) {
		t.Errorf("index after the passes: %q, want %q", got, want)
	}
}

// The oldest queued order a sale's pages stop before (OldestQueued) is the score of the
// first member with an order still queued: no later than any queued order, and not held
// back by members whose orders all left, which it drops on the way (the API reads it,
// whether or not a repair pass runs); zero, and an empty index, once none is queued.
func TestOldestQueuedPassesSettledMembers(t *testing.T) {
	x := newStaleIndex(t, 4)
	ctx := context.Background()
	o := x.reserve(5)
	x.index(5*time.Second, o[0:2]) // wholly settled
	x.index(3*time.Second, o[2:4]) // partly settled: o[2]
	x.index(time.Second, o[4:5])
	x.settle(o[0], o[1], o[2])
	for _, tc := range []struct {
		settle  []string
		want    time.Time
		members int
	}{
		{nil, stocktest.T0.Add(-3 * time.Second), 2},
		{[]string{o[3]}, stocktest.T0.Add(-time.Second), 1},
		{[]string{o[4]}, time.Time{}, 0},
	} {
		x.settle(tc.settle...)
		got, err := x.s.OldestQueued(ctx, 4)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("after settling %v: oldest queued %v, %v; want %v", tc.settle, got, err, tc.want)
		}
		if ms := x.members(); len(ms) != tc.members {
			t.Errorf("after settling %v: index %q, want %d members", tc.settle, ms, tc.members)
		}
	}
}

// A pass walks past any number of members whose orders all left the queue, in script
// calls of at most settle.StaleWalk members each: behind 4,999 members of 64 orders
// gone (as many as a reserve call writes) and one whose last order is still queued,
// then a member of one queued order, a single Stale finds both orders, in
// 5,000/StaleWalk + 1 calls, and leaves only their two members.
func TestStaleWalksPastSettledMembers(t *testing.T) {
	x := newStaleIndex(t, 2)
	o := x.reserve(2)
	const members = 5000
	zs := make([]redis.Z, members)
	for i := range zs {
		ids := make([]string, 64)
		for j := range ids {
			ids[j] = fmt.Sprintf("gone%d-%d", i, j) // never queued
		}
		if i == members-1 {
			ids[63] = o[0]
		}
		zs[i] = redis.Z{Score: float64(stocktest.T0.Add(-time.Minute + time.Duration(i)*time.Millisecond).UnixMilli()),
			Member: strings.Join(ids, " ")}
	}
	if err := x.rdb.ZAdd(context.Background(), x.since, zs...).Err(); err != nil {
		t.Fatal(err)
	}
	x.index(time.Second, o[1:2])
	var calls atomic.Int64
	x.rdb.AddHook(staleCalls{since: x.since, n: &calls})

	got, err := x.s.Stale(context.Background(), 2, stocktest.T0, 10)
	if err != nil || !slices.Equal(ids(got), o) {
		t.Fatalf("stale = %v, %v; want %v", ids(got), err, o)
	}
	if want := int64(members/settle.StaleWalk + 1); calls.Load() != want {
		t.Errorf("%d script calls, want %d", calls.Load(), want)
	}
	if ms := x.members(); len(ms) != 2 || !strings.HasSuffix(ms[0], " "+o[0]) || ms[1] != o[1] {
		t.Errorf("index after the pass: %d members, want the two with %v", len(ms), o)
	}
}

// staleCalls counts the script calls whose first key is a since index (stale.lua's),
// but for an EVALSHA that found the script not loaded yet (EVAL runs it then).
type staleCalls struct {
	since string
	n     *atomic.Int64
}

func (h staleCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h staleCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if a := cmd.Args(); (cmd.Name() == "evalsha" || cmd.Name() == "eval") && len(a) > 3 && a[3] == h.since &&
			!redis.HasErrorPrefix(err, "NOSCRIPT") {
			h.n.Add(1)
		}
		return err
	}
}

func (h staleCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// BenchmarkStaleWalk is the cost of the longest script call of a repair pass: walking
// past settle.StaleWalk members of 64 orders that all left the queue (ns/op is one
// pass, whose second call finds nothing more).
//
//	go test -run '^$' -bench StaleWalk ./internal/stock/settle/
func BenchmarkStaleWalk(b *testing.B) {
	rdb := testutil.StartRedis(b).Client(b)
	s := stocktest.New(rdb)
	stocktest.NewSale(b, s, 3, 1000, 1)
	ctx := context.Background()
	since := stock.QueuedSinceKey(stock.One(3))
	zs := make([]redis.Z, settle.StaleWalk)
	for n := 0; n < b.N; n++ {
		b.StopTimer()
		for i := range zs {
			ids := make([]string, 64)
			for j := range ids {
				ids[j] = fmt.Sprintf("01KBQ9Z8V3N6X2M4R7T5W0Y1C%d-%d-%d", n, i, j) // an order id's length, never queued
			}
			zs[i] = redis.Z{Score: float64(stocktest.T0.Add(-time.Minute).UnixMilli()), Member: strings.Join(ids, " ")}
		}
		if err := rdb.ZAdd(ctx, since, zs...).Err(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if got, err := s.Stale(ctx, 3, stocktest.T0, 500); err != nil || len(got) != 0 {
			b.Fatalf("stale = %v, %v", got, err)
		}
	}
	b.StopTimer()
	if n, err := rdb.ZCard(ctx, since).Result(); err != nil || n != 0 {
		b.Fatalf("%d members left, %v", n, err)
	}
}

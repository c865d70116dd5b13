package reserve

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/settle"
	"seckill/internal/testutil"
)

var (
	start    = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	orderSeq atomic.Int64
)

func loadSale(t testing.TB, s *side, id, avail int64, limit int) {
	t.Helper()
	loadBuckets(t, s, id, avail, limit, 1)
}

// loadBuckets loads a sale of avail units in k buckets, open from start for an hour.
func loadBuckets(t testing.TB, s *side, id, avail int64, limit, k int) {
	t.Helper()
	err := s.Load(context.Background(), stock.Sale{ActivityID: id, Available: avail, Total: avail,
		Limit: limit, StartsAt: start, EndsAt: start.Add(time.Hour), PriceCents: 100, PayWindow: time.Minute, Buckets: k})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
}

func purchase(act, user int64, qty int) Reservation {
	n := orderSeq.Add(1)
	return Reservation{Purchase: stock.Purchase{ActivityID: act, Buyer: buyer.Of(user), Quantity: qty},
		OrderID: fmt.Sprintf("c%d", n), Now: start.Add(time.Minute), LockToken: fmt.Sprintf("l%d", n), LockTTL: time.Minute}
}

func (b *coalescer) sent() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

func (b *coalescer) waitingFor(id int64) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q := b.sales[stock.One(id)]; q != nil {
		return len(q.waiting)
	}
	return 0
}

// A crowd of one sale on one Stock: its purchases share script calls, and each is
// still decided on its own: exactly the stock is taken, nobody past the limit, every
// buyer answered, and nothing left of the coalescer once the crowd is gone.
func TestCoalescedCrowd(t *testing.T) {
	s := newSide(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	const buyers, units = 400, 150
	loadSale(t, s, 1, units, 2)
	loadSale(t, s, 2, units, 2) // a second sale at the same time, in its own calls

	var wg sync.WaitGroup
	var taken, soldOut [3]atomic.Int64
	for u := range buyers {
		for _, act := range []int64{1, 2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.Reserve(ctx, purchase(act, int64(u), 1))
				switch {
				case err == nil:
					taken[act].Add(1)
				case errors.Is(err, stock.ErrSoldOut):
					soldOut[act].Add(1)
				default:
					t.Errorf("sale %d user %d: %v", act, u, err)
				}
			}()
		}
	}
	wg.Wait()
	for _, act := range []int64{1, 2} {
		if taken[act].Load() != units || soldOut[act].Load() != buyers-units {
			t.Errorf("sale %d: %d taken and %d sold out, want %d and %d",
				act, taken[act].Load(), soldOut[act].Load(), units, buyers-units)
		}
		sales, err := s.Read(ctx, []int64{act})
		if err != nil || sales[act].Available != 0 {
			t.Errorf("sale %d: available %+v (%v), want 0", act, sales[act], err)
		}
		snap, err := s.Snapshot(ctx, act)
		if err != nil {
			t.Fatal(err)
		}
		var held int64
		for u, n := range snap.Users {
			if n != 1 {
				t.Errorf("sale %d: buyer %s holds %d, want 1", act, u, n)
			}
			held += n
		}
		if held != units {
			t.Errorf("sale %d: users hold %d units, want %d", act, held, units)
		}
	}
	if sent := s.reserving.sent(); sent >= 2*buyers {
		t.Errorf("%d script calls for %d purchases: none coalesced", sent, 2*buyers)
	} else {
		t.Logf("%d script calls for %d purchases", sent, 2*buyers)
	}
	s.reserving.mu.Lock()
	left := len(s.reserving.sales)
	s.reserving.mu.Unlock()
	if left != 0 {
		t.Errorf("%d sales left in the coalescer after the crowd", left)
	}
}

// Purchases that wait together go in one call in their order of arrival, each with
// its own answer: the first takes the last unit, the second (the same user) meets the
// lock the first took, the third hears sold out, and a purchase whose context ended
// while it waited is not sent at all.
func TestCoalescedInArrivalOrder(t *testing.T) {
	s := newSide(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	loadSale(t, s, 1, 3, 5)

	// The first callsPerSale purchases are held in flight, after their script ran, until
	// release is closed.
	release := make(chan struct{})
	var held atomic.Int64
	send := s.reserving.send
	var batches [][]buyer.ID
	var mu sync.Mutex
	s.reserving.send = func(ctx context.Context, calls []*reserveCall) {
		mu.Lock()
		var users []buyer.ID
		for _, c := range calls {
			users = append(users, c.r.Buyer)
		}
		batches = append(batches, users)
		mu.Unlock()
		send(ctx, calls)
		// counted once its script ran: the test goes on when both held calls have taken
		// their units (counted before, a call descheduled on its way to Redis ran after
		// the later batch, and its purchase met sold out).
		if held.Add(1) <= callsPerSale {
			<-release
		}
	}

	type answer struct {
		r   Reserved
		err error
	}
	reserve := func(ctx context.Context, r Reservation) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			got, err := s.Reserve(ctx, r)
			ch <- answer{got, err}
		}()
		return ch
	}
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for s.reserving.waitingFor(1) != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d purchases waiting, want %d", s.reserving.waitingFor(1), n)
			}
			time.Sleep(time.Millisecond)
		}
	}

	first := reserve(ctx, purchase(1, 1, 1))
	second := reserve(ctx, purchase(1, 2, 1))
	for deadline := time.Now().Add(5 * time.Second); held.Load() < callsPerSale; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls held, want %d", held.Load(), callsPerSale)
		}
	}
	a := reserve(ctx, purchase(1, 10, 1))
	waitFor(1)
	b := reserve(ctx, purchase(1, 10, 1))
	waitFor(2)
	gone, cancel := context.WithCancel(ctx)
	c := reserve(gone, purchase(1, 11, 1))
	waitFor(3)
	cancel()
	late := purchase(1, 13, 1)
	late.Timeout = 20 * time.Millisecond // past before the calls in flight come back
	e := reserve(ctx, late)
	waitFor(4)
	d := reserve(ctx, purchase(1, 12, 1))
	waitFor(5)
	time.Sleep(2 * late.Timeout)
	close(release)

	for i, ch := range []<-chan answer{first, second, a} {
		if got := <-ch; got.err != nil {
			t.Errorf("purchase %d: %v", i+1, got.err)
		}
	}
	if got := <-b; !errors.Is(got.err, stock.ErrBusy) {
		t.Errorf("the same user again in the batch: %v, want ErrBusy", got.err)
	}
	if got := <-c; !errors.Is(got.err, context.Canceled) {
		t.Errorf("a purchase cancelled while waiting: %v, want context.Canceled", got.err)
	}
	if got := <-e; !errors.Is(got.err, context.DeadlineExceeded) {
		t.Errorf("a purchase whose Timeout passed while waiting: %v, want context.DeadlineExceeded", got.err)
	}
	if got := <-d; !errors.Is(got.err, stock.ErrSoldOut) {
		t.Errorf("the purchase after the last unit: %v, want ErrSoldOut", got.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if last := batches[len(batches)-1]; fmt.Sprint(last) != "[10 10 12]" {
		t.Errorf("batches %v: the last should be users [10 10 12] in their order", batches)
	}
	snap, err := s.Snapshot(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Users["11"] != 0 || snap.Users["13"] != 0 || snap.Users["10"] != 1 {
		t.Errorf("holdings %v: user 10 should hold 1 and users 11 and 13 nothing", snap.Users)
	}
}

// A call's context ends at the earliest deadline of its purchases, their contexts' or
// their own (Reservation.Timeout), and has none when none of them has one.
func TestBatchContextEndsAtEarliestDeadline(t *testing.T) {
	now := time.Now()
	at := func(d time.Duration) time.Time { return now.Add(d) }
	ctxBy := func(d time.Duration) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), at(d))
		t.Cleanup(cancel)
		return ctx
	}
	for _, tc := range []struct {
		name  string
		calls []*reserveCall
		want  time.Time // zero: no deadline
	}{
		{"none", []*reserveCall{{ctx: context.Background()}, {ctx: context.Background()}}, time.Time{}},
		{"a context's", []*reserveCall{{ctx: context.Background()}, {ctx: ctxBy(time.Hour)}}, at(time.Hour)},
		{"a purchase's own", []*reserveCall{{ctx: context.Background(), deadline: at(time.Minute)}, {ctx: ctxBy(time.Hour)}},
			at(time.Minute)},
		{"a context's before the purchase's own", []*reserveCall{{ctx: ctxBy(time.Second), deadline: at(time.Minute)},
			{ctx: context.Background(), deadline: at(time.Hour)}}, at(time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := batchContext(tc.calls)
			defer cancel()
			got, ok := ctx.Deadline()
			if ok != !tc.want.IsZero() || !got.Equal(tc.want) {
				t.Errorf("deadline %v (%v), want %v", got, ok, tc.want)
			}
		})
	}
}

// redisCPU is the server's CPU time so far (INFO cpu: its threads' user and system).
func redisCPU(b *testing.B, s *side) time.Duration {
	b.Helper()
	info, err := s.rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for _, f := range []string{"used_cpu_sys:", "used_cpu_user:"} {
		i := strings.Index(info, f)
		if i < 0 {
			b.Fatalf("no %s in INFO cpu", f)
		}
		rest := info[i+len(f):]
		v, err := strconv.ParseFloat(strings.TrimSpace(rest[:strings.IndexAny(rest, "\r\n")]), 64)
		if err != nil {
			b.Fatal(err)
		}
		sum += v
	}
	return time.Duration(sum * float64(time.Second))
}

// BenchmarkReserveCoalesced measures the reserve step alone on one Redis as this
// project runs it (AOF, appendfsync always) and, for comparison, without AOF: one
// script call for batches of 1 to 64 purchases of one sale, sent by 8 goroutines, with
// the server's CPU per purchase (redis-µs/purchase). Figures: docs/performance.md's git
// history.
//
//	go test -run - -bench ReserveCoalesced -benchtime 20000x ./internal/stock
func BenchmarkReserveCoalesced(b *testing.B) {
	for _, aof := range []struct {
		name string
		args []string
	}{
		{"aof=always", []string{"--appendonly", "yes", "--appendfsync", "always"}},
		{"aof=off", nil},
	} {
		s := newSide(testutil.StartRedis(b, aof.args...).Client(b))
		for _, size := range []int{1, 4, 16, 64} {
			b.Run(fmt.Sprintf("%s/batch=%d", aof.name, size), func(b *testing.B) {
				act := orderSeq.Add(1)
				loadSale(b, s, act, 1<<40, 1)
				var user atomic.Int64
				cpu := redisCPU(b, s)
				b.SetParallelism(4) // 8 senders on 2 cores
				b.RunParallel(func(pb *testing.PB) {
					calls := make([]*reserveCall, 0, size)
					for pb.Next() {
						calls = append(calls, &reserveCall{ctx: context.Background(), r: purchase(act, user.Add(1), 1), b: stock.One(act)})
						if len(calls) == size {
							s.reserveAll(context.Background(), calls)
							for _, c := range calls {
								if c.err != nil || c.reply[0] != int64(0) {
									b.Fatalf("%v %v", c.reply, c.err)
								}
							}
							calls = calls[:0]
						}
					}
				})
				b.ReportMetric(float64((redisCPU(b, s)-cpu).Microseconds())/float64(b.N), "redis-µs/purchase")
			})
		}
	}
}

// A purchase that fails with an error in the middle of a call (here the key of its
// Idempotency-Key is of the wrong type) fails the call, and the purchases before it in
// the call stay whole: their units taken from avail and counted in qunits, their orders
// queued and in the since index, where the repair pass and their roll-backs find them.
// Those are written once per call (reserve.go), so they must be written before the
// error.
func TestErrorHalfwayLeavesEarlierPurchasesWhole(t *testing.T) {
	s := newSide(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	loadSale(t, s, 1, 10, 5)
	first, broken, last := purchase(1, 1, 2), purchase(1, 2, 1), purchase(1, 3, 1)
	broken.IdempotencyKey = "k1"
	badKey := stock.IdempotencyKey(stock.One(1), broken.Buyer, broken.IdempotencyKey)
	if err := s.rdb.HSet(ctx, badKey, "not", "a string").Err(); err != nil {
		t.Fatal(err)
	}
	var calls []*reserveCall
	for _, r := range []Reservation{first, broken, last} {
		calls = append(calls, &reserveCall{ctx: ctx, r: r, fingerprint: r.Fingerprint(), b: stock.One(1)})
	}
	s.reserveAll(ctx, calls)
	for i, c := range calls {
		if c.err == nil || !strings.Contains(c.err.Error(), "WRONGTYPE") {
			t.Errorf("purchase %d: %v, want the call's WRONGTYPE error", i+1, c.err)
		}
	}

	sale, err := s.rdb.HMGet(ctx, stock.SaleKey(stock.One(1)), "avail", "qunits").Result()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sale) != "[8 2]" { // the first purchase's two units
		t.Errorf("avail and qunits %v, want [8 2]", sale)
	}
	if _, err := s.rdb.ZScore(ctx, stock.QueuedSinceKey(stock.One(1)), first.OrderID).Result(); err != nil {
		t.Errorf("the first purchase's order is not in the since index: %v", err)
	}
	if q, err := s.UserQueued(ctx, []int64{1}, first.Buyer); err != nil || len(q) != 1 || q[0].OrderID != first.OrderID {
		t.Errorf("the first buyer's queued orders = %+v, %v; want its order", q, err)
	}
	for _, r := range []Reservation{broken, last} {
		if q, err := s.Queued(ctx, 1, r.OrderID); err == nil {
			t.Errorf("the purchase of buyer %s, at or after the error, is queued: %+v", r.Buyer, q)
		}
	}

	if got, err := s.Rollback(ctx, 1, first.Buyer, first.OrderID, ""); err != nil || got != settle.RolledBack {
		t.Errorf("roll back the first purchase: %v %v, want settle.RolledBack", got, err)
	}
	sale, err = s.rdb.HMGet(ctx, stock.SaleKey(stock.One(1)), "avail", "qunits").Result()
	if err != nil || fmt.Sprint(sale) != "[10 0]" {
		t.Errorf("after the roll-back: avail and qunits %v (%v), want [10 0]", sale, err)
	}
	if q, err := s.UserQueued(ctx, []int64{1}, first.Buyer); err != nil || len(q) != 0 {
		t.Errorf("the first buyer's queued orders after the roll-back = %+v, %v; want none", q, err)
	}
	// The index's member leaves lazily: the repair pass drops it, none of its orders queued.
	if stale, err := s.Stale(ctx, 1, first.Now, 10); err != nil || len(stale) != 0 {
		t.Errorf("stale after the roll-back = %+v, %v; want none", stale, err)
	}
	if n, err := s.rdb.ZCard(ctx, stock.QueuedSinceKey(stock.One(1))).Result(); err != nil || n != 0 {
		t.Errorf("since index holds %d members after the roll-back and the repair pass (%v), want 0", n, err)
	}
}

// A call indexes its reservations as one member of the queued-since index: their order
// ids in the call's order, scored by the earliest (a refused purchase is not in it).
// Settling an order leaves the member; the repair pass lists the orders still queued and
// drops the member once none is.
func TestCallIndexesItsOrdersAsOneMember(t *testing.T) {
	s := newSide(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	loadSale(t, s, 1, 10, 2)
	a, refused, b, c := purchase(1, 1, 1), purchase(1, 2, 3), purchase(1, 3, 1), purchase(1, 4, 2)
	a.Now, b.Now, c.Now = start.Add(2*time.Minute), start.Add(time.Minute), start.Add(3*time.Minute)
	var calls []*reserveCall
	for _, r := range []Reservation{a, refused, b, c} {
		calls = append(calls, &reserveCall{ctx: ctx, r: r, b: stock.One(1)})
	}
	s.reserveAll(ctx, calls)
	for i, call := range calls {
		if call.err != nil {
			t.Fatalf("purchase %d: %v", i+1, call.err)
		}
	}
	since := stock.QueuedSinceKey(stock.One(1))
	index := func() []string {
		t.Helper()
		zs, err := s.rdb.ZRangeWithScores(ctx, since, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, z := range zs {
			out = append(out, fmt.Sprintf("%v@%d", z.Member, int64(z.Score)))
		}
		return out
	}
	member := fmt.Sprintf("%s %s %s@%d", a.OrderID, b.OrderID, c.OrderID, b.Now.UnixMilli())
	if got := index(); fmt.Sprint(got) != "["+member+"]" {
		t.Fatalf("since index %v, want [%s]", got, member)
	}

	if err := s.Settle(ctx, 1, []settle.Settlement{{OrderID: b.OrderID, Buyer: b.Buyer}}); err != nil {
		t.Fatal(err)
	}
	if got := index(); fmt.Sprint(got) != "["+member+"]" {
		t.Errorf("after settling b: since index %v, want [%s] still", got, member)
	}
	stale, err := s.Stale(ctx, 1, c.Now, 10)
	if err != nil || len(stale) != 2 || stale[0].OrderID != a.OrderID || stale[1].OrderID != c.OrderID {
		t.Errorf("stale = %+v, %v; want a and c", stale, err)
	}
	if err := s.Settle(ctx, 1, []settle.Settlement{{OrderID: a.OrderID, Buyer: a.Buyer},
		{OrderID: c.OrderID, Buyer: c.Buyer}}); err != nil {
		t.Fatal(err)
	}
	if got := index(); fmt.Sprint(got) != "["+member+"]" {
		t.Errorf("after settling all: since index %v, want [%s] until the repair pass", got, member)
	}
	if stale, err := s.Stale(ctx, 1, c.Now, 10); err != nil || len(stale) != 0 {
		t.Errorf("stale = %+v, %v; want none", stale, err)
	}
	if got := index(); len(got) != 0 {
		t.Errorf("after the repair pass: since index %v, want empty", got)
	}
}

// The reserve script sends the sale's terms once per call; every purchase of the call
// gets them in its answer, with its own units left and its order as queued, and one
// refused in the middle of the call (user 1 again, while the lock of their first
// purchase is held) gets its own answer.
func TestCallAnswersEachPurchaseWithTheTerms(t *testing.T) {
	s := newSide(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	err := s.Load(ctx, stock.Sale{ActivityID: 1, Available: 10, Total: 10, Limit: 5, StartsAt: start,
		EndsAt: start.Add(time.Hour), PriceCents: 250, PayWindow: 90 * time.Second, ParticipationCap: 1})
	if err != nil {
		t.Fatal(err)
	}
	rs := []Reservation{purchase(1, 1, 2), purchase(1, 2, 1), purchase(1, 1, 1), purchase(1, 3, 3)}
	var calls []*reserveCall
	for _, r := range rs {
		calls = append(calls, &reserveCall{ctx: ctx, r: r, b: stock.One(1)})
	}
	s.reserveAll(ctx, calls)
	left := []int64{8, 7, -1, 4}
	for i, c := range calls {
		if c.err != nil {
			t.Fatalf("purchase %d: %v", i+1, c.err)
		}
		got, err := decodeReserved(c.r, c.fingerprint, c.reply, c.terms)
		if left[i] < 0 {
			if !errors.Is(err, stock.ErrBusy) {
				t.Errorf("purchase %d: %+v %v, want ErrBusy", i+1, got, err)
			}
			continue
		}
		order := stock.QueuedOrder{OrderID: c.r.OrderID, ActivityID: 1, Buyer: c.r.Buyer, Quantity: c.r.Quantity,
			CreatedAt: c.r.Now, Limit: 5, ParticipationCap: 1, AmountCents: 250 * int64(c.r.Quantity),
			ExpiresAt: c.r.Now.Add(90 * time.Second)}
		want := Reserved{OrderID: c.r.OrderID, Order: order, Available: left[i], Limit: 5, PriceCents: 250,
			PayWindow: 90 * time.Second, ParticipationCap: 1}
		if err != nil || got != want {
			t.Errorf("purchase %d: %+v %v, want %+v", i+1, got, err, want)
		}
	}
}

// A replay of an Idempotency-Key in the same call as the purchase that used it sees that
// purchase, though the call writes its order only after its last purchase: the replay
// gets the order, marks the key (so the purchase's roll-back leaves the order standing
// for the replay's answer), and the key with another body is refused with that order.
func TestReplayInTheCallOfItsPurchase(t *testing.T) {
	s := newSide(testutil.StartRedis(t).Client(t))
	ctx := context.Background()
	loadSale(t, s, 1, 10, 5)
	first, again, other := purchase(1, 7, 1), purchase(1, 7, 1), purchase(1, 7, 2)
	var calls []*reserveCall
	for _, r := range []*Reservation{&first, &again, &other} {
		r.IdempotencyKey = "tap"
		calls = append(calls, &reserveCall{ctx: ctx, r: *r, fingerprint: r.Fingerprint(), b: stock.One(1)})
	}
	s.reserveAll(ctx, calls)
	var got [3]Reserved
	var errs [3]error
	for i, c := range calls {
		if c.err != nil {
			t.Fatalf("purchase %d: %v", i+1, c.err)
		}
		got[i], errs[i] = decodeReserved(c.r, c.fingerprint, c.reply, c.terms)
	}
	if errs[0] != nil || got[0].OrderID != first.OrderID || got[0].Available != 9 {
		t.Fatalf("purchase: %+v %v, want order %s with 9 left", got[0], errs[0], first.OrderID)
	}
	if errs[1] != nil || !got[1].Replayed || got[1].OrderID != first.OrderID {
		t.Errorf("replay in the same call: %+v %v, want order %s replayed", got[1], errs[1], first.OrderID)
	}
	var reused *stock.KeyReusedError
	if !errors.As(errs[2], &reused) || reused.OrderID != first.OrderID {
		t.Errorf("the key with another quantity: %+v %v, want stock.ErrKeyReused naming %s", got[2], errs[2], first.OrderID)
	}
	if res, err := s.Rollback(ctx, 1, "7", first.OrderID, "tap"); err != nil || res != settle.AlreadyClaimed {
		t.Errorf("roll back the replayed order: %v %v, want it standing (settle.AlreadyClaimed)", res, err)
	}
	if _, err := s.Queued(ctx, 1, first.OrderID); err != nil {
		t.Errorf("the replayed order is not queued: %v", err)
	}
	if avail, err := s.rdb.HGet(ctx, stock.SaleKey(stock.One(1)), "avail").Result(); err != nil || avail != "9" {
		t.Errorf("avail %q (%v), want 9: one unit taken", avail, err)
	}
}

// Package stock keeps the sale's stock in Redis: it loads a sale, takes units for a
// purchase in one atomic Lua script, gives them back, and tracks orders from the moment
// they are taken from stock (queued) until the worker has written them to MySQL.
// It owns every Redis key of a sale (see keys.go).
package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
)

// Errors of a purchase. Handlers map them to the HTTP contract.
var (
	ErrNoSale            = errors.New("no such sale in Redis")
	ErrBusy              = errors.New("the same user's previous purchase is still in progress")
	ErrNotStarted        = errors.New("the sale has not started yet")
	ErrEnded             = errors.New("the sale has ended")
	ErrSoldOut           = errors.New("the sale is sold out")
	ErrLimitExceeded     = errors.New("the purchase would exceed the per-user limit")
	ErrQuantityOverLimit = errors.New("quantity is above the per-user limit")
	ErrKeyReused         = errors.New("the Idempotency-Key was used with a different body")
	ErrRateLimited       = errors.New("too many purchase attempts; slow down")
	// ErrNoVariant is a purchase that names no variant of a sale of variants, or names
	// one in a sale without.
	ErrNoVariant = errors.New("variant must name one of the sale's variants")
)

// DetailError is a purchase error with a sentence for the buyer.
type DetailError struct {
	Err    error
	Detail string
}

func (e *DetailError) Error() string { return e.Err.Error() + ": " + e.Detail }
func (e *DetailError) Unwrap() error { return e.Err }

// RateLimitedError is ErrRateLimited with the time until the user's next attempt would
// be allowed.
type RateLimitedError struct{ Wait time.Duration }

func (e *RateLimitedError) Error() string { return ErrRateLimited.Error() }
func (e *RateLimitedError) Unwrap() error { return ErrRateLimited }

// RetryAfter is how long the buyer should wait.
func (e *RateLimitedError) RetryAfter() time.Duration { return e.Wait }

// Stock is the Redis side of every sale.
type Stock struct {
	rdb       redis.UniversalClient
	soldOut   *soldOutFlags
	reserving *coalescer
	sizes     sync.Map // activity id -> its buckets (int), once read (bucket.go)
	refilling refills
	// now is when units that come back are offered to the waitlist (the orders' time,
	// and the sale's end judged by it).
	now func() time.Time
}

// New returns a Stock on rdb.
func New(rdb redis.UniversalClient) *Stock {
	s := &Stock{rdb: rdb, soldOut: newSoldOutFlags(), now: time.Now}
	s.reserving = newCoalescer(s.reserveAll)
	return s
}

// Sale is the state Redis checks purchases against.
type Sale struct {
	ActivityID int64
	Available  int64
	Total      int64
	Limit      int
	StartsAt   time.Time
	EndsAt     time.Time
	PriceCents int64
	PayWindow  time.Duration
	// Gen is the sale's generation in Redis, and Epoch its state's epoch, which the last
	// rebuild from MySQL wrote (see rebuild.go).
	Gen, Epoch int64
	// Group-buy: Kind is "group" for a sale of seats in groups of GroupSize that fill
	// within GroupWindow, else "sale". ParticipationCap caps the orders one buyer holds
	// (0: no cap), in a sale of either kind.
	Kind             string
	GroupSize        int
	GroupWindow      time.Duration
	ParticipationCap int
	// Room is the sale's waiting room (room.go).
	Room Room
	// EarlyAt is when the holders of the sale's access codes may begin to buy (early
	// access, codes.go); zero for no early window.
	EarlyAt time.Time
	// Buckets is how many buckets hold the sale's stock and buyers (bucket.go); 0 or 1
	// for one.
	Buckets int
	// Reserve is, of Available, the units in the reserve (a sale of several buckets).
	Reserve int64
	// Variants are a sale of variants' units by index (variants.go), none for a sale
	// without; Total and Available are then their sums. VariantLimit caps the units of
	// one variant a buyer holds (0: no cap but the per-user limit).
	Variants     []VariantStock
	VariantLimit int
}

// fields are the settings of a sale's hash, as Load and Rebuild write them.
func (sale Sale) fields() []any {
	kind := sale.Kind
	if kind == "" {
		kind = "sale"
	}
	fields := []any{"total", sale.Total, "limit", sale.Limit,
		"start", sale.StartsAt.UnixMilli(), "end", sale.EndsAt.UnixMilli(),
		"price", sale.PriceCents, "paywin", int64(sale.PayWindow / time.Second),
		"kind", kind, "gsize", sale.GroupSize, "gwin", int64(sale.GroupWindow / time.Second),
		"plimit", sale.ParticipationCap, "early", sale.earlyAt().UnixMilli()}
	if sale.Buckets > 1 {
		fields = append(fields, "buckets", sale.Buckets)
	}
	if len(sale.Variants) > 0 {
		fields = append(fields, "variants", len(sale.Variants), "vlimit", sale.VariantLimit, tableField, tableValue)
		for i, v := range sale.Variants {
			fields = append(fields, variantField("total", VariantAt(i)), v.Total)
		}
	}
	return append(fields, sale.Room.fields()...)
}

// share is bucket n's share of units spread evenly over k buckets.
func share(units int64, n, k int) int64 {
	s := units / int64(k)
	if int64(n) < units%int64(k) {
		s++
	}
	return s
}

// Load writes a new sale's state. The sale can be bought from when Load returns. A sale
// of several buckets gets its units spread evenly over them; bucket 0 is written last,
// so a sale Redis has is a sale whole.
func (s *Stock) Load(ctx context.Context, sale Sale) error {
	all := Bucket{act: sale.ActivityID, k: max(1, sale.Buckets)}.all()
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := len(all) - 1; i >= 0; i-- {
			fields := []any{"avail", share(sale.Available, i, len(all))}
			if len(sale.Variants) > 0 { // each variant spread; the bucket's avail their sum
				var sum int64
				for j, v := range sale.Variants {
					n := share(v.Available, i, len(all))
					fields, sum = append(fields, variantField("avail", VariantAt(j)), n), sum+n
				}
				fields[1] = sum
			}
			fields = append(fields, sale.fields()...)
			if len(all) > 1 && i == 0 {
				fields = append(fields, "reserve", 0)
			}
			p.HSet(ctx, saleKey(all[i]), fields...)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load sale %d: %w", sale.ActivityID, err)
	}
	s.learnBuckets(sale.ActivityID, len(all))
	return nil
}

// Patch changes a sale: a new limit and end time when not nil, and addStock more units,
// or, in a sale of variants, addVariants' units more of each variant by index (in the
// reserve of a sale of several buckets, which hands them to the buckets that run
// short). Every API process drops its sold-out flag of the sale (ReturnedChannel). A
// sale of one bucket changes in one transaction; a sale of several, bucket by bucket,
// its units last (a failure between leaves fewer units to sell, never more: the ledger
// shows it, and a rebuild from MySQL mends it).
func (s *Stock) Patch(ctx context.Context, activityID int64, limit *int, endsAt *time.Time, addStock int64, addVariants map[int]int64) error {
	sale, err := s.saleOf(ctx, activityID)
	if err != nil {
		return err
	}
	for _, n := range addVariants {
		addStock += n
	}
	settings := func(p redis.Pipeliner) {
		for _, b := range sale.all() {
			key := saleKey(b)
			if limit != nil {
				p.HSet(ctx, key, "limit", *limit)
			}
			if endsAt != nil {
				p.HSet(ctx, key, "end", endsAt.UnixMilli())
			}
			if addStock > 0 {
				p.HIncrBy(ctx, key, "total", addStock)
			}
			for i, n := range addVariants {
				p.HIncrBy(ctx, key, variantField("total", VariantAt(i)), n)
			}
		}
	}
	units := func(p redis.Pipeliner) {
		field := "avail"
		if sale.k > 1 {
			field = "reserve"
		}
		if addStock > 0 {
			p.HIncrBy(ctx, saleKey(one(activityID)), field, addStock)
		}
		for i, n := range addVariants {
			p.HIncrBy(ctx, saleKey(one(activityID)), variantField(field, VariantAt(i)), n)
		}
		p.Publish(ctx, ReturnedChannel, activityID)
	}
	if sale.k <= 1 {
		_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { settings(p); units(p); return nil })
	} else if _, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { settings(p); return nil }); err == nil {
		_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { units(p); return nil })
	}
	if err != nil {
		return fmt.Errorf("patch sale %d: %w", activityID, err)
	}
	s.soldOut.clear(activityID) // this process at once; the others by the message
	return nil
}

// Sales returns the Redis state of the given sales; a sale Redis does not know is absent.
// A sale of several buckets reads its settings from bucket 0, and the units available
// summed over the reserve, every bucket and the moves under way; a sale of variants reads
// each variant's too.
func (s *Stock) Sales(ctx context.Context, activityIDs []int64) (map[int64]Sale, error) {
	cmds := make([]*redis.SliceCmd, len(activityIDs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range activityIDs {
			cmds[i] = p.HMGet(ctx, saleKey(one(id)), "avail", "total", "limit", "start", "end", "price", "paywin", "gen",
				"buckets", "reserve", "variants", "vlimit")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read sales: %w", err)
	}
	sales := make(map[int64]Sale, len(activityIDs))
	for i, id := range activityIDs {
		v := cmds[i].Val()
		if v[0] == nil || v[1] == nil { // lost, or a count of a lost sale
			continue
		}
		n := make([]int64, len(v))
		for j := range v {
			str, _ := v[j].(string)
			if str == "" && j >= 7 { // no generation yet, one bucket, no reserve, no variants: 0
				continue
			}
			if n[j], err = strconv.ParseInt(str, 10, 64); err != nil {
				return nil, fmt.Errorf("read sale %d: field %d is %q", id, j, str)
			}
		}
		sale := Sale{ActivityID: id, Available: n[0], Total: n[1], Limit: int(n[2]),
			StartsAt: time.UnixMilli(n[3]).UTC(), EndsAt: time.UnixMilli(n[4]).UTC(),
			PriceCents: n[5], PayWindow: time.Duration(n[6]) * time.Second, Gen: n[7], Buckets: max(1, int(n[8])),
			Reserve: n[9], VariantLimit: int(n[11])}
		if n[10] < 0 || n[10] > MaxVariants {
			return nil, fmt.Errorf("read sale %d: %d variants", id, n[10])
		}
		if sale.Buckets > 1 {
			s.learnBuckets(id, sale.Buckets)
		}
		if sale.Buckets > 1 || n[10] > 0 {
			if err := s.available(ctx, Bucket{act: id, k: sale.Buckets}, &sale, int(n[10])); err != nil {
				return nil, err
			}
		}
		sales[id] = sale
	}
	return sales, nil
}

// available sets sale's units available, and its n variants' units, from every bucket:
// those not in orders, in the reserve, in the buckets, and on their way between them
// (moves taken and not applied). A variant's total is bucket 0's copy.
func (s *Stock) available(ctx context.Context, whole Bucket, sale *Sale, n int) error {
	all := whole.all()
	hashes := make([]*redis.MapStringStringCmd, len(all))
	moves := make([]*redis.MapStringStringCmd, len(all))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range all {
			hashes[i] = p.HGetAll(ctx, saleKey(b))
			moves[i] = p.HGetAll(ctx, movesKey(b))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read units of sale %d: %w", whole.act, err)
	}
	var sum int64
	variants := make([]int64, n)
	var pending []move
	for i, b := range all {
		unitsOf(hashes[i].Val(), "avail", n, &sum, variants)
		unitsOf(hashes[i].Val(), "reserve", n, &sum, variants)
		for id, v := range moves[i].Val() {
			m, err := parseMove(b, id, v)
			if err != nil {
				return err
			}
			pending = append(pending, m)
		}
	}
	unapplied, err := s.unapplied(ctx, pending)
	if err != nil {
		return err
	}
	for _, m := range unapplied {
		sum += m.units
		if i, ok := m.variant.Index(); ok && i < n {
			variants[i] += m.units
		}
	}
	sale.Available, sale.Variants = sum, nil
	for i := range variants {
		total, _ := strconv.ParseInt(hashes[0].Val()[variantField("total", VariantAt(i))], 10, 64)
		sale.Variants = append(sale.Variants, VariantStock{Total: total, Available: variants[i]})
	}
	return nil
}

// unapplied returns the moves of ms not yet applied at their destination.
func (s *Stock) unapplied(ctx context.Context, ms []move) ([]move, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	scores := make([]*redis.FloatCmd, len(ms))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range ms {
			scores[i] = p.ZScore(ctx, appliedKey(Bucket{act: m.from.act, n: m.to, k: m.from.k}), m.id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read moves: %w", err)
	}
	var out []move
	for i, m := range ms {
		if errors.Is(scores[i].Err(), redis.Nil) {
			out = append(out, m)
		}
	}
	return out, nil
}

// SetClock replaces the clock the waitlist's offers are made by (tests).
func (s *Stock) SetClock(now func() time.Time) { s.now = now }

// Ping checks that Redis answers.
func (s *Stock) Ping(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }

// ErrNotQueued means the order is not (or no longer) queued in Redis.
var ErrNotQueued = errors.New("order not queued")

// Queued returns a queued order, or ErrNotQueued. In a sale of several buckets it is
// looked for in each.
func (s *Stock) Queued(ctx context.Context, activityID int64, orderID string) (QueuedOrder, error) {
	sale, err := s.saleOf(ctx, activityID)
	if err != nil {
		return QueuedOrder{}, err
	}
	all := sale.all()
	cmds := make([]*redis.StringCmd, len(all))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range all {
			cmds[i] = p.HGet(ctx, queuedKey(b), orderID)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return QueuedOrder{}, fmt.Errorf("read queued order: %w", err)
	}
	for _, c := range cmds {
		if v, err := c.Result(); err == nil {
			return parseQueued(activityID, orderID, v)
		}
	}
	return QueuedOrder{}, ErrNotQueued
}

// QueuedTotals returns how many orders of a sale are queued and their units.
func (s *Stock) QueuedTotals(ctx context.Context, activityID int64) (orders, units int64, err error) {
	sale, err := s.saleOf(ctx, activityID)
	if err != nil {
		return 0, 0, err
	}
	all := sale.all()
	n := make([]*redis.IntCmd, len(all))
	u := make([]*redis.StringCmd, len(all))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range all {
			n[i] = p.HLen(ctx, queuedKey(b))
			u[i] = p.HGet(ctx, saleKey(b), "qunits")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, fmt.Errorf("read queued totals: %w", err)
	}
	for i := range all {
		q, _ := strconv.ParseInt(u[i].Val(), 10, 64)
		orders, units = orders+n[i].Val(), units+q
	}
	return orders, units, nil
}

// OldestQueued returns when the oldest order of a sale still queued was taken (by the
// clock of the API that took it; zero with none queued), read from each bucket's
// queued-since index. An index entry whose order is no longer queued is dropped by the
// repair pass (Stale) once 10 s old, so the answer may be that much too early, never
// too late.
func (s *Stock) OldestQueued(ctx context.Context, activityID int64) (time.Time, error) {
	sale, err := s.saleOf(ctx, activityID)
	if err != nil {
		return time.Time{}, err
	}
	all := sale.all()
	cmds := make([]*redis.ZSliceCmd, len(all))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range all {
			cmds[i] = p.ZRangeWithScores(ctx, queuedSinceKey(b), 0, 0)
		}
		return nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("read the oldest queued order: %w", err)
	}
	var oldest time.Time
	for _, c := range cmds {
		for _, z := range c.Val() {
			if at := time.UnixMilli(int64(z.Score)); oldest.IsZero() || at.Before(oldest) {
				oldest = at
			}
		}
	}
	return oldest, nil
}

// UserQueued returns a buyer's queued orders in the given sales, in two round trips
// (and one more for the sales whose buckets this process has not read yet).
func (s *Stock) UserQueued(ctx context.Context, activityIDs []int64, who buyer.ID) ([]QueuedOrder, error) {
	ks, err := s.bucketsOfAll(ctx, activityIDs)
	if err != nil {
		return nil, err
	}
	homes := make([]Bucket, len(activityIDs))
	for i, id := range activityIDs {
		homes[i] = home(id, who, ks[id])
	}
	sets := make([]*redis.StringSliceCmd, len(activityIDs))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range homes {
			sets[i] = p.SMembers(ctx, userQueuedKey(b, who))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read user's queued orders: %w", err)
	}
	values := make([]*redis.SliceCmd, len(activityIDs))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range homes {
			if ids := sets[i].Val(); len(ids) > 0 {
				values[i] = p.HMGet(ctx, queuedKey(b), ids...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read user's queued orders: %w", err)
	}
	var out []QueuedOrder
	for i, id := range activityIDs {
		if values[i] == nil {
			continue
		}
		for j, v := range values[i].Val() {
			str, ok := v.(string)
			if !ok {
				continue // settled meanwhile
			}
			q, err := parseQueued(id, sets[i].Val()[j], str)
			if err != nil {
				return nil, err
			}
			out = append(out, q)
		}
	}
	return out, nil
}

// reply returns a script's reply as the array it must be, refusing any other shape.
func reply(v any, err error) ([]any, error) {
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, fmt.Errorf("unexpected script reply %#v", v)
	}
	return arr, nil
}

func integers(vs []any) ([]int64, error) {
	n := make([]int64, len(vs))
	for i, v := range vs {
		var err error
		if n[i], err = integer(v); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func integer(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("unexpected script value %#v", v)
}

// Snapshot is a sale's Redis state read in one transaction.
type Snapshot struct {
	Sale   Sale
	Queued []QueuedOrder
	// Users is the units each buyer holds (queued, created and paid orders).
	Users map[buyer.ID]int64
}

// Snapshot reads a sale's state, its queued orders and its users' units atomically. A
// sale of several buckets is read bucket by bucket, each atomically, and its units
// available are those of the reserve, the buckets and the moves not yet applied.
func (s *Stock) Snapshot(ctx context.Context, activityID int64) (Snapshot, error) {
	sale, err := s.saleOf(ctx, activityID)
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{Sale: Sale{ActivityID: activityID, Buckets: max(1, sale.k)}, Users: map[buyer.ID]int64{}}
	var moves []move
	for _, b := range sale.all() {
		ms, err := s.snapshotBucket(ctx, b, &snap)
		if err != nil {
			return snap, err
		}
		moves = append(moves, ms...)
	}
	unapplied, err := s.unapplied(ctx, moves)
	for _, m := range unapplied {
		snap.Sale.Available += m.units
		if i, ok := m.variant.Index(); ok && i < len(snap.Sale.Variants) {
			snap.Sale.Variants[i].Available += m.units
		}
	}
	return snap, err
}

// snapshotBucket adds one bucket's state to snap, read in one transaction, and returns
// the moves recorded there.
func (s *Stock) snapshotBucket(ctx context.Context, b Bucket, snap *Snapshot) ([]move, error) {
	var sale, queued, users, moves *redis.MapStringStringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		sale = p.HGetAll(ctx, saleKey(b))
		queued = p.HGetAll(ctx, queuedKey(b))
		users = p.HGetAll(ctx, usersKey(b))
		moves = p.HGetAll(ctx, movesKey(b))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot sale %d: %w", b.act, err)
	}
	h := sale.Val()
	if h["avail"] == "" || h["total"] == "" {
		return nil, ErrNoSale
	}
	total, err := strconv.ParseInt(h["total"], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("snapshot sale %d: total %q", b.act, h["total"])
	}
	n, _ := strconv.Atoi(h["variants"])
	if b.n == 0 {
		snap.Sale.Variants = make([]VariantStock, n)
		for i := range snap.Sale.Variants {
			snap.Sale.Variants[i].Total, _ = strconv.ParseInt(h[variantField("total", VariantAt(i))], 10, 64)
		}
	}
	variants := make([]int64, len(snap.Sale.Variants))
	var reserve int64
	unitsOf(h, "avail", len(variants), &snap.Sale.Available, variants)
	unitsOf(h, "reserve", len(variants), &reserve, variants)
	for i, v := range variants {
		snap.Sale.Variants[i].Available += v
	}
	snap.Sale.Available += reserve
	snap.Sale.Total, snap.Sale.Reserve = total, snap.Sale.Reserve+reserve
	for id, v := range queued.Val() {
		q, err := parseQueued(b.act, id, v)
		if err != nil {
			return nil, err
		}
		snap.Queued = append(snap.Queued, q)
	}
	if err := parseHoldings(users.Val(), snap.Users); err != nil {
		return nil, fmt.Errorf("snapshot sale %d: %w", b.act, err)
	}
	var out []move
	for id, v := range moves.Val() {
		m, err := parseMove(b, id, v)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// whileMoving runs fn until it returns anything but the errors of a slot on its way to
// another master (MOVED, ASK, TRYAGAIN), or ctx ends; between runs it waits 20 ms and
// refreshes a cluster client's slot map. A cluster client follows those itself, but
// within a budget of three redirects, which a live migration exhausts: a script whose
// keys are split between the two masters meets TRYAGAIN until the last key has moved.
// Only for scripts that are safe to run twice.
func whileMoving(ctx context.Context, rdb redis.UniversalClient, fn func() error) error {
	for {
		err := fn()
		_, moved := redis.IsMovedError(err)
		_, ask := redis.IsAskError(err)
		if !moved && !ask && !redis.IsTryAgainError(err) {
			return err
		}
		if c, ok := rdb.(*redis.ClusterClient); ok {
			c.ReloadState(ctx)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

package stock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
)

// A sale's stock and buyers may be split over K buckets (Sale.Buckets, 1 to
// MaxBuckets), each a slot of its own, so on a Redis Cluster one sale's purchases
// spread over several masters. Bucket b of a sale holds, under its own hash tag, every
// key a one-bucket sale has: its share of the units (avail), a copy of the settings,
// and everything of the buyers whose home bucket it is (HomeBucket: a hash of the
// buyer): their units held, lock, Idempotency-Keys, allowance and queued orders. So the
// reserve script runs on one bucket as it runs on a one-bucket sale, and the per-user
// limit stays exact.
//
// Units move between buckets: the units added later (PATCH add_stock) and those a
// rebuild counts wait in the reserve (the field reserve of bucket 0's hash), and a
// bucket that runs short takes a share of the reserve, or else half of what another
// bucket has (refill). A move is two scripts on two slots, take and apply: take removes
// the units at the source and records the move there (MovesKey); apply adds them at the
// destination once per move id (appliedKey); then the record is dropped. A process that
// dies between the two leaves the record, and the worker's repair pass (FinishMoves)
// applies it: a unit is neither lost nor counted twice. The sale reads sold out only
// when the reserve, every bucket and every recorded move are empty.
//
// Bucket 0 of a sale keeps the tag {act:<id>}, so a one-bucket sale has the keys of a
// sale without buckets. The tags of the others are chosen so that their slots are spread evenly over
// the slot space from bucket 0's (bucketTag): with a cluster's masters holding equal
// ranges of slots, as redis-cli --cluster create makes them, K buckets of a sale land on
// K masters when K is their number or divides it, and evenly on them when K is a
// multiple of it.

// MaxBuckets is the most buckets a sale may have.
const MaxBuckets = 64

// Bucket names one bucket of a sale of k buckets (k is 1 for a one-bucket sale).
type Bucket struct {
	act  int64
	n, k int
}

// One is a one-bucket sale, or the bucket 0 of any sale (the same keys).
func One(activityID int64) Bucket { return Bucket{act: activityID, k: 1} }

// tag is the bucket's hash tag, without braces.
func (b Bucket) tag() string {
	if b.n == 0 {
		return "act:" + strconv.FormatInt(b.act, 10)
	}
	return bucketTag(b)
}

// buckets lists the k buckets of a sale, 0 first.
func (b Bucket) All() []Bucket {
	out := make([]Bucket, b.k)
	for i := range out {
		out[i] = Bucket{act: b.act, n: i, k: b.k}
	}
	return out
}

// HomeBucket is the bucket of a sale of k buckets that holds the buyer's units, lock,
// keys and orders: of a decimal buyer by its number, of any other by FNV-1a of its key
// (two buyers that share a bucket share nothing else).
func HomeBucket(who buyer.ID, k int) int {
	if k <= 1 {
		return 0
	}
	userID, decimal := who.UserID()
	x := uint64(userID)
	if !decimal {
		h := fnv.New64a()
		h.Write([]byte(who.Key()))
		x = h.Sum64()
	}
	// splitmix64's finalizer: consecutive ids, and keys that differ in their last
	// bytes, spread evenly
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return int(x % uint64(k))
}

func Home(activityID int64, who buyer.ID, k int) Bucket {
	return Bucket{act: activityID, n: HomeBucket(who, k), k: max(1, k)}
}

const clusterSlots = 16384

var tags sync.Map // bucket -> string

// bucketTag is the tag of bucket n >= 1 of a sale of k: "act:<id>:<n>.<j>" with the
// first j whose slot falls in the middle half of the ((q + n) mod k)-th of k equal
// ranges of slots, q being the range of bucket 0's slot. On masters that hold equal
// contiguous ranges (redis-cli --cluster create), k buckets so sit on k masters when k
// is their number or divides it, and evenly on them when k is a multiple of it (two
// each for twice as many); the middle half keeps a bucket off the edges, where the
// masters' ranges and the buckets' differ by a slot.
func bucketTag(b Bucket) string {
	if t, ok := tags.Load(b); ok {
		return t.(string)
	}
	base := "act:" + strconv.FormatInt(b.act, 10)
	q := (slotOf(base)*b.k/clusterSlots + b.n) % b.k
	from, to := q*clusterSlots/b.k, (q+1)*clusterSlots/b.k
	lo, hi := from+(to-from)/4, to-(to-from)/4
	var t string
	for j := 0; ; j++ {
		t = base + ":" + strconv.Itoa(b.n) + "." + strconv.Itoa(j)
		if s := slotOf(t); s >= lo && s < hi {
			break
		}
	}
	tags.Store(b, t)
	return t
}

// slotOf is the Redis Cluster slot of a hash tag: CRC16 (XMODEM) mod 16384.
func slotOf(tag string) int {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for j := 0; j < 8; j++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % clusterSlots
}

// Buckets returns how many buckets a sale has: remembered once read (a sale's K
// never changes), else read from bucket 0's hash. A sale Redis does not know reads as
// One bucket, not remembered.
func (s *Stock) Buckets(ctx context.Context, activityID int64) (int, error) {
	ks, err := s.BucketsOfAll(ctx, []int64{activityID})
	return ks[activityID], err
}

// BucketsOfAll is bucketsOf for several sales, those not remembered read in one round
// trip.
func (s *Stock) BucketsOfAll(ctx context.Context, activityIDs []int64) (map[int64]int, error) {
	out := make(map[int64]int, len(activityIDs))
	var unknown []int64
	for _, id := range activityIDs {
		if k, ok := s.sizes.Load(id); ok {
			out[id] = k.(int)
		} else {
			out[id] = 1
			unknown = append(unknown, id)
		}
	}
	if len(unknown) == 0 {
		return out, nil
	}
	cmds := make([]*redis.SliceCmd, len(unknown))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range unknown {
			cmds[i] = p.HMGet(ctx, SaleKey(One(id)), "total", "buckets")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read buckets of sales: %w", err)
	}
	for i, id := range unknown {
		v := cmds[i].Val()
		if v[0] == nil {
			continue // unknown to Redis: one bucket, not remembered
		}
		k := 1
		if str, _ := v[1].(string); str != "" {
			if k, err = strconv.Atoi(str); err != nil || k < 1 || k > MaxBuckets {
				return nil, fmt.Errorf("sale %d: buckets %q", id, str)
			}
		}
		s.sizes.Store(id, k)
		out[id] = k
	}
	return out, nil
}

// LearnBuckets remembers a sale's K, as a script reported it.
func (s *Stock) LearnBuckets(activityID int64, k int) { s.sizes.Store(activityID, max(1, k)) }

// KnownBuckets is the K remembered for a sale, 1 when none is.
func (s *Stock) KnownBuckets(activityID int64) int {
	if k, ok := s.sizes.Load(activityID); ok {
		return k.(int)
	}
	return 1
}

// SaleOf is the whole of a sale (bucket 0 with its K), for what reads every bucket.
func (s *Stock) SaleOf(ctx context.Context, activityID int64) (Bucket, error) {
	k, err := s.Buckets(ctx, activityID)
	return Bucket{act: activityID, k: max(1, k)}, err
}

// UserLockKey names the per-buyer lock of a sale, in the buyer's home bucket, for
// lock.Client.WaitRelease (no key of that name is written: userlock.go). The sale's K
// is the one this process learnt with the buyer's purchase (Reserve): the lock is only
// of interest after one.
func (s *Stock) UserLockKey(activityID int64, who buyer.ID) string {
	return UserLockKey(Home(activityID, who, s.KnownBuckets(activityID)), who)
}

// MoveRetention is how long a bucket remembers a move it applied: a move is applied by
// its mover at once, or by the repair pass (FinishMoves) once it is MoveRepairAge old.
const (
	MoveRetention = 24 * time.Hour
	MoveRepairAge = 5 * time.Second
)

// takeScript takes units out of a bucket (or the reserve) for another bucket, and
// records the move (take.lua).
//
//go:embed take.lua
var takeLua string
var takeScript = NewScript(takeLua, takeCodes)

// takeCodes are takeScript's refusals: the source bucket is lost, or the sale is closed
// for a rebuild.
var takeCodes = []Code{{"SOURCE_LOST", -1, ErrNoSale}, {"SOURCE_CLOSED", -2, ErrClosed}}

// applyScript adds a move's units to its destination bucket, once per move id
// (apply.lua).
//
//go:embed apply.lua
var applyLua string
var applyScript = NewScript(applyLua, applyCodes)

// applyCodes are applyScript's answers: applied now (moveApplied), or not: applied
// before, the destination lost or archived, a rebuild between take and apply.
var applyCodes = []Code{{"APPLIED", moveApplied, nil}, {"APPLIED_BEFORE", 0, nil}, {"DESTINATION_GONE", -1, nil},
	{"REBUILT_BETWEEN", -2, nil}}

// moveApplied is APPLIED, a move applied now.
const moveApplied = 1

// move is one move recorded at its source: "<to> <units> <taken> <stamp>", and
// " <variant index>" for a variant's units.
type move struct {
	id      string
	from    Bucket
	to      int
	units   int64
	takenAt time.Time
	stamp   string
	variant Variant
}

func parseMove(from Bucket, id, v string) (move, error) {
	f := strings.Fields(v)
	if len(f) != 4 && len(f) != 5 {
		return move{}, fmt.Errorf("move %s: malformed %q", id, v)
	}
	to, err1 := strconv.Atoi(f[0])
	units, err2 := strconv.ParseInt(f[1], 10, 64)
	ms, err3 := strconv.ParseInt(f[2], 10, 64)
	var variant Variant
	var err4 error
	if len(f) == 5 {
		var i int
		i, err4 = strconv.Atoi(f[4])
		variant = VariantAt(i)
	}
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return move{}, fmt.Errorf("move %s: malformed %q", id, v)
	}
	return move{id: id, from: from, to: to, units: units, takenAt: time.UnixMilli(ms), stamp: f[3], variant: variant}, nil
}

// take runs takeScript: units taken (0 for none), moves pending at the source.
func (s *Stock) take(ctx context.Context, from Bucket, field string, want int64, divisor int, id string, to int, variant Variant) (taken, pending int64, stamp string, err error) {
	res, err := Reply(takeScript.Run(ctx, s.rdb, []string{SaleKey(from), MovesKey(from)},
		field, want, divisor, id, to, variant.arg()).Result())
	if err != nil {
		return 0, 0, "", fmt.Errorf("take units from bucket %d: %w", from.n, err)
	}
	n, err := Integer(res[0])
	switch {
	case err != nil:
		return 0, 0, "", fmt.Errorf("take units from bucket %d: %w", from.n, err)
	case n < 0:
		return 0, 0, "", fmt.Errorf("take units from bucket %d: %w", from.n, AnswerOf(takeCodes, n))
	case len(res) != 3:
		return 0, 0, "", fmt.Errorf("take units: unexpected reply %v", res)
	}
	pending, err = Integer(res[1])
	stamp, _ = res[2].(string)
	return n, pending, stamp, err
}

// apply runs applyScript for m and then drops its record at the source.
func (s *Stock) apply(ctx context.Context, m move) error {
	to := Bucket{act: m.from.act, n: m.to, k: m.from.k}
	n, err := applyScript.Run(ctx, s.rdb, []string{SaleKey(to), AppliedKey(to)}, m.id, m.units, m.stamp,
		m.from.act, ReturnedChannel, MoveRetention.Milliseconds(), m.variant.arg()).Int64()
	if err == nil {
		_, err = CodeOf(applyCodes, n)
	}
	if err != nil {
		return fmt.Errorf("apply move %s: %w", m.id, err)
	}
	if n == moveApplied {
		s.soldOut.clear(m.from.act)
	}
	if err := s.rdb.HDel(ctx, MovesKey(m.from), m.id).Err(); err != nil {
		return fmt.Errorf("drop move %s: %w", m.id, err)
	}
	return nil
}

// ErrClosed means a sale of several buckets is closed for a rebuild: its purchases
// answer as for a missing sale (it is ErrNoSale too) until the rebuild reopens it.
var ErrClosed = fmt.Errorf("%w: closed while it is rebuilt", ErrNoSale)

// refills lets one refill of a bucket (of one variant's units) run at a time in this
// process; the purchases that find the bucket short meanwhile wait for it and share its
// outcome.
type refills struct {
	mu      sync.Mutex
	running map[refillOf]*refillCall
}

type refillOf struct {
	to      Bucket
	variant Variant
}

type refillCall struct {
	done  chan struct{}
	moved int64
	empty bool
	err   error
}

// refill moves units (of variant, in a sale of variants) into bucket to (short of want
// units) from the reserve, then from the other buckets, and returns how many it moved.
// empty is true when it found none anywhere and no move under way: the sale (the
// variant) is sold out. A refill of the same bucket and variant under way in this
// process is waited for instead, and its outcome returned.
func (s *Stock) refill(ctx context.Context, to Bucket, want int64, variant Variant) (moved int64, empty bool, err error) {
	r := &s.refilling
	of := refillOf{to, variant}
	r.mu.Lock()
	if c, ok := r.running[of]; ok {
		r.mu.Unlock()
		<-c.done
		return c.moved, c.empty, c.err
	}
	if r.running == nil {
		r.running = map[refillOf]*refillCall{}
	}
	c := &refillCall{done: make(chan struct{})}
	r.running[of] = c
	r.mu.Unlock()
	c.moved, c.empty, c.err = s.refillOnce(ctx, to, want, variant)
	r.mu.Lock()
	delete(r.running, of)
	r.mu.Unlock()
	close(c.done)
	return c.moved, c.empty, c.err
}

func (s *Stock) refillOnce(ctx context.Context, to Bucket, want int64, variant Variant) (moved int64, empty bool, err error) {
	type source struct {
		from    Bucket
		field   string
		divisor int
	}
	sources := []source{{Bucket{act: to.act, k: to.k}, "reserve", to.k}}
	for i := 1; i < to.k; i++ {
		sources = append(sources, source{Bucket{act: to.act, n: (to.n + i) % to.k, k: to.k}, "avail", 2})
	}
	empty = true
	var lost error // a source closed for a rebuild, or lost: what to answer if none gave units
	for _, src := range sources {
		if moved >= want {
			break
		}
		m := move{id: newToken(), from: src.from, to: to.n, variant: variant}
		var pending int64
		m.units, pending, m.stamp, err = s.take(ctx, src.from, src.field, want-moved, src.divisor, m.id, to.n, variant)
		switch {
		case errors.Is(err, ErrNoSale): // ErrClosed too
			lost, empty = err, false
			continue
		case err != nil:
			return moved, false, err
		}
		if pending > 0 || m.units > 0 {
			empty = false
		}
		if m.units == 0 {
			continue
		}
		if err := s.apply(ctx, m); err != nil {
			return moved, false, err // the repair pass applies it
		}
		moved += m.units
	}
	if moved == 0 && lost != nil {
		return 0, false, lost
	}
	return moved, empty, nil
}

// FinishMoves applies the moves of a sale recorded MoveRepairAge ago or more whose
// mover did not finish them (it died between take and apply), and returns how many it
// finished. The worker's repair pass runs it for every live sale of several buckets.
func (s *Stock) FinishMoves(ctx context.Context, activityID int64, now time.Time) (int, error) {
	sale, err := s.SaleOf(ctx, activityID)
	if err != nil || sale.k <= 1 {
		return 0, err
	}
	done := 0
	for _, b := range sale.All() {
		ms, err := s.moves(ctx, b)
		if err != nil {
			return done, err
		}
		for _, m := range ms {
			if now.Sub(m.takenAt) < MoveRepairAge {
				continue
			}
			if err := s.apply(ctx, m); err != nil {
				return done, err
			}
			done++
		}
	}
	return done, nil
}

// moves reads the moves recorded at bucket b.
func (s *Stock) moves(ctx context.Context, b Bucket) ([]move, error) {
	all, err := s.rdb.HGetAll(ctx, MovesKey(b)).Result()
	if err != nil {
		return nil, fmt.Errorf("read moves of bucket %d: %w", b.n, err)
	}
	out := make([]move, 0, len(all))
	for id, v := range all {
		m, err := parseMove(b, id, v)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

package stock

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"

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
// Bucket 0 of a sale keeps the tag {act:<id>}, so a one-bucket sale has the keys of a
// sale without buckets. The tags of the others are chosen so that their slots are spread evenly over
// the slot space from bucket 0's (bucketTag): with a cluster's masters holding equal
// ranges of slots, as redis-cli --cluster create makes them, K buckets of a sale land on
// K masters when K is their number or divides it, and evenly on them when K is a
// multiple of it. Units move between the buckets of a sale: see internal/stock/moves.

// MaxBuckets is the most buckets a sale may have.
const MaxBuckets = 64

// Bucket names one bucket of a sale of k buckets (k is 1 for a one-bucket sale).
type Bucket struct {
	act  int64
	n, k int
}

// One is a one-bucket sale, or the bucket 0 of any sale (the same keys).
func One(activityID int64) Bucket { return Bucket{act: activityID, k: 1} }

// Whole is the whole of a sale of k buckets (0 or 1 for one): its bucket 0, knowing k,
// for what reads or writes every bucket (All).
func Whole(activityID int64, k int) Bucket { return Bucket{act: activityID, k: max(1, k)} }

// Sibling is bucket n of b's sale.
func (b Bucket) Sibling(n int) Bucket { return Bucket{act: b.act, n: n, k: b.k} }

// Activity is the bucket's sale.
func (b Bucket) Activity() int64 { return b.act }

// N is the bucket's number, 0 to K-1.
func (b Bucket) N() int { return b.n }

// K is how many buckets the bucket's sale has.
func (b Bucket) K() int { return b.k }

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

var tags sync.Map

// bucket -> string
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

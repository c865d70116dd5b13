package lifecycle

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/moves"
)

// A sale's generation (the field gen of its hash) tells current Redis state from stale.
// It goes up by one with every write that moves an order between Redis and MySQL: a
// worker's claim (before its MySQL transaction), its settle, a cancelled order's units
// coming back. The worker records in MySQL (activities.redis_gen) the generation its
// claim got, in the transaction that writes the orders; so MySQL's figure was reached
// in Redis before MySQL had it, and a current Redis is never behind it. A Redis behind
// it (an AOF from yesterday, a replica promoted without the last writes) lost writes
// that MySQL saw, and its sale must be rebuilt. A rebuild sets the generation past both.
//
// Generations cannot tell the orders a worker claimed in a state that is gone (lost, or
// replaced by a rebuild) and writes to MySQL only after a rebuild read MySQL: nothing in
// Redis holds them any more, and the rebuild did not count them. The epoch (the field
// epoch, activities.redis_epoch in MySQL) does: a rebuild raises it in MySQL before it
// reads MySQL and writes it into the state it builds; a claim returns the epoch of the
// state it was made in, and MySQL refuses to write orders claimed in an older epoch than
// its own. The worker claims those again, or adopts them (Adopt), on the rebuilt state.
// Rebuilds close, rebuild, adopt into and archive sales' Redis state, on a
// stock.Stock; Sales load, change and read it.
type Rebuilds struct {
	sk    *stock.Stock
	rdb   redis.UniversalClient
	moves *moves.Mover
}

// NewRebuilds returns the Rebuilds of sk.
func NewRebuilds(sk *stock.Stock) *Rebuilds {
	return &Rebuilds{sk: sk, rdb: sk.Redis(), moves: moves.New(sk)}
}

// RebuildPoint is what a rebuild starts from: whether Redis has the sale, its
// generation (the highest of its buckets'), and the orders it holds as queued; for a
// sale of several buckets, read after it was closed to purchases (Close).
type RebuildPoint struct {
	Exists bool
	// Whole is true when Redis has every bucket of the sale, closed or not (a rebuild
	// that closed it finds it whole when another one rebuilt it meanwhile).
	Whole  bool
	Gen    int64
	Queued []stock.QueuedOrder
	// gens are the generations read per bucket, "" for a bucket Redis lacks.
	gens []string
}

// RebuildPoint reads, atomically per bucket, what Rebuild needs to know of a sale's
// Redis state. buckets is the sale's K as MySQL has it (Redis may have lost it). A sale
// of several buckets exists when every bucket does and it is not closed for a rebuild.
func (s *Rebuilds) RebuildPoint(ctx context.Context, activityID int64, buckets int) (RebuildPoint, error) {
	pt := RebuildPoint{Exists: true, Whole: true}
	for _, b := range stock.Whole(activityID, buckets).All() {
		var sale *redis.SliceCmd
		var queued *redis.MapStringStringCmd
		_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			sale = p.HMGet(ctx, stock.SaleKey(b), "total", "gen", "closed")
			queued = p.HGetAll(ctx, stock.QueuedKey(b))
			return nil
		})
		if err != nil {
			return RebuildPoint{}, fmt.Errorf("read sale %d before a rebuild: %w", activityID, err)
		}
		v := sale.Val()
		gen, _ := v[1].(string)
		if v[0] == nil {
			pt.Exists, pt.Whole, gen = false, false, ""
		} else if gen == "" {
			gen = "0"
		}
		pt.Exists = pt.Exists && v[2] == nil
		pt.gens = append(pt.gens, gen)
		for id, v := range queued.Val() {
			q, err := stock.ParseQueued(activityID, id, v)
			if err != nil {
				return pt, err
			}
			pt.Queued = append(pt.Queued, q)
		}
	}
	for _, gen := range pt.gens { // the highest: a rebuild's new generation passes it
		if gen == "" {
			continue
		}
		n, err := strconv.ParseInt(gen, 10, 64)
		if err != nil {
			return pt, fmt.Errorf("sale %d: generation %q", activityID, gen)
		}
		pt.Gen = max(pt.Gen, n)
	}
	return pt, nil
}

// RebuildLease is how long a rebuild of a sale of several buckets keeps it closed
// before another process may take the rebuild over (its process died).
const RebuildLease = 30 * time.Second

// closeScript closes a sale of several buckets for a rebuild, unless another rebuild
// closed it less than the lease ago, or it is being archived (archive.go) (close.lua).
//
//go:embed close.lua
var closeLua string

var closeScript = stock.NewScript(closeLua, closeCodes)

// closeCodes are closeScript's answers: closed by this rebuild; another rebuild holds
// the sale; the sale is being archived.
var closeCodes = []stock.Code{{Lua: "CLOSED_NOW", Value: 1}, {Lua: "REBUILDING", Value: 0, Err: ErrRebuilding}, {Lua: "ARCHIVING", Value: -1, Err: ErrArchived}}

// reopenScript ends the closing of a bucket, if it is still this rebuild's
// (reopen.lua).
//
//go:embed reopen.lua
var reopenLua string

var reopenScript = stock.NewScript(reopenLua, nil)

// ErrRebuilding means another process is rebuilding the sale now.
var ErrRebuilding = errors.New("another process is rebuilding the sale")

// Closing is a rebuild's closing of a sale of several buckets (Close); the zero
// Closing is none, for a one-bucket sale.
type Closing struct{ token string }

// Close closes a sale of several buckets to purchases and moves between buckets for a
// rebuild (or for its archive: archive.go); Rebuild, given the Closing and a
// RebuildPoint read after it, reopens it. ErrRebuilding when another process's rebuild
// holds it (for less than RebuildLease), ErrArchived when it is being archived. A
// rebuild whose process dies leaves the sale closed, to the next rebuild after the
// lease (the worker's periodic check, or a purchase that meets it).
func (s *Rebuilds) Close(ctx context.Context, activityID int64, buckets int) (Closing, error) {
	token := stock.NewToken()
	sale := stock.Whole(activityID, buckets)
	n, err := closeScript.Run(ctx, s.rdb, []string{stock.SaleKey(stock.One(activityID))}, token, RebuildLease.Milliseconds()).Int64()
	if err != nil {
		return Closing{}, fmt.Errorf("close sale %d for a rebuild: %w", activityID, err)
	}
	if err := stock.AnswerOf(closeCodes, n); err != nil {
		return Closing{}, err
	}
	value := token + " " + strconv.FormatInt(time.Now().UnixMilli(), 10)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, b := range sale.All()[1:] {
			p.HSet(ctx, stock.SaleKey(b), "closed", value)
		}
		return nil
	})
	if err != nil {
		return Closing{}, fmt.Errorf("close sale %d for a rebuild: %w", activityID, err)
	}
	return Closing{token}, nil
}

// Reopen ends a closing without a rebuild (one that found the sale rebuilt meanwhile).
func (s *Rebuilds) Reopen(ctx context.Context, activityID int64, buckets int, closing Closing) error {
	return s.reopen(ctx, stock.Whole(activityID, buckets), closing.token)
}

// reopen ends a rebuild's closing of every bucket (bucket 0, the lease, last).
func (s *Rebuilds) reopen(ctx context.Context, sale stock.Bucket, token string) error {
	all := sale.All()
	for i := len(all) - 1; i >= 0; i-- {
		if err := reopenScript.Run(ctx, s.rdb, []string{stock.SaleKey(all[i])}, token).Err(); err != nil {
			return fmt.Errorf("reopen sale %d after its rebuild: %w", sale.Activity(), err)
		}
	}
	return nil
}

// rebuildScript writes one bucket of a sale from MySQL's figures, only if the bucket is
// as the caller read it (RebuildPoint): missing if it was missing, else at the
// generation read, and, in a sale of several buckets, still closed by this rebuild
// (rebuild.lua).
//
//go:embed rebuild.lua
var rebuildLua string

var rebuildScript = stock.NewScript(rebuildLua, rebuildCodes)

// rebuildCodes are rebuildScript's answers: the bucket written, or moved since it was
// read (nothing written).
var rebuildCodes = []stock.Code{{Lua: "REBUILT", Value: rebuildWritten}, {Lua: "MOVED", Value: 0, Err: ErrMoved}}

// rebuildWritten is REBUILT, the answer of a bucket written.
const rebuildWritten = 1

// ErrMoved is a rebuild that found the sale changed since its RebuildPoint.
var ErrMoved = errors.New("the sale changed in Redis during the rebuild")

// Rebuild writes a sale's state from its record (MySQL) when Redis has lost it or holds
// it stale. from is what RebuildPoint read before MySQL was (after Close, which closed
// it as closing; a sale of one bucket may be rebuilt without, the zero Closing); sale
// holds the settings, its buckets, the new generation (sale.Gen, above both Redis's and
// MySQL's) and the epoch the rebuild raised MySQL's to before it read MySQL
// (sale.Epoch); users the units each user holds in MySQL, held their sum and the units
// MySQL keeps off sale (refunded without restock: out of the stock, nobody's), parts the
// orders each holds (participations, counted where the sale caps them or sells in
// groups); variants the units each buyer holds of each variant, by index (a sale of
// variants); stored the orders of from.Queued that MySQL has. Orders Redis still holds as
// queued and MySQL does not stay queued and keep their units. It returns ErrMoved,
// writing nothing more, when the sale is no longer as from says (rebuilt by another
// process, or orders moved meanwhile: read both again). Every API process's sold-out
// flag of the sale is cleared, and a closed sale reopens.
//
// A sale of several buckets is rebuilt bucket by bucket, bucket 0 last: each bucket gets
// its buyers and no units, and the reserve every unit left, which the buckets then take
// as they sell. Rebuild reopens it once every bucket is written. Its buckets were closed
// from before from was read (Close), so no purchase nor move came between, and what a
// worker or a return does in a bucket already written is counted once: as queued in its
// bucket, or as held in MySQL, where the reserve's figure took it.
func (s *Rebuilds) Rebuild(ctx context.Context, from RebuildPoint, closing Closing, sale stock.Sale, users, parts map[buyer.ID]int64, held int64, stored []stock.QueuedOrder, variants map[buyer.ID]map[int]int64) error {
	whole := stock.Whole(sale.ActivityID, sale.Buckets)
	stamp := time.Now().UnixMilli() // the same in every bucket: see Adopt and applyScript
	fields := append(sale.Fields(), "rebuilt", stamp, "epoch", sale.Epoch)
	totals := make([]int64, len(sale.Variants)) // of each variant, the units not kept off sale
	for i, v := range sale.Variants {
		totals[i] = v.Total - v.OffSale
	}
	if whole.K() == 1 {
		_, err := s.rebuildBucket(ctx, from, closing, whole, sale, fields, "avail", sale.Total, held,
			bucketShare{users: users, parts: parts, stored: stored, variants: variants, totals: totals})
		if err != nil {
			return err
		}
		s.sk.UnitsBack(sale.ActivityID)
		if closing.token == "" {
			return nil
		}
		return s.reopen(ctx, whole, closing.token)
	}
	if len(from.gens) != whole.K() || closing.token == "" {
		return fmt.Errorf("rebuild sale %d: its %d buckets were not read under a Close", sale.ActivityID, whole.K())
	}
	shares := make([]bucketShare, whole.K())
	for i := range shares {
		shares[i] = bucketShare{users: map[buyer.ID]int64{}, parts: map[buyer.ID]int64{},
			variants: map[buyer.ID]map[int]int64{}, totals: make([]int64, len(sale.Variants))}
	}
	offSale := held // what no buyer holds: held less the buyers' units
	for u, n := range users {
		shares[stock.HomeBucket(u, whole.K())].users[u] = n
		offSale -= n
	}
	for u, n := range parts {
		shares[stock.HomeBucket(u, whole.K())].parts[u] = n
	}
	for u, vs := range variants {
		shares[stock.HomeBucket(u, whole.K())].variants[u] = vs
	}
	for _, q := range stored {
		sh := &shares[stock.HomeBucket(q.Buyer, whole.K())]
		sh.stored = append(sh.stored, q)
	}
	// Less what the buckets 1 and up hold (theirs in MySQL, and their orders that stay
	// queued), of the sale and of each variant: bucket 0 puts the rest in the reserve.
	left, vleft := sale.Total-offSale, slices.Clone(totals)
	heldIn := func(sh bucketShare) (n int64) {
		for _, u := range sh.users {
			n += u
		}
		return n
	}
	all := whole.All()
	for i := len(all) - 1; i >= 1; i-- {
		sh := shares[i]
		q, err := s.rebuildBucket(ctx, from, closing, all[i], sale, fields, "", 0, heldIn(sh), sh)
		if err != nil {
			return err
		}
		left -= heldIn(sh) + q[0]
		for j := range vleft {
			vleft[j] -= q[1+j]
			for _, vs := range sh.variants {
				vleft[j] -= vs[j]
			}
		}
	}
	shares[0].totals = vleft
	if _, err := s.rebuildBucket(ctx, from, closing, all[0], sale, fields, "reserve", left, heldIn(shares[0]), shares[0]); err != nil {
		return err
	}
	s.sk.LearnBuckets(sale.ActivityID, whole.K())
	s.sk.UnitsBack(sale.ActivityID)
	return s.reopen(ctx, whole, closing.token)
}

// bucketShare is what a bucket's rebuild writes of its buyers: users, parts and variants
// as Rebuild has them, its stored orders, and the totals of the variants (by index) it
// counts the units left of.
type bucketShare struct {
	users, parts map[buyer.ID]int64
	variants     map[buyer.ID]map[int]int64
	stored       []stock.QueuedOrder
	totals       []int64
}

// rebuildBucket runs rebuildScript on bucket b (see it for into, total and held) and
// returns the units of the orders that stay queued there, then those of each variant.
func (s *Rebuilds) rebuildBucket(ctx context.Context, from RebuildPoint, closing Closing, b stock.Bucket, sale stock.Sale, fields []any, into string,
	total, held int64, sh bucketShare) ([]int64, error) {
	expect := ""
	if b.N() < len(from.gens) {
		expect = from.gens[b.N()]
	}
	args := append([]any{expect, total, held, sale.Gen, sale.ActivityID, stock.ReturnedChannel, into, closing.token, len(fields)},
		fields...)
	args = append(args, len(sh.stored))
	if err := s.keepAllowances(ctx, b); err != nil {
		return nil, fmt.Errorf("rebuild sale %d: %w", sale.ActivityID, err)
	}
	staged, err := s.stageUsers(ctx, sale, b, sh)
	if err != nil {
		return nil, err
	}
	keys := []string{stock.SaleKey(b), stock.UsersKey(b), stock.QueuedKey(b), stock.ClaimedKey(b), stock.ReturnedKey(b), staged,
		stock.MovesKey(b)}
	for _, q := range sh.stored {
		args = append(args, q.OrderID)
	}
	args = append(args, len(sale.Variants), sale.VariantLimit)
	for i := range sale.Variants {
		var vheld int64
		for _, vs := range sh.variants {
			vheld += vs[i]
		}
		args = append(args, sh.totals[i], vheld)
	}
	res, err := stock.Reply(rebuildScript.Run(ctx, s.rdb, keys, args...).Result())
	if err != nil {
		return nil, fmt.Errorf("rebuild sale %d: %w", sale.ActivityID, err)
	}
	if n, _ := stock.Integer(res[0]); n != rebuildWritten || len(res) != 2+len(sale.Variants) {
		_ = s.rdb.Unlink(ctx, staged).Err() // it expires anyway
		return nil, ErrMoved
	}
	return stock.Integers(res[1:])
}

// KeptKey is an Idempotency-Key that made an order MySQL holds (RestoreKeys).
type KeptKey struct {
	Buyer                     buyer.ID
	Key, Fingerprint, OrderID string
	// Expires is when the key would have expired: its order's creation plus
	// IdempotencyTTL.
	Expires time.Time
}

// RestoreKeys writes back the Idempotency-Keys of a sale's stored orders where Redis has
// none (SET NX), each until it would have expired, in its buyer's home bucket of the
// sale's buckets (as MySQL has them), so that a replay after a rebuild of the sale gets
// its order, not a second one. A key found in Redis is left as it is.
func (s *Rebuilds) RestoreKeys(ctx context.Context, activityID int64, buckets int, keys []KeptKey) error {
	now := time.Now()
	for start := 0; start < len(keys); start += stageChunk {
		cmds, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys[start:min(start+stageChunk, len(keys))] {
				if k.Expires.After(now) {
					p.SetArgs(ctx, stock.IdempotencyKey(stock.Home(activityID, k.Buyer, buckets), k.Buyer, k.Key), k.Fingerprint+" "+k.OrderID,
						redis.SetArgs{Mode: "NX", ExpireAt: k.Expires})
				}
			}
			return nil
		})
		for _, c := range cmds {
			if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) { // Nil: the key was there
				return fmt.Errorf("restore idempotency keys of sale %d: %w", activityID, err)
			}
		}
	}
	return nil
}

// stageChunk is how many fields one HSET of stageUsers writes: each one keeps Redis
// busy for a few milliseconds at most.
const stageChunk = 5000

// stageUsers writes the users hash a rebuild will put in place (what each buyer holds:
// HoldingFields) under a key of its own in bucket b's slot, in pipelined chunks, and
// returns that key. The key expires in a minute should the rebuild not take it.
func (s *Rebuilds) stageUsers(ctx context.Context, sale stock.Sale, b stock.Bucket, sh bucketShare) (string, error) {
	key := stock.Prefix(b) + "users:rebuild:" + strconv.FormatInt(sale.Gen, 10) + ":" + stock.NewToken()
	fields := make([]any, 0, 2*stageChunk)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		flush := func() {
			if len(fields) > 0 {
				p.HSet(ctx, key, fields...)
				p.Expire(ctx, key, time.Minute)
				fields = make([]any, 0, 2*stageChunk)
			}
		}
		add := func(field string, n int64) {
			if fields = append(fields, field, n); len(fields) == 2*stageChunk {
				flush()
			}
		}
		stock.HoldingFields(sh.users, sh.parts, stock.Counted(sale.ParticipationCap, sale.Kind == "group"), add)
		if sale.VariantLimit > 0 {
			stock.VariantHoldingFields(sh.variants, add)
		}
		flush()
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("rebuild sale %d: stage users: %w", sale.ActivityID, err)
	}
	return key, nil
}

// keepAllowances copies the attempts' allowances still in force from bucket b's users
// hash (the buyers' allowance fields, which go with it in a rebuild) to their allowance keys
// (RateKey), which a rebuild leaves alone and the reserve script reads too: a rebuild
// hands nobody a fresh burst. A key already later than its field (an attempt that
// reserved nothing came after the one that did) stays as it is. Each key expires when
// its allowance is full again, as one an attempt writes. The hash is read with HSCAN,
// a page of up to 1,000 fields per script call, so a sale of many buyers does not block
// Redis; an allowance written after that is a queued order's, kept by rebuildScript.
func (s *Rebuilds) keepAllowances(ctx context.Context, b stock.Bucket) error {
	now, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return fmt.Errorf("keep allowances: %w", err)
	}
	var cursor uint64
	for {
		var page []string
		page, cursor, err = s.rdb.HScan(ctx, stock.UsersKey(b), cursor, stock.AllowanceFields, 1000).Result()
		if err != nil {
			return fmt.Errorf("keep allowances: %w", err)
		}
		var keys []string
		args := []any{now.UnixMicro()}
		for i := 0; i+1 < len(page); i += 2 {
			kind, who, err := stock.BuyerField(page[i])
			if err != nil || kind != stock.AllowanceKind {
				return fmt.Errorf("keep allowances: malformed field %q", page[i])
			}
			keys, args = append(keys, stock.RateKey(b, who)), append(args, page[i+1])
		}
		if len(keys) > 0 {
			if err := keepAllowanceScript.Run(ctx, s.rdb, keys, args...).Err(); err != nil {
				return fmt.Errorf("keep allowances: %w", err)
			}
		}
		if cursor == 0 {
			return nil
		}
	}
}

// keepAllowanceScript writes allowances read from a users hash to their keys, each only
// where it is later than the key's and still in force, expiring when it is full again
// (keep_allowance.lua).
//
//go:embed keep_allowance.lua
var keepAllowanceLua string

var keepAllowanceScript = stock.NewScript(keepAllowanceLua, nil)

// adoptScript brings back orders whose task survived while their sale's Redis state was
// lost (a shard wiped, a failover without the last writes, while the queue lives on
// another master): each one not queued, not given back by the API, and taken before the
// sale was last rebuilt has its units taken again, if there are enough and its buyer
// stays within the limit and the cap on participations (the buyer may have bought again
// on the rebuilt sale, which did not count it), and is queued and claimed, as it was
// (adopt.lua).
//
//go:embed adopt.lua
var adoptLua string

var adoptScript = stock.NewScript(adoptLua, adoptCodes)

// Adoption is what Adopt did with one order.
type Adoption int

// Adopt outcomes.
const (
	NotOrphan       Adoption = iota // given back by the API, taken after the rebuild, or no such sale
	Adopted                         // queued and claimed again (adopted now, or queued already), its units taken
	OrphanNoStock                   // an orphan, but too few units are left (of its variant): nothing taken
	SaleMissing                     // the sale is lost and not rebuilt yet, or closed while it is: ask again later
	OrphanSeat                      // a seat in a group whose state was lost: nothing taken
	OrphanOverLimit                 // an orphan whose buyer would pass the limit, the cap or the per-variant limit: nothing taken
)

// adoptCodes are adoptScript's answers, one per Adoption.
var adoptCodes = []stock.Code{{Lua: "NOT_ORPHAN", Value: int64(NotOrphan)}, {Lua: "ADOPTED", Value: int64(Adopted)},
	{Lua: "ORPHAN_NO_STOCK", Value: int64(OrphanNoStock)}, {Lua: "SALE_MISSING", Value: int64(SaleMissing)},
	{Lua: "ORPHAN_SEAT", Value: int64(OrphanSeat)}, {Lua: "ORPHAN_OVER_LIMIT", Value: int64(OrphanOverLimit)}}

// Adopt brings back the orders of a sale that a worker's task names but Redis no longer
// holds as queued and MySQL does not have (the caller checked both): orders whose state
// was lost with the sale's, after Redis had acknowledged them. Seats of group-buy sales
// are not adopted (their group's state went with them: OrphanSeat). It returns each
// order's outcome by id, and the epoch of the state the adopted ones are claimed in
// (the lowest of the buckets', which a rebuild writes alike).
func (s *Rebuilds) Adopt(ctx context.Context, activityID int64, orders []stock.QueuedOrder) (map[string]Adoption, int64, error) {
	out := make(map[string]Adoption, len(orders))
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil {
		return nil, 0, fmt.Errorf("adopt orders: %w", err)
	}
	epoch := int64(-1)
	for b, qs := range stock.ByBucket(sale, orders, func(q stock.QueuedOrder) buyer.ID { return q.Buyer }) {
		got, e, err := s.adoptIn(ctx, b, qs)
		if err != nil {
			return nil, 0, err
		}
		// A bucket of a sale of several holds few units of its own (a rebuild leaves them
		// all in the reserve): the orphans it is short for take a share, as a purchase
		// would, and are tried again.
		var short []stock.QueuedOrder
		want := map[stock.Variant]int64{}
		for i, q := range qs {
			out[q.OrderID] = got[i]
			if got[i] == OrphanNoStock && sale.K() > 1 {
				short, want[q.Variant] = append(short, q), want[q.Variant]+int64(q.Quantity)
			}
		}
		if len(short) > 0 {
			var moved int64
			for v, n := range want {
				m, _, err := s.moves.Refill(ctx, b, n, v)
				if err != nil {
					return nil, 0, fmt.Errorf("adopt orders: %w", err)
				}
				moved += m
			}
			if moved > 0 {
				again, _, err := s.adoptIn(ctx, b, short)
				if err != nil {
					return nil, 0, err
				}
				for i, q := range short {
					out[q.OrderID] = again[i]
				}
			}
		}
		if epoch < 0 || e < epoch {
			epoch = e
		}
	}
	return out, max(0, epoch), nil
}

// adoptIn runs adoptScript on bucket b for its orders qs, and returns their outcomes in
// order and the bucket's epoch.
func (s *Rebuilds) adoptIn(ctx context.Context, b stock.Bucket, qs []stock.QueuedOrder) ([]Adoption, int64, error) {
	args := make([]any, 0, 2*len(qs))
	for _, q := range qs {
		args = append(args, q.OrderID, stock.QueuedValue(q))
	}
	keys := []string{stock.SaleKey(b), stock.UsersKey(b), stock.QueuedKey(b), stock.ClaimedKey(b), stock.GivenBackKey(b)}
	res, err := adoptScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("adopt orders: %w", err)
	}
	if len(res) != len(qs)+1 {
		return nil, 0, fmt.Errorf("adopt orders: %d answers for %d orders", len(res), len(qs))
	}
	got := make([]Adoption, len(qs))
	for i := range qs {
		c, err := stock.CodeOf(adoptCodes, res[i])
		if err != nil {
			return nil, 0, fmt.Errorf("adopt orders: %w", err)
		}
		got[i] = Adoption(c.Value)
	}
	return got, res[len(qs)], nil
}

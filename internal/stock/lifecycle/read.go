package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/moves"
)

// Gens returns the generation of each bucket of a sale of the given buckets (-1 for a
// bucket Redis lacks), the lowest epoch of the buckets Redis has, and whether the sale
// is closed by a rebuild that began more than RebuildLease ago (by this process's
// clock): its process died, and the sale waits for another rebuild.
func (s *Sales) Gens(ctx context.Context, activityID int64, buckets int) (gens []int64, epoch int64, stuck bool, err error) {
	all := stock.Whole(activityID, buckets).All()
	cmds := make([]*redis.SliceCmd, len(all))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range all {
			cmds[i] = p.HMGet(ctx, stock.SaleKey(b), "total", "gen", "closed", "epoch")
		}
		return nil
	})
	if err != nil {
		return nil, 0, false, fmt.Errorf("read generations of sale %d: %w", activityID, err)
	}
	gens, epoch = make([]int64, len(all)), -1
	for i, c := range cmds {
		v := c.Val()
		if v[0] == nil {
			gens[i] = -1
			continue
		}
		if gens[i], err = hashInt(v[1]); err != nil {
			return nil, 0, false, fmt.Errorf("sale %d: generation: %w", activityID, err)
		}
		e, err := hashInt(v[3])
		if err != nil {
			return nil, 0, false, fmt.Errorf("sale %d: epoch: %w", activityID, err)
		}
		if epoch < 0 || e < epoch {
			epoch = e
		}
		if closed, _ := v[2].(string); closed != "" {
			f := strings.Fields(closed)
			at, _ := strconv.ParseInt(f[len(f)-1], 10, 64)
			stuck = stuck || time.Since(time.UnixMilli(at)) > RebuildLease
		}
	}
	return gens, max(0, epoch), stuck, nil
}

// hashInt is an integer field as HMGET read it, 0 when the field is absent.
func hashInt(v any) (int64, error) {
	str, _ := v.(string)
	if str == "" {
		return 0, nil
	}
	return strconv.ParseInt(str, 10, 64)
}

// Read returns the Redis state of the given sales; a sale Redis does not know is absent.
// A sale of several buckets reads its settings from bucket 0, and the units available
// summed over the reserve, every bucket and the moves under way; a sale of variants reads
// each variant's too.
func (s *Sales) Read(ctx context.Context, activityIDs []int64) (map[int64]stock.Sale, error) {
	cmds := make([]*redis.SliceCmd, len(activityIDs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range activityIDs {
			cmds[i] = p.HMGet(ctx, stock.SaleKey(stock.One(id)), "avail", "total", "limit", "start", "end", "price", "paywin", "gen",
				"buckets", "reserve", "variants", "vlimit")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read sales: %w", err)
	}
	sales := make(map[int64]stock.Sale, len(activityIDs))
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
		sale := stock.Sale{ActivityID: id, Available: n[0], Total: n[1], Limit: int(n[2]),
			StartsAt: time.UnixMilli(n[3]).UTC(), EndsAt: time.UnixMilli(n[4]).UTC(),
			PriceCents: n[5], PayWindow: time.Duration(n[6]) * time.Second, Gen: n[7], Buckets: max(1, int(n[8])),
			Reserve: n[9], VariantLimit: int(n[11])}
		if n[10] < 0 || n[10] > stock.MaxVariants {
			return nil, fmt.Errorf("read sale %d: %d variants", id, n[10])
		}
		if sale.Buckets > 1 {
			s.sk.LearnBuckets(id, sale.Buckets)
		}
		if sale.Buckets > 1 || n[10] > 0 {
			if err := s.available(ctx, stock.Whole(id, sale.Buckets), &sale, int(n[10])); err != nil {
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
func (s *Sales) available(ctx context.Context, whole stock.Bucket, sale *stock.Sale, n int) error {
	all := whole.All()
	hashes := make([]*redis.MapStringStringCmd, len(all))
	recorded := make([]*redis.MapStringStringCmd, len(all))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range all {
			hashes[i] = p.HGetAll(ctx, stock.SaleKey(b))
			recorded[i] = p.HGetAll(ctx, stock.MovesKey(b))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read units of sale %d: %w", whole.Activity(), err)
	}
	var sum int64
	variants := make([]int64, n)
	var pending []moves.Move
	for i, b := range all {
		stock.UnitsOf(hashes[i].Val(), "avail", n, &sum, variants)
		stock.UnitsOf(hashes[i].Val(), "reserve", n, &sum, variants)
		for id, v := range recorded[i].Val() {
			m, err := moves.Parse(b, id, v)
			if err != nil {
				return err
			}
			pending = append(pending, m)
		}
	}
	unapplied, err := s.moves.Unapplied(ctx, pending)
	if err != nil {
		return err
	}
	for _, m := range unapplied {
		sum += m.Units
		if i, ok := m.Variant.Index(); ok && i < n {
			variants[i] += m.Units
		}
	}
	sale.Available, sale.Variants = sum, nil
	for i := range variants {
		total, _ := strconv.ParseInt(hashes[0].Val()[stock.VariantField("total", stock.VariantAt(i))], 10, 64)
		sale.Variants = append(sale.Variants, stock.VariantStock{Total: total, Available: variants[i]})
	}
	return nil
}

// ErrNotQueued means the order is not (or no longer) queued in Redis.
var ErrNotQueued = errors.New("order not queued")

// Queued returns a queued order, or ErrNotQueued. In a sale of several buckets it is
// looked for in each.
func (s *Sales) Queued(ctx context.Context, activityID int64, orderID string) (stock.QueuedOrder, error) {
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil {
		return stock.QueuedOrder{}, err
	}
	all := sale.All()
	cmds := make([]*redis.StringCmd, len(all))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range all {
			cmds[i] = p.HGet(ctx, stock.QueuedKey(b), orderID)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return stock.QueuedOrder{}, fmt.Errorf("read queued order: %w", err)
	}
	for _, c := range cmds {
		if v, err := c.Result(); err == nil {
			return stock.ParseQueued(activityID, orderID, v)
		}
	}
	return stock.QueuedOrder{}, ErrNotQueued
}

// QueuedTotals returns how many orders of a sale are queued and their units.
func (s *Sales) QueuedTotals(ctx context.Context, activityID int64) (orders, units int64, err error) {
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil {
		return 0, 0, err
	}
	all := sale.All()
	n := make([]*redis.IntCmd, len(all))
	u := make([]*redis.StringCmd, len(all))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range all {
			n[i] = p.HLen(ctx, stock.QueuedKey(b))
			u[i] = p.HGet(ctx, stock.SaleKey(b), "qunits")
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

// OldestQueued returns a time no later than when the oldest order of a sale still
// queued was taken (zero with none queued): settle's Settler.Oldest, which reads each
// bucket's queued-since index and drops on the way the members whose orders all left.
func (s *Sales) OldestQueued(ctx context.Context, activityID int64) (time.Time, error) {
	return s.settle.Oldest(ctx, activityID)
}

// UserQueued returns a buyer's queued orders in the given sales, in two round trips
// (and one more for the sales whose buckets this process has not read yet): the ids in
// the buyer's queued ids field (buyerfields.go) and in the set of the release before
// (UserQueuedKey), then their values.
func (s *Sales) UserQueued(ctx context.Context, activityIDs []int64, who buyer.ID) ([]stock.QueuedOrder, error) {
	ks, err := s.sk.BucketsOfAll(ctx, activityIDs)
	if err != nil {
		return nil, err
	}
	homes := make([]stock.Bucket, len(activityIDs))
	for i, id := range activityIDs {
		homes[i] = stock.Home(id, who, ks[id])
	}
	fields := make([]*redis.StringCmd, len(activityIDs))
	sets := make([]*redis.StringSliceCmd, len(activityIDs))
	// each command's error is read below: a buyer without the field is redis.Nil, which
	// the pipeline's first error could be while another command failed
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range homes {
			fields[i] = p.HGet(ctx, stock.UsersKey(b), stock.QueuedField(who))
			sets[i] = p.SMembers(ctx, stock.UserQueuedKey(b, who))
		}
		return nil
	})
	ids := make([][]string, len(activityIDs))
	for i := range homes {
		if err := fields[i].Err(); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("read user's queued orders: %w", err)
		}
		if err := sets[i].Err(); err != nil {
			return nil, fmt.Errorf("read user's queued orders: %w", err)
		}
		ids[i] = strings.Fields(fields[i].Val())
		for _, id := range sets[i].Val() { // queued by an API of the release before
			if !slices.Contains(ids[i], id) {
				ids[i] = append(ids[i], id)
			}
		}
	}
	values := make([]*redis.SliceCmd, len(activityIDs))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range homes {
			if len(ids[i]) > 0 {
				values[i] = p.HMGet(ctx, stock.QueuedKey(b), ids[i]...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read user's queued orders: %w", err)
	}
	var out []stock.QueuedOrder
	for i, id := range activityIDs {
		if values[i] == nil {
			continue
		}
		for j, v := range values[i].Val() {
			str, ok := v.(string)
			if !ok {
				continue // settled meanwhile
			}
			q, err := stock.ParseQueued(id, ids[i][j], str)
			if err != nil {
				return nil, err
			}
			out = append(out, q)
		}
	}
	return out, nil
}

// Snapshot is a sale's Redis state read in one transaction.
type Snapshot struct {
	Sale   stock.Sale
	Queued []stock.QueuedOrder
	// Users is the units each buyer holds (queued, created and paid orders).
	Users map[buyer.ID]int64
}

// Snapshot reads a sale's state, its queued orders and its users' units atomically. A
// sale of several buckets is read bucket by bucket, each atomically, and its units
// available are those of the reserve, the buckets and the moves not yet applied.
func (s *Sales) Snapshot(ctx context.Context, activityID int64) (Snapshot, error) {
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{Sale: stock.Sale{ActivityID: activityID, Buckets: max(1, sale.K())}, Users: map[buyer.ID]int64{}}
	var recorded []moves.Move
	for _, b := range sale.All() {
		ms, err := snapshotBucket(ctx, s.rdb, b, &snap)
		if err != nil {
			return snap, err
		}
		recorded = append(recorded, ms...)
	}
	unapplied, err := s.moves.Unapplied(ctx, recorded)
	for _, m := range unapplied {
		snap.Sale.Available += m.Units
		if i, ok := m.Variant.Index(); ok && i < len(snap.Sale.Variants) {
			snap.Sale.Variants[i].Available += m.Units
		}
	}
	return snap, err
}

// snapshotBucket adds one bucket's state to snap, read in one transaction, and returns
// the moves recorded there.
func snapshotBucket(ctx context.Context, rdb redis.UniversalClient, b stock.Bucket, snap *Snapshot) ([]moves.Move, error) {
	var sale, queued, users, recorded *redis.MapStringStringCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		sale = p.HGetAll(ctx, stock.SaleKey(b))
		queued = p.HGetAll(ctx, stock.QueuedKey(b))
		users = p.HGetAll(ctx, stock.UsersKey(b))
		recorded = p.HGetAll(ctx, stock.MovesKey(b))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot sale %d: %w", b.Activity(), err)
	}
	h := sale.Val()
	if h["avail"] == "" || h["total"] == "" {
		return nil, stock.ErrNoSale
	}
	total, err := strconv.ParseInt(h["total"], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("snapshot sale %d: total %q", b.Activity(), h["total"])
	}
	n, _ := strconv.Atoi(h["variants"])
	if b.N() == 0 {
		snap.Sale.Variants = make([]stock.VariantStock, n)
		for i := range snap.Sale.Variants {
			snap.Sale.Variants[i].Total, _ = strconv.ParseInt(h[stock.VariantField("total", stock.VariantAt(i))], 10, 64)
		}
	}
	variants := make([]int64, len(snap.Sale.Variants))
	var reserve int64
	stock.UnitsOf(h, "avail", len(variants), &snap.Sale.Available, variants)
	stock.UnitsOf(h, "reserve", len(variants), &reserve, variants)
	for i, v := range variants {
		snap.Sale.Variants[i].Available += v
	}
	snap.Sale.Available += reserve
	snap.Sale.Total, snap.Sale.Reserve = total, snap.Sale.Reserve+reserve
	for id, v := range queued.Val() {
		q, err := stock.ParseQueued(b.Activity(), id, v)
		if err != nil {
			return nil, err
		}
		snap.Queued = append(snap.Queued, q)
	}
	if err := stock.ParseHoldings(users.Val(), snap.Users); err != nil {
		return nil, fmt.Errorf("snapshot sale %d: %w", b.Activity(), err)
	}
	var out []moves.Move
	for id, v := range recorded.Val() {
		m, err := moves.Parse(b, id, v)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// UserLocks returns the owner tokens of the live buyer locks of a sale, by buyer. It
// reads every bucket's users hash whole: for tests and tools, not for the purchase path.
func (s *Sales) UserLocks(ctx context.Context, activityID int64) (map[buyer.ID]string, error) {
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil {
		return nil, fmt.Errorf("user locks: %w", err)
	}
	now, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("user locks: %w", err)
	}
	out := map[buyer.ID]string{}
	for _, b := range sale.All() {
		users, err := s.rdb.HGetAll(ctx, stock.UsersKey(b)).Result()
		if err != nil {
			return nil, fmt.Errorf("user locks: %w", err)
		}
		for k, v := range users {
			kind, who, err1 := stock.BuyerField(k)
			if kind != stock.LockKind {
				continue
			}
			token, expiry, ok := strings.Cut(v, " ")
			ms, err2 := strconv.ParseInt(expiry, 10, 64)
			if err1 != nil || !ok || err2 != nil {
				return nil, fmt.Errorf("user locks: malformed field %q=%q", k, v)
			}
			if ms > now.UnixMilli() {
				out[who] = token
			}
		}
	}
	return out, nil
}

// QueuedOrders returns the orders of a sale still queued in Redis (not yet in MySQL), of
// every bucket, for the funnel. It reads each bucket's whole queued hash: a few
// thousand entries in a crowd, none once the worker has caught up.
func (s *Sales) QueuedOrders(ctx context.Context, activityID int64) ([]stock.QueuedOrder, error) {
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil {
		return nil, err
	}
	all := sale.All()
	cmds := make([]*redis.MapStringStringCmd, len(all))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range all {
			cmds[i] = p.HGetAll(ctx, stock.QueuedKey(b))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read queued orders: %w", err)
	}
	var out []stock.QueuedOrder
	for _, c := range cmds {
		for id, v := range c.Val() {
			q, err := stock.ParseQueued(activityID, id, v)
			if err != nil {
				return nil, err
			}
			out = append(out, q)
		}
	}
	return out, nil
}

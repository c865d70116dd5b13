// Package upkeep keeps a sale's Redis state in step with MySQL, its record, at both
// ends of its life: a Rebuilder writes it again from MySQL when Redis lost it or holds
// it stale (rebuild.go), and an Archiver removes it once the sale is over, after which
// MySQL answers for the sale alone (archive.go). The API's service kicks a rebuild when
// a purchase finds its sale missing; the worker runs both periodically.
package upkeep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/group"
	"seckill/internal/stock/lifecycle"
	"seckill/internal/stock/reserve"
	"seckill/internal/store"
)

// Rebuilder rebuilds from MySQL, the record, the Redis state of sales that Redis has
// lost (a FLUSHALL, a server run without AOF, a wiped shard) or holds stale (an old AOF,
// a replica promoted without the last writes: its generation is below the one MySQL
// recorded; see internal/stock/rebuild.go): the settings, the units available (stock_total
// minus the units of orders that hold stock in MySQL: created, paid, and cancelled ones
// whose units are not back yet, and minus those of orders Redis still holds as queued
// that MySQL has not), and each user's units. The API starts it when a purchase finds
// its sale missing, and the worker checks every live sale periodically. The write is one
// script that does nothing when the sale changed since it was read, so however many
// processes notice the loss at once, it is rebuilt once, and a worker persisting orders
// meanwhile makes it read again rather than count an order twice or not at all.
//
// What it cannot recover: the orders only the lost Redis held (queued, not yet in
// MySQL) are gone with it. With appendfsync always on one server, or MIN_REPLICAS on a
// cluster, a crash or a failover loses none; a FLUSHALL or a lost disk does.
type Rebuilder struct {
	store      *store.Upkeep
	activities *store.Activities
	sales      *lifecycle.Sales
	rebuilds   *lifecycle.Rebuilds
	groups     *group.Groups
	running    sync.Map // activity id -> struct{}: a rebuild under way in this process
	metrics    *rebuildMetrics
	// Codes, when set, writes each sale's access codes back before it reopens
	// (internal/accesscode).
	Codes CodeRestorer
}

// CodeRestorer writes a sale's access codes back to Redis from MySQL.
type CodeRestorer interface {
	Restore(ctx context.Context, activityID int64) error
}

// CodeRecorder records in MySQL the last uses of a sale's access codes.
type CodeRecorder interface {
	RecordSale(ctx context.Context, activityID int64) error
}

// NewRebuilder returns a Rebuilder.
func NewRebuilder(st *store.Upkeep, activities *store.Activities, sk *stock.Stock) *Rebuilder {
	return &Rebuilder{store: st, activities: activities, sales: lifecycle.New(sk), rebuilds: lifecycle.NewRebuilds(sk), groups: group.New(sk)}
}

// rebuildAttempts bounds how often Rebuild reads again when orders moved meanwhile.
const rebuildAttempts = 20

// Rebuild rebuilds a sale's Redis state from MySQL if Redis has lost it, or always with
// force (a current state is rebuilt to the same figures, its queued orders kept), and
// reports whether it did. store.ErrNotFound for a sale MySQL does not know, store.ErrArchived for
// an archived one (MySQL refuses its epoch too, should it be archived meanwhile: the
// rebuild writes nothing, and reopens what its Close wrote). The sale is closed
// to purchases while it is rebuilt (stock.Close), by one process at a time: when
// another process is rebuilding it, Rebuild leaves it to that one.
//
// Before it reads MySQL it raises the sale's epoch there (store.Upkeep.NextRedisEpoch),
// and the state it writes carries that epoch: from then on MySQL refuses the orders a
// worker claimed in the state being replaced, which this rebuild may not have read, and
// the worker claims or adopts them again on the rebuilt state. Only one rebuild at a time
// raises the epoch, so the state Redis ends with has MySQL's.
func (r *Rebuilder) Rebuild(ctx context.Context, id int64, force bool) (rebuilt bool, err error) {
	a, err := r.activities.GetActivity(ctx, id)
	if err != nil {
		return false, err
	}
	if a.Archived() {
		return false, store.ErrArchived
	}
	k := max(1, a.StockBuckets)
	lost, err := r.rebuilds.RebuildPoint(ctx, id, k) // what made this rebuild start
	if err != nil || lost.Exists && !force {
		return false, err
	}
	r.metrics.started()
	defer func() { r.metrics.ended(rebuilt, err) }()
	closing, err := r.rebuilds.Close(ctx, id, k)
	switch {
	case errors.Is(err, lifecycle.ErrRebuilding):
		return false, nil
	case errors.Is(err, lifecycle.ErrArchived):
		return false, store.ErrArchived
	case err != nil:
		return false, err
	}
	if k == 1 { // its one write is all or nothing: a failed rebuild leaves the sale as it was, open
		defer func() {
			if err != nil {
				err = errors.Join(err, r.rebuilds.Reopen(context.WithoutCancel(ctx), id, k, closing))
			}
		}()
	}
	from, err := r.rebuilds.RebuildPoint(ctx, id, k) // read again, now that the sale is closed
	if err != nil {
		return false, err
	}
	if !lost.Whole && from.Whole {
		// Redis missed some of the sale, and another process rebuilt it before the Close.
		return false, r.rebuilds.Reopen(ctx, id, k, closing)
	}
	epoch, err := r.store.NextRedisEpoch(ctx, id)
	if errors.Is(err, store.ErrArchived) && k > 1 { // archived since it was read: no state of it comes back
		return false, errors.Join(err, r.rebuilds.Reopen(context.WithoutCancel(ctx), id, k, closing))
	}
	if err != nil {
		return false, err
	}
	// The keys first, once: each names an order MySQL holds, true whatever the rebuild
	// finds, and a replay that comes once the sale is back must meet its key. Orders
	// stored during a later attempt came from Redis with their keys.
	if err := r.restoreKeys(ctx, id, k); err != nil {
		return false, err
	}
	if r.Codes != nil { // likewise the codes: a buyer who presents one once the sale is back must meet it
		if err := r.Codes.Restore(ctx, id); err != nil {
			return false, err
		}
	}
	for attempt := 0; attempt < rebuildAttempts; attempt++ {
		if attempt > 0 { // read again: orders moved
			if from, err = r.rebuilds.RebuildPoint(ctx, id, k); err != nil {
				return false, err
			}
		}
		ids := make([]string, len(from.Queued))
		for i, q := range from.Queued {
			ids[i] = q.OrderID
		}
		f, err := r.store.RebuildFacts(ctx, id, ids)
		if err != nil {
			return false, err
		}
		held := f.OffSale // out of the stock: the buyers' units, and those kept off sale
		for _, n := range f.Units {
			held += n
		}
		var settled []stock.QueuedOrder
		for _, q := range from.Queued {
			if f.Stored[q.OrderID] {
				settled = append(settled, q)
			}
		}
		a := f.Activity
		sale := store.SaleOf(a, 0)
		for i := range sale.Variants {
			sale.Variants[i].OffSale = f.VariantOffSale[i]
		}
		recorded, err := r.recordedGen(ctx, a)
		if err != nil {
			return false, err
		}
		sale.Gen, sale.Epoch = max(from.Gen, recorded)+1, epoch
		err = r.rebuilds.Rebuild(ctx, from, closing, sale, f.Units, f.Orders, held, settled, f.VariantUnits)
		switch {
		case err == nil:
			groups, err := r.groups.Restore(ctx, id, groupsOf(f.Seats))
			slog.Warn("rebuilt a sale's Redis state from MySQL", "activity", id, "buckets", k, "was_there", lost.Exists,
				"redis_gen", from.Gen, "mysql_gen", recorded, "epoch", epoch, "held", held, "users", len(f.Units),
				"kept_queued", len(from.Queued)-len(settled), "groups_restored", groups)
			return true, err
		case !errors.Is(err, lifecycle.ErrMoved):
			return false, err
		}
		select { // orders moved meanwhile: read both again
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		}
	}
	return false, fmt.Errorf("rebuild sale %d: %w %d times", id, lifecycle.ErrMoved, rebuildAttempts)
}

// recordedGen is the highest generation of a sale's Redis state (of any of its buckets)
// that MySQL has orders written under.
func (r *Rebuilder) recordedGen(ctx context.Context, a store.Activity) (int64, error) {
	if a.StockBuckets <= 1 {
		return a.RedisGen, nil
	}
	gens, err := r.store.BucketGens(ctx)
	if err != nil {
		return 0, err
	}
	recorded := a.RedisGen
	for _, g := range gens[a.ID] {
		recorded = max(recorded, g)
	}
	return recorded, nil
}

// restoreKeys writes back to Redis the Idempotency-Keys of the sale's orders in MySQL
// that have not expired yet (each in its buyer's home bucket of the sale's buckets).
func (r *Rebuilder) restoreKeys(ctx context.Context, id int64, buckets int) error {
	orders, err := r.store.KeyedOrders(ctx, id, time.Now().Add(-reserve.IdempotencyTTL))
	if err != nil {
		return err
	}
	keys := make([]lifecycle.KeptKey, 0, len(orders))
	for _, o := range orders {
		if o.IdempotencyKey == nil || o.RequestFingerprint == nil {
			continue
		}
		keys = append(keys, lifecycle.KeptKey{Buyer: o.Buyer, Key: *o.IdempotencyKey, Fingerprint: *o.RequestFingerprint,
			OrderID: o.ID, Expires: o.CreatedAt.Add(reserve.IdempotencyTTL)})
	}
	return r.rebuilds.RestoreKeys(ctx, id, buckets, keys)
}

// groupsOf gathers MySQL's seats by group.
func groupsOf(seats []store.GroupSeat) []group.Group {
	var out []group.Group
	at := map[string]int{}
	for _, s := range seats {
		i, ok := at[s.GroupID]
		if !ok {
			status := group.Open
			switch s.Status {
			case "complete":
				status = group.Complete
			case "failed":
				status = group.Failed
			}
			i = len(out)
			at[s.GroupID] = i
			out = append(out, group.Group{ID: s.GroupID, Size: s.Size, Status: status, ExpiresAt: s.ExpiresAt,
				Seats: map[buyer.ID]group.Seat{}})
		}
		if s.OrderID != "" {
			out[i].Seats[s.Buyer] = group.Seat{OrderID: s.OrderID, Quantity: s.Quantity}
		}
	}
	return out
}

// Kick starts Rebuild in the background, unless one runs for the sale in this process.
func (r *Rebuilder) Kick(id int64) {
	if _, busy := r.running.LoadOrStore(id, struct{}{}); busy {
		return
	}
	go func() {
		defer r.running.Delete(id)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := r.Rebuild(ctx, id, false); err != nil && !errors.Is(err, store.ErrArchived) {
			slog.Error("rebuild a sale Redis lost", "activity", id, "err", err)
		}
	}()
}

// RebuildLost rebuilds every sale that has not ended and that Redis has lost or holds
// stale, and returns how many it rebuilt (the worker's periodic check). MySQL is read
// before Redis, so a current sale's generation in Redis is at least MySQL's.
func (r *Rebuilder) RebuildLost(ctx context.Context, now time.Time) (int, error) {
	as, err := r.activities.UnarchivedActivities(ctx)
	if err != nil {
		return 0, err
	}
	var live []store.Activity
	var ids []int64
	several := false
	for _, a := range as {
		if now.Before(a.EndsAt) {
			live, ids = append(live, a), append(ids, a.ID)
			several = several || a.StockBuckets > 1
		}
	}
	if len(live) == 0 {
		return 0, nil
	}
	var bucketGens map[int64]map[int]int64
	if several {
		if bucketGens, err = r.store.BucketGens(ctx); err != nil {
			return 0, err
		}
	}
	present, err := r.sales.Read(ctx, ids)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, a := range live {
		sale, ok := present[a.ID]
		behind := false
		if ok {
			gens, epoch, stuck, err := r.sales.Gens(ctx, a.ID, a.StockBuckets)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for b, gen := range gens {
				recorded := a.RedisGen
				if b > 0 {
					recorded = bucketGens[a.ID][b]
				}
				behind = behind || gen < recorded // a lost bucket reads -1
			}
			// An epoch below MySQL's: a rebuild raised it and did not write its state (one
			// under way holds the sale closed, and Rebuild leaves it to that one).
			behind = behind || epoch < a.RedisEpoch || stuck
		}
		if ok && !behind {
			continue
		}
		if ok {
			slog.Warn("a sale's Redis state is stale: a generation or its epoch is below MySQL's, a bucket is lost, or its rebuild died",
				"activity", a.ID, "redis_gen", sale.Gen, "mysql_gen", a.RedisGen, "mysql_epoch", a.RedisEpoch)
		}
		rebuilt, err := r.Rebuild(ctx, a.ID, ok)
		if rebuilt {
			n++
		}
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// rebuildMetrics count the rebuilds of sales' Redis state; nil counts nothing.
type rebuildMetrics struct {
	rebuilds *prometheus.CounterVec
	running  prometheus.Gauge
}

// Register adds the rebuilds' metrics to reg: the rebuilds this process ran, by
// outcome (rebuilt, failed, or none: another process did it or nothing was lost
// after all), and the ones under way.
func (r *Rebuilder) Register(reg prometheus.Registerer) {
	m := &rebuildMetrics{
		rebuilds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_sale_rebuilds_total",
			Help: "Rebuilds of a sale's Redis state from MySQL this process ran, by outcome: rebuilt, failed, none.",
		}, []string{"outcome"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seckill_sale_rebuilds_running",
			Help: "Rebuilds of a sale's Redis state under way in this process (a sale of several buckets is closed meanwhile).",
		}),
	}
	for _, o := range []string{"rebuilt", "failed", "none"} {
		m.rebuilds.WithLabelValues(o)
	}
	reg.MustRegister(m.rebuilds, m.running)
	r.metrics = m
}

func (m *rebuildMetrics) started() {
	if m != nil {
		m.running.Inc()
	}
}

func (m *rebuildMetrics) ended(rebuilt bool, err error) {
	if m == nil {
		return
	}
	m.running.Dec()
	switch {
	case err != nil:
		m.rebuilds.WithLabelValues("failed").Inc()
	case rebuilt:
		m.rebuilds.WithLabelValues("rebuilt").Inc()
	default:
		m.rebuilds.WithLabelValues("none").Inc()
	}
}

package sale

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"seckill/internal/stock"
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
	store   *store.Store
	stock   *stock.Stock
	running sync.Map // activity id -> struct{}: a rebuild under way in this process
}

// NewRebuilder returns a Rebuilder.
func NewRebuilder(st *store.Store, sk *stock.Stock) *Rebuilder {
	return &Rebuilder{store: st, stock: sk}
}

// rebuildAttempts bounds how often Rebuild reads again when orders moved meanwhile.
const rebuildAttempts = 20

// Rebuild rebuilds a sale's Redis state from MySQL if Redis has lost it, or always with
// force (a current state is rebuilt to the same figures, its queued orders kept), and
// reports whether it did. ErrNotFound for a sale MySQL does not know.
func (r *Rebuilder) Rebuild(ctx context.Context, id int64, force bool) (bool, error) {
	for attempt := 0; attempt < rebuildAttempts; attempt++ {
		from, err := r.stock.RebuildPoint(ctx, id)
		if err != nil {
			return false, err
		}
		if from.Exists && !force {
			return false, nil
		}
		// The keys first, once: each names an order MySQL holds, true whatever the
		// rebuild finds, and a replay that comes once the sale is back must meet its
		// key. Orders stored during a later attempt came from Redis with their keys.
		if attempt == 0 {
			if err := r.restoreKeys(ctx, id); err != nil {
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
		held := int64(0)
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
		sale := saleOf(a, 0)
		sale.Gen = max(from.Gen, a.RedisGen) + 1
		err = r.stock.Rebuild(ctx, from, sale, f.Units, f.Orders, held, settled)
		switch {
		case err == nil:
			groups, err := r.stock.RestoreGroups(ctx, id, groupsOf(f.Seats))
			slog.Warn("rebuilt a sale's Redis state from MySQL", "activity", id, "was_there", from.Exists,
				"redis_gen", from.Gen, "mysql_gen", a.RedisGen, "held", held, "users", len(f.Units),
				"kept_queued", len(from.Queued)-len(settled), "groups_restored", groups)
			return true, err
		case !errors.Is(err, stock.ErrMoved):
			return false, err
		case !from.Exists:
			return false, nil // another process rebuilt it meanwhile
		}
		select { // orders moved meanwhile: read both again
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		}
	}
	return false, fmt.Errorf("rebuild sale %d: %w %d times", id, stock.ErrMoved, rebuildAttempts)
}

// restoreKeys writes back to Redis the Idempotency-Keys of the sale's orders in MySQL
// that have not expired yet.
func (r *Rebuilder) restoreKeys(ctx context.Context, id int64) error {
	orders, err := r.store.KeyedOrders(ctx, id, time.Now().Add(-stock.IdempotencyTTL))
	if err != nil {
		return err
	}
	keys := make([]stock.KeptKey, 0, len(orders))
	for _, o := range orders {
		if o.IdempotencyKey == nil || o.RequestFingerprint == nil {
			continue
		}
		keys = append(keys, stock.KeptKey{UserID: o.UserID, Key: *o.IdempotencyKey, Fingerprint: *o.RequestFingerprint,
			OrderID: o.ID, Expires: o.CreatedAt.Add(stock.IdempotencyTTL)})
	}
	return r.stock.RestoreKeys(ctx, id, keys)
}

// groupsOf gathers MySQL's seats by group.
func groupsOf(seats []store.GroupSeat) []stock.Group {
	var out []stock.Group
	at := map[string]int{}
	for _, s := range seats {
		i, ok := at[s.GroupID]
		if !ok {
			status := stock.GroupOpen
			switch s.Status {
			case "complete":
				status = stock.GroupComplete
			case "failed":
				status = stock.GroupFailed
			}
			i = len(out)
			at[s.GroupID] = i
			out = append(out, stock.Group{ID: s.GroupID, Size: s.Size, Status: status, ExpiresAt: s.ExpiresAt,
				Seats: map[int64]stock.Seat{}})
		}
		if s.OrderID != "" {
			out[i].Seats[s.UserID] = stock.Seat{OrderID: s.OrderID, Quantity: s.Quantity}
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
		if _, err := r.Rebuild(ctx, id, false); err != nil {
			slog.Error("rebuild a sale Redis lost", "activity", id, "err", err)
		}
	}()
}

// RebuildLost rebuilds every sale that has not ended and that Redis has lost or holds
// stale, and returns how many it rebuilt (the worker's periodic check). MySQL is read
// before Redis, so a current sale's generation in Redis is at least MySQL's.
func (r *Rebuilder) RebuildLost(ctx context.Context, now time.Time) (int, error) {
	as, err := r.store.ListActivities(ctx)
	if err != nil {
		return 0, err
	}
	var live []int64
	recorded := map[int64]int64{} // MySQL's generation by sale
	for _, a := range as {
		if now.Before(a.EndsAt) {
			live = append(live, a.ID)
			recorded[a.ID] = a.RedisGen
		}
	}
	if len(live) == 0 {
		return 0, nil
	}
	present, err := r.stock.Sales(ctx, live)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, id := range live {
		sale, ok := present[id]
		if ok && sale.Gen >= recorded[id] {
			continue
		}
		if ok {
			slog.Warn("a sale's Redis state is stale: its generation is below MySQL's", "activity", id,
				"redis_gen", sale.Gen, "mysql_gen", recorded[id])
		}
		rebuilt, err := r.Rebuild(ctx, id, ok)
		if rebuilt {
			n++
		}
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// Rebuild rebuilds a sale's Redis state from MySQL (the admin's button) and returns its
// stats. A current state comes out with the same figures: the orders Redis holds as
// queued are kept. ErrNotFound for an unknown id.
func (s *Service) Rebuild(ctx context.Context, id int64) (Stats, error) {
	if _, err := s.rebuild.Rebuild(ctx, id, true); err != nil {
		if errors.Is(err, ErrNotFound) {
			return Stats{}, err
		}
		return Stats{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return s.Stats(ctx, id)
}

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
// lost (a FLUSHALL, a server run without AOF, a wiped shard): the settings, the units
// available (stock_total minus the units of orders that hold stock in MySQL: created,
// paid, and cancelled ones whose units are not back yet), and each user's units. The
// API starts it when a purchase finds its sale missing, and the worker checks every live
// sale periodically. The write is one script that does nothing when the sale exists, so
// however many processes notice the loss at once, it is rebuilt once.
//
// What it cannot recover: the orders only Redis held (queued, not yet in MySQL) are gone
// with it. With appendfsync always on one server, or MIN_REPLICAS on a cluster, a crash
// or a failover loses none; a FLUSHALL or a lost disk does. And a Redis that comes back
// with old data (yesterday's AOF) still has the sale, so it is not rebuilt: telling
// stale state from current is not done yet.
type Rebuilder struct {
	store   *store.Store
	stock   *stock.Stock
	running sync.Map // activity id -> struct{}: a rebuild under way in this process
}

// NewRebuilder returns a Rebuilder.
func NewRebuilder(st *store.Store, sk *stock.Stock) *Rebuilder {
	return &Rebuilder{store: st, stock: sk}
}

// Rebuild rebuilds a sale's Redis state if Redis has lost it, and reports whether it
// did. ErrNotFound for a sale MySQL does not know.
func (r *Rebuilder) Rebuild(ctx context.Context, id int64) (bool, error) {
	a, err := r.store.GetActivity(ctx, id)
	if err != nil {
		return false, err
	}
	users, err := r.store.Holdings(ctx, id)
	if err != nil {
		return false, err
	}
	held := int64(0)
	for _, n := range users {
		held += n
	}
	rebuilt, err := r.stock.Rebuild(ctx, saleOf(a, max(0, a.StockTotal-held)), users)
	if rebuilt {
		slog.Warn("rebuilt from MySQL a sale Redis had lost", "activity", id,
			"available", max(0, a.StockTotal-held), "held", held, "users", len(users))
	}
	return rebuilt, err
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
		if _, err := r.Rebuild(ctx, id); err != nil {
			slog.Error("rebuild a sale Redis lost", "activity", id, "err", err)
		}
	}()
}

// RebuildLost rebuilds every sale that has not ended and that Redis has lost, and
// returns how many it rebuilt (the worker's periodic check).
func (r *Rebuilder) RebuildLost(ctx context.Context, now time.Time) (int, error) {
	as, err := r.store.ListActivities(ctx)
	if err != nil {
		return 0, err
	}
	var live []int64
	for _, a := range as {
		if now.Before(a.EndsAt) {
			live = append(live, a.ID)
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
		if _, ok := present[id]; ok {
			continue
		}
		rebuilt, err := r.Rebuild(ctx, id)
		if rebuilt {
			n++
		}
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// Rebuild rebuilds a sale's Redis state from MySQL if Redis has lost it, and returns
// its stats. A sale Redis still holds is left as it is. ErrNotFound for an unknown id.
func (s *Service) Rebuild(ctx context.Context, id int64) (Stats, error) {
	if _, err := s.rebuild.Rebuild(ctx, id); err != nil {
		if errors.Is(err, ErrNotFound) {
			return Stats{}, err
		}
		return Stats{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return s.Stats(ctx, id)
}

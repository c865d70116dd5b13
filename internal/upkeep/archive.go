package upkeep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"seckill/internal/stock"
	"seckill/internal/stock/lifecycle"
	"seckill/internal/stock/reserve"
	"seckill/internal/store"
	"seckill/internal/waitingroom"
)

// Archiver archives the sales that are over (the worker's periodic job): once a sale has
// ended, every order of it is final and Retention has passed since the later of the two,
// its Redis state is removed, and MySQL answers for it (docs/internals/rebuild-and-archive.md,
// "Archive"). In this order, each step safe to run again:
//
//  1. Close the sale as a rebuild does (stock.Close, the same lease): purchases and
//     moves are refused, and a rebuild cannot run meanwhile (nor the archive during one).
//  2. Redis holds no order of it as queued (lifecycle.RebuildPoint): every order it took is
//     in MySQL, where (3) sees it.
//  3. MySQL marks it archived (store.Upkeep.MarkArchived), under the sale's row lock,
//     only if every order is final. From then on every answer about it comes from
//     MySQL, and a PATCH or a rebuild is refused.
//  4. Redis marks it (stock.MarkArchived), and from then on writes nothing to its keys;
//     what only they hold is kept in MySQL (Keeper: the funnel's figures).
//  5. Its keys are removed (stock.Remove), the sale hashes last, and MySQL records that
//     (store.Upkeep.MarkRedisRemoved).
//
// A run that stops after (3) is finished by a later one: the sale is still a candidate
// (no redis_removed_at), its Close meets the mark or takes the sale again, and it goes
// on from (4).
type Archiver struct {
	store *store.Upkeep
	sales *lifecycle.Rebuilds
	// Retention is how long a sale stays in Redis after its end and after its last
	// order became final (SECKILL_SALE_RETENTION).
	Retention time.Duration
	// Batch bounds the sales one run looks at.
	Batch int
	// Codes, when set, records the last uses of each sale's access codes before its
	// keys go (internal/accesscode).
	Codes CodeRecorder
	now   func() time.Time

	mu sync.Mutex
	// final is, by sale, when its last order became final, read once the sale was
	// found settled (store.Upkeep.LastFinal reads all its orders); dropped once it is
	// archived, or found unsettled again, and read again once its end has moved (a sale
	// reopened by a PATCH of ends_at takes orders again while it is no candidate).
	final   map[int64]finalAt
	metrics *archiveMetrics

	// Keeper, when set, keeps in MySQL what only a sale's Redis state holds (the
	// funnel's line and refusals: internal/funnel) once Redis takes no more writes for
	// it, before its keys are removed, and names its own keys among them.
	Keeper Keeper
}

// Keeper keeps what only a sale's Redis state holds before the archive removes it.
type Keeper interface {
	// Keep writes it to MySQL, once: a second call changes nothing.
	Keep(ctx context.Context, s store.Activity) error
	// Keys are its keys of the sale, for the archive to remove.
	Keys(activityID int64) []string
}

// NewArchiver returns an Archiver of the sales over for retention.
func NewArchiver(st *store.Upkeep, sk *stock.Stock, retention time.Duration) *Archiver {
	return &Archiver{store: st, sales: lifecycle.NewRebuilds(sk), Retention: retention, Batch: 100, now: time.Now, final: map[int64]finalAt{}}
}

// finalAt is when a sale's last order became final, as read while the sale ended at
// endsAt.
type finalAt struct{ at, endsAt time.Time }

// SetClock replaces the Archiver's clock (tests).
func (a *Archiver) SetClock(now func() time.Time) { a.now = now }

// Run archives the sales that are due, up to Batch of them, and returns how many it
// archived (those it finished removing).
func (a *Archiver) Run(ctx context.Context) (int, error) {
	now := a.now()
	sales, err := a.store.ArchiveCandidates(ctx, now.Add(-a.Retention), a.Batch)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, s := range sales {
		done, err := a.Archive(ctx, s, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("archive sale %d: %w", s.ID, err))
		}
		if done {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// Archive archives one sale, a candidate of store.Upkeep.ArchiveCandidates, if it is due
// at now, and reports whether its Redis state is gone. A sale that is not due yet, or
// that a rebuild holds, is left for a later run (false, nil).
func (a *Archiver) Archive(ctx context.Context, s store.Activity, now time.Time) (bool, error) {
	if !s.Archived() {
		if due, err := a.due(ctx, s, now); err != nil || !due {
			return false, err
		}
	}
	k := max(1, s.StockBuckets)
	closing, err := a.sales.Close(ctx, s.ID, k)
	marked := errors.Is(err, lifecycle.ErrArchived)
	switch {
	case errors.Is(err, lifecycle.ErrRebuilding):
		return false, nil // a rebuild (or another run) holds it: next time
	case err != nil && !marked:
		return false, err
	}
	if !marked {
		if !s.Archived() {
			ok, err := a.markInMySQL(ctx, s, now)
			if err != nil || !ok {
				return false, errors.Join(err, a.sales.Reopen(context.WithoutCancel(ctx), s.ID, k, closing))
			}
		}
		if err := a.sales.MarkArchived(ctx, s.ID, k, closing); errors.Is(err, lifecycle.ErrRebuilding) {
			return false, nil // its lease ran out to a rebuild, which MySQL refuses: next time
		} else if err != nil {
			return false, err
		}
	}
	if a.Codes != nil {
		if err := a.Codes.RecordSale(ctx, s.ID); err != nil {
			return false, err
		}
	}
	extra := waitingroom.Keys(s.ID)
	if a.Keeper != nil {
		if err := a.Keeper.Keep(ctx, s); err != nil {
			return false, err
		}
		extra = append(extra, a.Keeper.Keys(s.ID)...)
	}
	names, err := a.store.SaleNames(ctx, s.ID, now.Add(-reserve.IdempotencyTTL))
	if err != nil {
		return false, err
	}
	keys := make([]lifecycle.KeptKey, 0, len(names.Keys))
	for _, o := range names.Keys {
		if o.IdempotencyKey != nil {
			keys = append(keys, lifecycle.KeptKey{Buyer: o.Buyer, Key: *o.IdempotencyKey})
		}
	}
	removed, err := a.sales.Remove(ctx, s.ID, k, lifecycle.Names{Buyers: names.Buyers, Keys: keys, Groups: names.Groups,
		Extra: extra})
	if err != nil {
		return false, err
	}
	if err := a.store.MarkRedisRemoved(ctx, s.ID, a.now()); err != nil {
		return false, err
	}
	a.mu.Lock()
	delete(a.final, s.ID)
	a.mu.Unlock()
	a.metrics.archived(removed)
	slog.Info("archived a sale: its Redis state is gone, MySQL answers for it", "activity", s.ID, "buckets", k,
		"buyers", len(names.Buyers), "keys_removed", removed)
	return true, nil
}

// due reports whether a sale not archived yet is due at now: every order of it final,
// and the last of them final, and its last refund recorded, for Retention (its end is,
// by ArchiveCandidates). A refund is the one change of a settled sale, so the time
// remembered (store.Upkeep.LastFinal, which reads every order) is joined by the last
// refund's, read each time through the sale's refunded orders alone.
func (a *Archiver) due(ctx context.Context, s store.Activity, now time.Time) (bool, error) {
	unsettled, err := a.store.Unsettled(ctx, s.ID)
	if err != nil {
		return false, err
	}
	a.mu.Lock()
	f, known := a.final[s.ID]
	if unsettled {
		delete(a.final, s.ID)
	}
	a.mu.Unlock()
	if unsettled {
		return false, nil
	}
	last := f.at
	if !known || !f.endsAt.Equal(s.EndsAt) {
		if last, err = a.store.LastFinal(ctx, s.ID); err != nil {
			return false, err
		}
		a.mu.Lock()
		a.final[s.ID] = finalAt{at: last, endsAt: s.EndsAt}
		a.mu.Unlock()
	}
	refunded, err := a.store.LastRefund(ctx, s.ID)
	if err != nil {
		return false, err
	}
	if refunded.After(last) {
		last = refunded
	}
	return !now.Before(last.Add(a.Retention)), nil
}

// markInMySQL has MySQL mark a closed sale archived, once Redis holds no order of it as
// queued, and reports whether it did.
func (a *Archiver) markInMySQL(ctx context.Context, s store.Activity, now time.Time) (bool, error) {
	pt, err := a.sales.RebuildPoint(ctx, s.ID, max(1, s.StockBuckets))
	if err != nil || len(pt.Queued) > 0 {
		return false, err // an order on its way to MySQL: next time
	}
	err = a.store.MarkArchived(ctx, s.ID, now.Add(-a.Retention), now)
	if errors.Is(err, store.ErrNotSettled) {
		return false, nil
	}
	return err == nil, err
}

// archiveMetrics count the archived sales; nil counts nothing.
type archiveMetrics struct {
	sales, keys prometheus.Counter
}

// Register adds the archive's metrics to reg: the sales this process archived, and the
// Redis keys their removal found.
func (a *Archiver) Register(reg prometheus.Registerer) {
	m := &archiveMetrics{
		sales: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seckill_sales_archived_total",
			Help: "Sales this worker archived: their Redis state removed, MySQL answering for them.",
		}),
		keys: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seckill_archived_keys_removed_total",
			Help: "Redis keys the archive of sales removed.",
		}),
	}
	reg.MustRegister(m.sales, m.keys)
	a.metrics = m
}

func (m *archiveMetrics) archived(keys int64) {
	if m != nil {
		m.sales.Inc()
		m.keys.Add(float64(keys))
	}
}

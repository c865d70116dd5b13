// Package stock is the core of a sale's state in Redis, which the packages below it
// share: the names of every key (keys.go), the buckets a sale's stock and buyers are
// split over (bucket.go), a buyer's fields and holdings (buyerfields.go, holdings.go),
// the queued order and its one format for Go and Lua (queued.go), a sale's terms
// (sale.go), the errors of a purchase (errors.go), and the script loader (scripts.go)
// with the Lua parts the scripts share (*.lua here).
//
// The scripts, and what runs them, live by family in the packages below:
//
//	reserve    the purchase path: the reserve script, its coalescer, the sold-out flags,
//	           the buyer's lock
//	moves      units moved between the buckets of a sale, and the repair of a move
//	replicas   a purchase confirmed on the replicas before its answer
//	settle     orders claimed and settled, rolled back, their units returned once, and
//	           the waitlist those units go to first
//	group      the groups of a group-buy sale: read, extend, fail, restore
//	lifecycle  a sale's life in Redis: load, patch, read, close and rebuild, archive
//
// Each reads on its own: its type holds a *Stock, and its references point down to this
// core (reserve and lifecycle use moves, reserve the group type), never back up.
package stock

//go:generate go test -run ^TestScriptFiles$ -args -update

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Stock is the Redis side of every sale, as the packages of its families share it: the
// client, the buckets of each sale once read, the clock, and who to tell in this
// process when units come back.
type Stock struct {
	rdb   redis.UniversalClient
	sizes sync.Map // activity id -> its buckets (int), once read (bucket.go)
	// now is when units that come back are offered to the waitlist (the orders' time,
	// and the sale's end judged by it).
	now func() time.Time

	mu        sync.Mutex
	unitsBack []func(activityID int64)
}

// New returns a Stock on rdb.
func New(rdb redis.UniversalClient) *Stock {
	return &Stock{rdb: rdb, now: time.Now}
}

// Redis is the client every family's scripts run on.
func (s *Stock) Redis() redis.UniversalClient { return s.rdb }

// SetClock replaces the clock the waitlist's offers are made by (tests).
func (s *Stock) SetClock(now func() time.Time) { s.now = now }

// Now is the time by the clock of SetClock.
func (s *Stock) Now() time.Time { return s.now() }

// Ping checks that Redis answers.
func (s *Stock) Ping(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }

// OnUnitsBack registers f, which UnitsBack calls with a sale's id, and Watch with 0 for
// every sale: the purchase path forgets there that it found the sale sold out
// (reserve's sold-out flags).
func (s *Stock) OnUnitsBack(f func(activityID int64)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unitsBack = append(s.unitsBack, f)
}

// UnitsBack tells this process that units of a sale came back to stock, or that its
// terms changed (limit, end, waiting room): what a sold-out flag remembers. The other
// processes hear it on ReturnedChannel (Watch), which the script that gave the units
// back published on.
func (s *Stock) UnitsBack(activityID int64) {
	s.mu.Lock()
	fs := s.unitsBack
	s.mu.Unlock()
	for _, f := range fs {
		f(activityID)
	}
}

// Watch listens on ReturnedChannel and tells this process of every sale whose units
// come back (UnitsBack), until ctx ends. After a reconnect it tells of every sale
// (UnitsBack(0)), since messages may have been missed.
func (s *Stock) Watch(ctx context.Context) {
	ps := s.rdb.Subscribe(ctx, ReturnedChannel)
	defer ps.Close()
	for {
		msg, err := ps.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			s.UnitsBack(0)
		case *redis.Message:
			if id, err := strconv.ParseInt(m.Payload, 10, 64); err == nil && id != 0 {
				s.UnitsBack(id)
			}
		}
		if err != nil {
			s.UnitsBack(0)
			slog.Warn("stock: returned-units subscription", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// HasSale reports whether Redis holds a sale (its first bucket's hash).
func (s *Stock) HasSale(ctx context.Context, activityID int64) (bool, error) {
	n, err := s.rdb.Exists(ctx, SaleKey(One(activityID))).Result()
	return n == 1, err
}

// ForgetSale drops what this process remembers of a sale (its buckets, its sold-out
// flag): the sale is archived, and Redis no longer has it.
func (s *Stock) ForgetSale(activityID int64) {
	if k, ok := s.sizes.LoadAndDelete(activityID); ok {
		for _, b := range (Bucket{act: activityID, k: k.(int)}).All()[1:] {
			tags.Delete(b)
		}
	}
	s.UnitsBack(activityID)
}

// Package moves moves units between the buckets of a sale (internal/stock's bucket.go
// says why a sale has several).
//
// Units move between buckets: the units added later (PATCH add_stock) and those a
// rebuild counts wait in the reserve (the field reserve of bucket 0's hash), and a
// bucket that runs short takes a share of the reserve, or else half of what another
// bucket has (Refill). A move is two scripts on two slots, take and apply: take removes
// the units at the source and records the move there (MovesKey); apply adds them at the
// destination once per move id (AppliedKey); then the record is dropped. A process that
// dies between the two leaves the record, and the worker's repair pass (FinishMoves)
// applies it: a unit is neither lost nor counted twice. The sale reads sold out only
// when the reserve, every bucket and every recorded move are empty.
package moves

//go:generate go test -run ^TestScripts$ -args -update

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/stock"
)

// Mover moves units between the buckets of sales: the purchase path refills a bucket
// that runs short (Refill), the worker's repair pass finishes the moves whose mover died
// (FinishMoves).
type Mover struct {
	sk        *stock.Stock
	rdb       redis.UniversalClient
	refilling refills
}

// New returns a Mover on sk.
func New(sk *stock.Stock) *Mover { return &Mover{sk: sk, rdb: sk.Redis()} }

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

var takeScript = stock.NewScript(takeLua, takeCodes)

// takeCodes are takeScript's refusals: the source bucket is lost, or the sale is closed
// for a rebuild.
var takeCodes = []stock.Code{{Lua: "SOURCE_LOST", Value: -1, Err: stock.ErrNoSale}, {Lua: "SOURCE_CLOSED", Value: -2, Err: stock.ErrClosed}}

// applyScript adds a move's units to its destination bucket, once per move id
// (apply.lua).
//
//go:embed apply.lua
var applyLua string

var applyScript = stock.NewScript(applyLua, applyCodes)

// applyCodes are applyScript's answers: applied now (moveApplied), or not: applied
// before, the destination lost or archived, a rebuild between take and apply.
var applyCodes = []stock.Code{{Lua: "APPLIED", Value: moveApplied}, {Lua: "APPLIED_BEFORE", Value: 0}, {Lua: "DESTINATION_GONE", Value: -1},
	{Lua: "REBUILT_BETWEEN", Value: -2}}

// moveApplied is APPLIED, a move applied now.
const moveApplied = 1

// Move is one move recorded at its source: "<to> <units> <taken> <stamp>", and
// " <variant index>" for a variant's units.
type Move struct {
	id      string
	from    stock.Bucket
	to      int
	Units   int64
	takenAt time.Time
	stamp   string
	Variant stock.Variant
}

func Parse(from stock.Bucket, id, v string) (Move, error) {
	f := strings.Fields(v)
	if len(f) != 4 && len(f) != 5 {
		return Move{}, fmt.Errorf("move %s: malformed %q", id, v)
	}
	to, err1 := strconv.Atoi(f[0])
	units, err2 := strconv.ParseInt(f[1], 10, 64)
	ms, err3 := strconv.ParseInt(f[2], 10, 64)
	var variant stock.Variant
	var err4 error
	if len(f) == 5 {
		var i int
		i, err4 = strconv.Atoi(f[4])
		variant = stock.VariantAt(i)
	}
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return Move{}, fmt.Errorf("move %s: malformed %q", id, v)
	}
	return Move{id: id, from: from, to: to, Units: units, takenAt: time.UnixMilli(ms), stamp: f[3], Variant: variant}, nil
}

// take runs takeScript: units taken (0 for none), moves pending at the source.
func (s *Mover) take(ctx context.Context, from stock.Bucket, field string, want int64, divisor int, id string, to int, variant stock.Variant) (taken, pending int64, stamp string, err error) {
	res, err := stock.Reply(takeScript.Run(ctx, s.rdb, []string{stock.SaleKey(from), stock.MovesKey(from)},
		field, want, divisor, id, to, variant.Arg()).Result())
	if err != nil {
		return 0, 0, "", fmt.Errorf("take units from bucket %d: %w", from.N(), err)
	}
	n, err := stock.Integer(res[0])
	switch {
	case err != nil:
		return 0, 0, "", fmt.Errorf("take units from bucket %d: %w", from.N(), err)
	case n < 0:
		return 0, 0, "", fmt.Errorf("take units from bucket %d: %w", from.N(), stock.AnswerOf(takeCodes, n))
	case len(res) != 3:
		return 0, 0, "", fmt.Errorf("take Units: unexpected reply %v", res)
	}
	pending, err = stock.Integer(res[1])
	stamp, _ = res[2].(string)
	return n, pending, stamp, err
}

// apply runs applyScript for m and then drops its record at the source.
func (s *Mover) apply(ctx context.Context, m Move) error {
	to := m.from.Sibling(m.to)
	n, err := applyScript.Run(ctx, s.rdb, []string{stock.SaleKey(to), stock.AppliedKey(to)}, m.id, m.Units, m.stamp,
		m.from.Activity(), stock.ReturnedChannel, MoveRetention.Milliseconds(), m.Variant.Arg()).Int64()
	if err == nil {
		_, err = stock.CodeOf(applyCodes, n)
	}
	if err != nil {
		return fmt.Errorf("apply Move %s: %w", m.id, err)
	}
	if n == moveApplied {
		s.sk.UnitsBack(m.from.Activity())
	}
	if err := s.rdb.HDel(ctx, stock.MovesKey(m.from), m.id).Err(); err != nil {
		return fmt.Errorf("drop Move %s: %w", m.id, err)
	}
	return nil
}

// refills lets one refill of a bucket (of one variant's units) run at a time in this
// process; the purchases that find the bucket short meanwhile wait for it and share its
// outcome.
type refills struct {
	mu      sync.Mutex
	running map[refillOf]*refillCall
}

type refillOf struct {
	to      stock.Bucket
	Variant stock.Variant
}

type refillCall struct {
	done  chan struct{}
	moved int64
	empty bool
	err   error
}

// Refill moves units (of variant, in a sale of variants) into bucket to (short of want
// units) from the reserve, then from the other buckets, and returns how many it moved.
// empty is true when it found none anywhere and no move under way: the sale (the
// variant) is sold out. A refill of the same bucket and variant under way in this
// process is waited for instead, and its outcome returned.
func (s *Mover) Refill(ctx context.Context, to stock.Bucket, want int64, variant stock.Variant) (moved int64, empty bool, err error) {
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

func (s *Mover) refillOnce(ctx context.Context, to stock.Bucket, want int64, variant stock.Variant) (moved int64, empty bool, err error) {
	type source struct {
		from    stock.Bucket
		field   string
		divisor int
	}
	sources := []source{{to.Sibling(0), "reserve", to.K()}}
	for i := 1; i < to.K(); i++ {
		sources = append(sources, source{to.Sibling((to.N() + i) % to.K()), "avail", 2})
	}
	empty = true
	var lost error // a source closed for a rebuild, or lost: what to answer if none gave units
	for _, src := range sources {
		if moved >= want {
			break
		}
		m := Move{id: stock.NewToken(), from: src.from, to: to.N(), Variant: variant}
		var pending int64
		m.Units, pending, m.stamp, err = s.take(ctx, src.from, src.field, want-moved, src.divisor, m.id, to.N(), variant)
		switch {
		case errors.Is(err, stock.ErrNoSale): // ErrClosed too
			lost, empty = err, false
			continue
		case err != nil:
			return moved, false, err
		}
		if pending > 0 || m.Units > 0 {
			empty = false
		}
		if m.Units == 0 {
			continue
		}
		if err := s.apply(ctx, m); err != nil {
			return moved, false, err // the repair pass applies it
		}
		moved += m.Units
	}
	if moved == 0 && lost != nil {
		return 0, false, lost
	}
	return moved, empty, nil
}

// FinishMoves applies the moves of a sale recorded MoveRepairAge ago or more whose
// mover did not finish them (it died between take and apply), and returns how many it
// finished. The worker's repair pass runs it for every live sale of several buckets.
func (s *Mover) FinishMoves(ctx context.Context, activityID int64, now time.Time) (int, error) {
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil || sale.K() <= 1 {
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
func (s *Mover) moves(ctx context.Context, b stock.Bucket) ([]Move, error) {
	all, err := s.rdb.HGetAll(ctx, stock.MovesKey(b)).Result()
	if err != nil {
		return nil, fmt.Errorf("read moves of bucket %d: %w", b.N(), err)
	}
	out := make([]Move, 0, len(all))
	for id, v := range all {
		m, err := Parse(b, id, v)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Unapplied returns the moves of ms not yet applied at their destination.
func (s *Mover) Unapplied(ctx context.Context, ms []Move) ([]Move, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	scores := make([]*redis.FloatCmd, len(ms))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range ms {
			scores[i] = p.ZScore(ctx, stock.AppliedKey(m.from.Sibling(m.to)), m.id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read moves: %w", err)
	}
	var out []Move
	for i, m := range ms {
		if errors.Is(scores[i].Err(), redis.Nil) {
			out = append(out, m)
		}
	}
	return out, nil
}

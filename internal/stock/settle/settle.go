// Package settle ends the queued state of orders and gives units back, each once: the
// worker's claim and settle of the orders it writes to MySQL, the repair pass's read of
// the stale ones (Stale), the API's roll-back of a purchase whose reply was lost, and the
// return of cancelled, expired and refunded orders' units (Return, Forget); the units
// that come back go to the sale's waitlist first (waitlist.go, offer.lua).
package settle

//go:generate go test -run ^TestScripts$ -args -update

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/stock"
)

// Settler settles orders and gives units back, on a stock.Stock.
type Settler struct {
	sk  *stock.Stock
	rdb redis.UniversalClient
}

// New returns the Settler of sk.
func New(sk *stock.Stock) *Settler { return &Settler{sk: sk, rdb: sk.Redis()} }

// rollbackScript gives back a reservation whose reserve script's reply was lost (the
// purchase was answered 503, so no order stands for it) (rollback.lua).
//
//go:embed rollback.lua
var rollbackLua string

var rollbackScript = stock.NewScript(rollbackLua, rollbackCodes)

// RollbackResult says what Rollback did.
type RollbackResult int

// Rollback outcomes.
const (
	// RolledBack: the units and the buyer's allowance are back; no order exists.
	RolledBack RollbackResult = iota
	// AlreadyClaimed: the order stands: a worker holds it (the repair pass enqueued it),
	// or a replay of its key was answered with it (the repair pass will enqueue it).
	AlreadyClaimed
	// NotQueued: nothing was queued under that id any more.
	NotQueued
)

// rollbackCodes are rollbackScript's answers, one per RollbackResult.
var rollbackCodes = []stock.Code{{Lua: "ROLLED_BACK", Value: int64(RolledBack)}, {Lua: "STANDS", Value: int64(AlreadyClaimed)},
	{Lua: "NOT_QUEUED", Value: int64(NotQueued)}}

// Rollback gives back a reservation whose reserve script's reply was lost, unless a
// worker already claimed its order.
func (s *Settler) Rollback(ctx context.Context, activityID int64, who buyer.ID, orderID, idemKey string) (RollbackResult, error) {
	b := stock.Home(activityID, who, s.sk.KnownBuckets(activityID))
	keys := []string{stock.SaleKey(b), stock.UsersKey(b), stock.QueuedKey(b), stock.ClaimedKey(b),
		stock.IdempotencyKey(b, who, idemKey), stock.GivenBackKey(b)}
	var n int64
	err := stock.WhileMoving(ctx, s.rdb, func() (err error) {
		n, err = rollbackScript.Run(ctx, s.rdb, keys, orderID, activityID, stock.ReturnedChannel).Int64()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("roll back reservation: %w", err)
	}
	c, err := stock.CodeOf(rollbackCodes, n)
	if err != nil {
		return 0, fmt.Errorf("roll back reservation: %w", err)
	}
	if RollbackResult(c.Value) == RolledBack {
		s.sk.UnitsBack(activityID)
	}
	return RollbackResult(c.Value), nil
}

// claimScript marks queued orders as being persisted (claim.lua).
//
//go:embed claim.lua
var claimLua string

var claimScript = stock.NewScript(claimLua, claimCodes)

// claimCodes are claimScript's answers per order: claimed (orderClaimed), or not queued.
var claimCodes = []stock.Code{{Lua: "CLAIMED", Value: orderClaimed}, {Lua: "UNCLAIMED", Value: 0}}

// orderClaimed is CLAIMED, an order claimed now.
const orderClaimed = 1

// OrderRef names an order of a sale and its buyer, whose home bucket holds it.
type OrderRef struct {
	OrderID string
	Buyer   buyer.ID
}

// Claimed is an order a worker claimed: its bucket, the generation the bucket reached
// with the claim, and the epoch of the sale's state it was claimed in (see lifecycle's rebuild.go).
type Claimed struct {
	Bucket int
	Gen    int64
	Epoch  int64
}

// Claim marks queued orders of one sale as taken by a worker, so the API will not give
// them back any more. It returns the orders that are queued and now claimed, each with
// its bucket, the generation its bucket reached with the claim and the state's epoch,
// which the worker gives MySQL with the orders (see lifecycle's rebuild.go); an order that is not
// queued was either given back by the API (it must not be persisted) or settled
// already (it is in MySQL).
func (s *Settler) Claim(ctx context.Context, activityID int64, orders []OrderRef) (map[string]Claimed, error) {
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil {
		return nil, fmt.Errorf("claim orders: %w", err)
	}
	claimed := make(map[string]Claimed, len(orders))
	for b, os := range stock.ByBucket(sale, orders, func(o OrderRef) buyer.ID { return o.Buyer }) {
		args := make([]any, len(os))
		for i, o := range os {
			args[i] = o.OrderID
		}
		res, err := claimScript.Run(ctx, s.rdb, []string{stock.QueuedKey(b), stock.ClaimedKey(b), stock.SaleKey(b)}, args...).Int64Slice()
		if err != nil {
			return nil, fmt.Errorf("claim orders: %w", err)
		}
		if len(res) != len(os)+2 {
			return nil, fmt.Errorf("claim orders: %d answers for %d orders", len(res), len(os))
		}
		for i, o := range os {
			if res[i] == orderClaimed {
				claimed[o.OrderID] = Claimed{Bucket: b.N(), Gen: res[len(os)], Epoch: res[len(os)+1]}
			}
		}
	}
	return claimed, nil
}

// settleScript ends the queued state of orders the worker has written to MySQL; each
// order is settled once: an order no longer queued is skipped (settle.lua, whose head
// gives its KEYS and ARGV).
//
//go:embed settle.lua
var settleLua string
var settleScript = stock.NewScript(settleLua, nil)

// Settlement is one order the worker has written to MySQL.
type Settlement struct {
	OrderID string
	Buyer   buyer.ID
	// Failed is true when MySQL refused the order: its units go back to stock (the
	// waitlist first) and to the buyer's allowance, and its seat to its group.
	Failed bool
	// Group is the order's group in a group-buy sale, "" outside one.
	Group string
	// Variant is the order's variant, whose waitlist its units go to first when it
	// failed.
	Variant stock.Variant
}

// Settle removes orders of one sale from the queued state, giving back the units of
// failed ones (to their buyers' home buckets): to the waitlist first, whose orders
// offered are queued as a purchase's are (the worker's repair pass enqueues them). It is
// idempotent per order. Variant is not needed: the queued value has it.
func (s *Settler) Settle(ctx context.Context, activityID int64, orders []Settlement) error {
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil {
		return fmt.Errorf("settle orders: %w", err)
	}
	now := s.sk.Now()
	for b, os := range stock.ByBucket(sale, orders, func(o Settlement) buyer.ID { return o.Buyer }) {
		keys := []string{stock.SaleKey(b), stock.UsersKey(b), stock.QueuedKey(b), stock.ClaimedKey(b), stock.QueuedSinceKey(b), stock.OpenGroupsKey(b),
			stock.FillGroupsKey(b), stock.WaitlistEntriesKey(b)}
		var failing int
		for _, o := range os {
			if o.Failed {
				failing++
			}
		}
		ids := offerIDs(activityID, now, min(failing, maxOffers))
		args := append(make([]any, 0, 4+len(ids)+3*len(os)), activityID, stock.ReturnedChannel, now.UnixMilli(), len(ids))
		args = append(args, ids...)
		// the keys of an order outside a group and of no variant, the most, made once
		noGroup, noSeats, noVariant := stock.GroupKey(b, ""), stock.GroupSeatsKey(b, ""), stock.WaitlistKey(b, 0)
		for _, o := range os {
			group, seats, waiting := noGroup, noSeats, noVariant
			if o.Group != "" {
				group, seats = stock.GroupKey(b, o.Group), stock.GroupSeatsKey(b, o.Group)
			}
			if _, ok := o.Variant.Index(); ok {
				waiting = stock.WaitlistKey(b, o.Variant)
			}
			keys = append(keys, group, seats, waiting)
			failed := "0"
			if o.Failed {
				failed = "1"
			}
			args = append(args, o.OrderID, failed, o.Group)
		}
		res, err := stock.Reply(settleScript.Run(ctx, s.rdb, keys, args...).Result())
		if err != nil {
			return fmt.Errorf("settle orders: %w", err)
		}
		if back, err := stock.Integer(res[0]); err != nil {
			return fmt.Errorf("settle orders: %w", err)
		} else if back > 0 {
			s.sk.UnitsBack(activityID)
		}
	}
	return nil
}

// ReturnedRetention is how long an order is remembered as returned once MySQL has
// recorded its return (Forget). Only a caller that read the order as return_pending
// before that can still try to return it, and such a caller must call Return within
// half of this of its read (order.Lifecycle checks); a later caller reads MySQL again.
// So the set holds the orders returned in the last half-minute, not the sale's history.
const ReturnedRetention = 30 * time.Second

// returnScript gives cancelled and refunded orders' units back to stock (to the
// waitlist first) and to their buyers' allowances, once per order; a refund without
// restock gives back the allowance alone (return.lua).
//
//go:embed return.lua
var returnLua string
var returnScript = stock.NewScript(returnLua, nil)

// forgetScript starts the retention of returned orders that MySQL now records as
// returned (forget.lua).
//
//go:embed forget.lua
var forgetLua string

var forgetScript = stock.NewScript(forgetLua, nil)

// Returning is one cancelled (or expired, or refunded) order whose units go back.
type Returning struct {
	OrderID  string
	Buyer    buyer.ID
	Quantity int
	// OffSale keeps the units off sale (a refund without restock): only what the
	// buyer holds is given back.
	OffSale bool
	// Variant is the order's variant, none outside a sale of variants.
	Variant stock.Variant
}

// Return gives the units of cancelled (or expired, or refunded) orders of one sale
// back to stock (but those OffSale) and to their users' allowances (in their home
// buckets), one step per bucket: to the sale's waitlist first, and returns the orders
// it offered there, queued and priced, for the caller to enqueue (else the worker's
// repair pass does). It is idempotent per order while the order is remembered: from
// the call until ReturnedRetention after Forget.
func (s *Settler) Return(ctx context.Context, activityID int64, orders ...Returning) ([]stock.QueuedOrder, error) {
	if len(orders) == 0 {
		return nil, nil
	}
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil {
		return nil, fmt.Errorf("return units: %w", err)
	}
	now := s.sk.Now()
	var out []stock.QueuedOrder
	for b, os := range stock.ByBucket(sale, orders, func(o Returning) buyer.ID { return o.Buyer }) {
		keys := []string{stock.SaleKey(b), stock.UsersKey(b), stock.ReturnedKey(b), stock.QueuedKey(b), stock.QueuedSinceKey(b), stock.WaitlistEntriesKey(b)}
		var units int
		for _, o := range os {
			keys = append(keys, stock.WaitlistKey(b, o.Variant))
			units += o.Quantity
		}
		ids := offerIDs(activityID, now, min(units, maxOffers))
		args := make([]any, 0, 5+len(ids)+5*len(os))
		args = append(append(args, activityID, stock.ReturnedChannel, ReturnedRetention.Milliseconds(), now.UnixMilli(),
			len(ids)), ids...)
		for _, o := range os {
			offSale := "0"
			if o.OffSale {
				offSale = "1"
			}
			args = append(args, o.OrderID, o.Buyer.Key(), o.Quantity, offSale, o.Variant.Arg())
		}
		res, err := stock.Reply(returnScript.Run(ctx, s.rdb, keys, args...).Result())
		if err != nil {
			return out, fmt.Errorf("return units: %w", err)
		}
		if len(res) < 3 {
			return out, fmt.Errorf("return units: unexpected reply %v", res)
		}
		terms, err := stock.Integers(res[:3])
		if err != nil {
			return out, fmt.Errorf("return units: %w", err)
		}
		if terms[0] > 0 {
			s.sk.UnitsBack(activityID)
		}
		offers, err := offered(activityID, res[3:])
		if err != nil {
			return out, fmt.Errorf("return units: %w", err)
		}
		priced := stock.Sale{PriceCents: terms[1], PayWindow: time.Duration(terms[2]) * time.Second}
		for _, q := range offers {
			out = append(out, q.Priced(priced))
		}
	}
	return out, nil
}

// Forget says MySQL records the return of these orders of a sale: each is remembered
// ReturnedRetention more, then dropped. An order not remembered is left out.
func (s *Settler) Forget(ctx context.Context, activityID int64, orders ...Returning) error {
	if len(orders) == 0 {
		return nil
	}
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil {
		return fmt.Errorf("forget returned orders: %w", err)
	}
	for b, os := range stock.ByBucket(sale, orders, func(o Returning) buyer.ID { return o.Buyer }) {
		args := make([]any, 0, len(os)+1)
		for _, o := range os {
			args = append(args, o.OrderID)
		}
		args = append(args, ReturnedRetention.Milliseconds())
		if err := forgetScript.Run(ctx, s.rdb, []string{stock.ReturnedKey(b)}, args...).Err(); err != nil {
			return fmt.Errorf("forget returned orders: %w", err)
		}
	}
	return nil
}

// staleScript lists queued orders taken before a time, oldest first, and drops the
// members of the queued-since index whose orders all left the queue (stale.lua).
//
//go:embed stale.lua
var staleLua string

var staleScript = stock.NewScript(staleLua, nil)

// StaleWalk bounds the members of a bucket's queued-since index one call of staleScript
// looks at, each of at most 64 orders (a reserve call's): the work Redis does in one
// step, about 1 ms on a loaded machine of two cores (BenchmarkStaleWalk): Redis answers
// nothing else meanwhile, so a step stays as short as the pass's of single orders was
// (500 a call). Stale and Oldest call it again, from where it stopped, until they are
// done.
const StaleWalk = 16

// Stale returns up to limit queued orders of a sale per bucket taken at or before
// before, oldest first in each bucket (by the reserve call that took them; in one call's
// order), with Claimed set for those a worker has begun to persist. In passing it drops
// the index's members whose orders all left the queue, every one taken at or before
// before unless limit orders come first.
func (s *Settler) Stale(ctx context.Context, activityID int64, before time.Time, limit int) ([]stock.QueuedOrder, error) {
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil {
		return nil, fmt.Errorf("stale queued orders: %w", err)
	}
	var out []stock.QueuedOrder
	for _, b := range sale.All() {
		_, orders, err := s.walk(ctx, activityID, b, strconv.FormatInt(before.UnixMilli(), 10), limit)
		if err != nil {
			return nil, fmt.Errorf("stale queued orders: %w", err)
		}
		out = append(out, orders...)
	}
	return out, nil
}

// Oldest returns a time no later than when any order of a sale still queued was taken,
// and as late as the index knows (by the clock of the API that took it; zero with none
// queued): the score of the first member of a bucket's queued-since index with an
// order still queued, the earliest of its reserve call's. The members before it, whose
// orders all left the queue, are dropped on the way, as the repair pass does.
func (s *Settler) Oldest(ctx context.Context, activityID int64) (time.Time, error) {
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil {
		return time.Time{}, err
	}
	var oldest time.Time
	for _, b := range sale.All() {
		first, _, err := s.walk(ctx, activityID, b, "+inf", 1)
		if err != nil {
			return time.Time{}, fmt.Errorf("read the oldest queued order: %w", err)
		}
		if !first.IsZero() && (oldest.IsZero() || first.Before(oldest)) {
			oldest = first
		}
	}
	return oldest, nil
}

// walk runs staleScript over bucket b until it has listed limit orders taken at or
// before before (unix ms, or +inf) or has read every member that far, and returns
// them and the score of the first member it kept (zero for none). A member that
// another walk drops between two calls (its orders left meanwhile) moves the ones after
// it: this walk may then pass over one, which the next reads.
func (s *Settler) walk(ctx context.Context, activityID int64, b stock.Bucket, before string, limit int) (time.Time, []stock.QueuedOrder, error) {
	var (
		first time.Time
		out   []stock.QueuedOrder
	)
	for skip := int64(0); skip >= 0 && len(out) < limit; {
		res, err := staleScript.Run(ctx, s.rdb, []string{stock.QueuedSinceKey(b), stock.QueuedKey(b), stock.ClaimedKey(b)},
			before, limit-len(out), skip, StaleWalk).Slice()
		if err != nil {
			return time.Time{}, nil, err
		}
		var score string
		ok := len(res)%3 == 2
		if ok {
			skip, ok = res[0].(int64)
		}
		if ok {
			score, ok = res[1].(string)
		}
		if !ok {
			return time.Time{}, nil, fmt.Errorf("unexpected reply %v", res)
		}
		if score != "" && first.IsZero() {
			ms, err := strconv.ParseFloat(score, 64)
			if err != nil {
				return time.Time{}, nil, fmt.Errorf("score %q: %w", score, err)
			}
			first = time.UnixMilli(int64(ms))
		}
		for i := 2; i < len(res); i += 3 {
			id, ok1 := res[i].(string)
			v, ok2 := res[i+1].(string)
			claimed, ok3 := res[i+2].(int64)
			if !ok1 || !ok2 || !ok3 {
				return time.Time{}, nil, fmt.Errorf("unexpected reply %v", res[i:i+3])
			}
			q, err := stock.ParseQueued(activityID, id, v)
			if err != nil {
				return time.Time{}, nil, err
			}
			q.Claimed = claimed == 1
			out = append(out, q)
		}
	}
	return first, out, nil
}

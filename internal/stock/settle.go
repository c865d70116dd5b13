package stock

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"seckill/internal/buyer"
)

// rollbackScript gives back a reservation whose reserve script's reply was lost (the
// purchase was answered 503, so no order stands for it) (rollback.lua).
//
//go:embed rollback.lua
var rollbackLua string

var rollbackScript = NewScript(rollbackLua, rollbackCodes)

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
var rollbackCodes = []Code{{"ROLLED_BACK", int64(RolledBack), nil}, {"STANDS", int64(AlreadyClaimed), nil},
	{"NOT_QUEUED", int64(NotQueued), nil}}

// Rollback gives back a reservation whose reserve script's reply was lost, unless a
// worker already claimed its order.
func (s *Stock) Rollback(ctx context.Context, activityID int64, who buyer.ID, orderID, idemKey string) (RollbackResult, error) {
	b := Home(activityID, who, s.KnownBuckets(activityID))
	keys := []string{SaleKey(b), UsersKey(b), QueuedKey(b), UserQueuedKey(b, who), ClaimedKey(b),
		IdempotencyKey(b, who, idemKey), QueuedSinceKey(b), GivenBackKey(b)}
	var n int64
	err := WhileMoving(ctx, s.rdb, func() (err error) {
		n, err = rollbackScript.Run(ctx, s.rdb, keys, orderID, activityID, ReturnedChannel).Int64()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("roll back reservation: %w", err)
	}
	c, err := CodeOf(rollbackCodes, n)
	if err != nil {
		return 0, fmt.Errorf("roll back reservation: %w", err)
	}
	if RollbackResult(c.Value) == RolledBack {
		s.UnitsBack(activityID)
	}
	return RollbackResult(c.Value), nil
}

// claimScript marks queued orders as being persisted (claim.lua).
//
//go:embed claim.lua
var claimLua string

var claimScript = NewScript(claimLua, claimCodes)

// claimCodes are claimScript's answers per order: claimed (orderClaimed), or not queued.
var claimCodes = []Code{{"CLAIMED", orderClaimed, nil}, {"UNCLAIMED", 0, nil}}

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
func (s *Stock) Claim(ctx context.Context, activityID int64, orders []OrderRef) (map[string]Claimed, error) {
	sale, err := s.SaleOf(ctx, activityID)
	if err != nil {
		return nil, fmt.Errorf("claim orders: %w", err)
	}
	claimed := make(map[string]Claimed, len(orders))
	for b, os := range ByBucket(sale, orders, func(o OrderRef) buyer.ID { return o.Buyer }) {
		args := make([]any, len(os))
		for i, o := range os {
			args[i] = o.OrderID
		}
		res, err := claimScript.Run(ctx, s.rdb, []string{QueuedKey(b), ClaimedKey(b), SaleKey(b)}, args...).Int64Slice()
		if err != nil {
			return nil, fmt.Errorf("claim orders: %w", err)
		}
		if len(res) != len(os)+2 {
			return nil, fmt.Errorf("claim orders: %d answers for %d orders", len(res), len(os))
		}
		for i, o := range os {
			if res[i] == orderClaimed {
				claimed[o.OrderID] = Claimed{Bucket: b.n, Gen: res[len(os)], Epoch: res[len(os)+1]}
			}
		}
	}
	return claimed, nil
}

// settleScript ends the queued state of orders the worker has written to MySQL.
//
// KEYS[1] sale: sale hash  KEYS[2] users: users hash  KEYS[3] queued: queued hash
// KEYS[4] claimed: claimed set  KEYS[5] since: queued-since sorted set
// KEYS[6] open_groups: open groups sorted set  KEYS[7] fill_groups: open groups, fullest
// first  KEYS[8] entries: waitlist entries
// ARGV[1] activity: activity id  ARGV[2] channel: the returned-units channel
// ARGV[3] prefix: the bucket's key prefix  ARGV[4] now: now (ms)
// ARGV[5] m, then ARGV[6..5+m] offer_ids: order ids for offers
// then per order i (from 1) three ARGV, orders[i].id, .failed ("1" when it failed: its
// units come back, else "0"), .group (its group's id, "" outside a group), and four
// KEYS, KEYS[5+4i] orders[i].user_queued (the queued set of its buyer), KEYS[6+4i] and
// KEYS[7+4i] .group_key and .seats (the hash and the seats of its group: any key of the
// sale's slot outside a group), KEYS[8+4i] .waiting (the waiting set of its variant,
// WaitlistKey)
//
// Each order is settled once: an order no longer queued is skipped. A failed order's
// units go to the waitlist first (offer), and its seat in its group is free again (the
// group reopens until its window ends); an offered order that failed ends its entry.
// The sale's generation goes up. Returns the units given back, then the orders offered
// (id, value, ...).
var settleScript = assembled(nil, unitsLua+repliesLua()+userLimitLua+bumpGenLua+listGroupLua+entryLua+offerLua+endOfferLua, `
local K = {sale = KEYS[1], users = KEYS[2], queued = KEYS[3], claimed = KEYS[4], since = KEYS[5], open_groups = KEYS[6],
  fill_groups = KEYS[7], entries = KEYS[8]}
local ARG = {activity = ARGV[1], channel = ARGV[2], prefix = ARGV[3], now = ARGV[4]}
local offer_ids = {}
for j = 1, tonumber(ARGV[5]) do offer_ids[j] = ARGV[5 + j] end
local orders = {}
for a = 6 + #offer_ids, #ARGV, 3 do
  local i = #orders + 1
  orders[i] = {id = ARGV[a], failed = ARGV[a + 1] == '1', group = ARGV[a + 2], user_queued = KEYS[5 + 4 * i],
    group_key = KEYS[6 + 4 * i], seats = KEYS[7 + 4 * i], waiting = KEYS[8 + 4 * i]}
end
`, `
local w = {sale = K.sale, users = K.users, queued = K.queued, since = K.since, entries = K.entries, prefix = ARG.prefix,
  now = ARG.now, ids = offer_ids, next = 1, offers = {}}
local ids, sets = {}, {}
for i, o in ipairs(orders) do ids[i], sets[i] = o.id, o.user_queued end
local users, qtys, variants = unqueue(K.sale, K.queued, K.claimed, K.since, ids, sets)
local waitlist = redis.call('HLEN', K.entries) > 0
local back = 0
for i, o in ipairs(orders) do
  if users[i] and o.failed then
    give_back(K.sale, K.users, users[i], qtys[i], variants[i])
    back = back + qtys[i]
    if waitlist then
      end_offer(K.entries, users[i], o.id)
      w.set = o.waiting
      offer(w, variants[i])
    end
    if o.group ~= '' and redis.call('HDEL', o.seats, users[i]) == 1 then
      redis.call('HINCRBY', o.group_key, 'members', -1)
      if redis.call('HGET', o.group_key, 'status') == '1' then redis.call('HSET', o.group_key, 'status', 0) end
      list_group(K.open_groups, K.fill_groups, o.group_key, o.group)
    end
  end
end
if back > 0 then redis.call('PUBLISH', ARG.channel, ARG.activity) end
bump_gen(K.sale)
local out = {back}
for _, v in ipairs(w.offers) do out[#out + 1] = v end
return out
`)

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
	Variant Variant
}

// Settle removes orders of one sale from the queued state, giving back the units of
// failed ones (to their buyers' home buckets): to the waitlist first, whose orders
// offered are queued as a purchase's are (the worker's repair pass enqueues them). It is
// idempotent per order. Variant is not needed: the queued value has it.
func (s *Stock) Settle(ctx context.Context, activityID int64, orders []Settlement) error {
	sale, err := s.SaleOf(ctx, activityID)
	if err != nil {
		return fmt.Errorf("settle orders: %w", err)
	}
	now := s.now()
	for b, os := range ByBucket(sale, orders, func(o Settlement) buyer.ID { return o.Buyer }) {
		keys := []string{SaleKey(b), UsersKey(b), QueuedKey(b), ClaimedKey(b), QueuedSinceKey(b), OpenGroupsKey(b),
			FillGroupsKey(b), WaitlistEntriesKey(b)}
		var failing int
		for _, o := range os {
			if o.Failed {
				failing++
			}
		}
		ids := offerIDs(activityID, now, min(failing, maxOffers))
		args := append([]any{activityID, ReturnedChannel, Prefix(b), now.UnixMilli(), len(ids)}, ids...)
		for _, o := range os {
			keys = append(keys, UserQueuedKey(b, o.Buyer), GroupKey(b, o.Group), GroupSeatsKey(b, o.Group),
				WaitlistKey(b, o.Variant))
			failed := "0"
			if o.Failed {
				failed = "1"
			}
			args = append(args, o.OrderID, failed, o.Group)
		}
		res, err := Reply(settleScript.Run(ctx, s.rdb, keys, args...).Result())
		if err != nil {
			return fmt.Errorf("settle orders: %w", err)
		}
		if back, err := Integer(res[0]); err != nil {
			return fmt.Errorf("settle orders: %w", err)
		} else if back > 0 {
			s.UnitsBack(activityID)
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
// restock gives back the allowance alone.
//
// KEYS[1] sale: sale hash  KEYS[2] users: users hash  KEYS[3] returned: returned set
// (order ids already returned)  KEYS[4] queued: queued hash  KEYS[5] since: queued-since
// sorted set  KEYS[6] entries: waitlist entries
// ARGV[1] activity: activity id  ARGV[2] channel: the returned-units channel
// ARGV[3] retention: ReturnedRetention in ms  ARGV[4] prefix: the bucket's key prefix
// ARGV[5] now: now (ms)  ARGV[6] m, then ARGV[7..6+m] offer_ids: order ids for offers
// then per order i (from 1) five ARGV, orders[i].id, .user (its buyer's key), .qty,
// .off_sale ("1" when its units stay off sale: Returning.OffSale), .variant (its
// variant's index, "" for none), and KEYS[6+i] orders[i].waiting (the waiting set of its
// variant, WaitlistKey)
//
// An order is remembered with the score +inf until Forget. An offered order that comes
// back ends its entry. The sale's generation goes up once when anything came back. A
// sale that is lost or archived (sale_live) gets nothing, and nothing is written: a
// rebuild counts an order as held while return_pending, and not once its return is
// recorded in MySQL; an archived sale is over. Returns how many of the orders were
// given back now (the others had been before), the sale's price and pay window (s),
// then the orders offered (id, value, ...).
var returnScript = assembled(nil, unitsLua+repliesLua()+userLimitLua+bumpGenLua+trimReturnedLua+entryLua+offerLua+
	endOfferLua+saleLiveLua, `
local K = {sale = KEYS[1], users = KEYS[2], returned = KEYS[3], queued = KEYS[4], since = KEYS[5], entries = KEYS[6]}
local ARG = {activity = ARGV[1], channel = ARGV[2], retention = tonumber(ARGV[3]), prefix = ARGV[4], now = ARGV[5]}
local offer_ids = {}
for j = 1, tonumber(ARGV[6]) do offer_ids[j] = ARGV[6 + j] end
local orders = {}
for a = 7 + #offer_ids, #ARGV, 5 do
  local o = {id = ARGV[a], user = ARGV[a + 1], qty = tonumber(ARGV[a + 2]), off_sale = ARGV[a + 3] == '1',
    variant = ARGV[a + 4], waiting = KEYS[7 + #orders]}
  if o.variant == '' then o.variant = nil end
  orders[#orders + 1] = o
end
`, `
if not sale_live(K.sale) then return {0, '0', '0'} end
trim_returned(K.returned, ARG.retention)
local w = {sale = K.sale, users = K.users, queued = K.queued, since = K.since, entries = K.entries, prefix = ARG.prefix,
  now = ARG.now, ids = offer_ids, next = 1, offers = {}}
local back = 0
local waitlist = redis.call('HLEN', K.entries) > 0
for _, o in ipairs(orders) do
  if not redis.call('ZSCORE', K.returned, o.id) then
    redis.call('ZADD', K.returned, '+inf', o.id)
    if o.off_sale then free_buyer(K.users, o.user, o.qty, o.variant)
    else give_back(K.sale, K.users, o.user, o.qty, o.variant) end
    if waitlist then
      end_offer(K.entries, o.user, o.id)
      if not o.off_sale then
        w.set = o.waiting
        offer(w, o.variant)
      end
    end
    back = back + 1
  end
end
if back > 0 then
  bump_gen(K.sale)
  redis.call('PUBLISH', ARG.channel, ARG.activity)
end
local terms = redis.call('HMGET', K.sale, 'price', 'paywin')
local out = {back, terms[1] or '0', terms[2] or '0'}
for _, v in ipairs(w.offers) do out[#out + 1] = v end
return out
`)

// forgetScript starts the retention of returned orders that MySQL now records as
// returned (forget.lua).
//
//go:embed forget.lua
var forgetLua string

var forgetScript = NewScript(forgetLua, nil)

// Returning is one cancelled (or expired, or refunded) order whose units go back.
type Returning struct {
	OrderID  string
	Buyer    buyer.ID
	Quantity int
	// OffSale keeps the units off sale (a refund without restock): only what the
	// buyer holds is given back.
	OffSale bool
	// Variant is the order's variant, none outside a sale of variants.
	Variant Variant
}

// Return gives the units of cancelled (or expired, or refunded) orders of one sale
// back to stock (but those OffSale) and to their users' allowances (in their home
// buckets), one step per bucket: to the sale's waitlist first, and returns the orders
// it offered there, queued and priced, for the caller to enqueue (else the worker's
// repair pass does). It is idempotent per order while the order is remembered: from
// the call until ReturnedRetention after Forget.
func (s *Stock) Return(ctx context.Context, activityID int64, orders ...Returning) ([]QueuedOrder, error) {
	if len(orders) == 0 {
		return nil, nil
	}
	sale, err := s.SaleOf(ctx, activityID)
	if err != nil {
		return nil, fmt.Errorf("return units: %w", err)
	}
	now := s.now()
	var out []QueuedOrder
	for b, os := range ByBucket(sale, orders, func(o Returning) buyer.ID { return o.Buyer }) {
		keys := []string{SaleKey(b), UsersKey(b), ReturnedKey(b), QueuedKey(b), QueuedSinceKey(b), WaitlistEntriesKey(b)}
		var units int
		for _, o := range os {
			keys = append(keys, WaitlistKey(b, o.Variant))
			units += o.Quantity
		}
		ids := offerIDs(activityID, now, min(units, maxOffers))
		args := make([]any, 0, 6+len(ids)+5*len(os))
		args = append(append(args, activityID, ReturnedChannel, ReturnedRetention.Milliseconds(), Prefix(b), now.UnixMilli(),
			len(ids)), ids...)
		for _, o := range os {
			offSale := "0"
			if o.OffSale {
				offSale = "1"
			}
			args = append(args, o.OrderID, o.Buyer.Key(), o.Quantity, offSale, o.Variant.Arg())
		}
		res, err := Reply(returnScript.Run(ctx, s.rdb, keys, args...).Result())
		if err != nil {
			return out, fmt.Errorf("return units: %w", err)
		}
		if len(res) < 3 {
			return out, fmt.Errorf("return units: unexpected reply %v", res)
		}
		terms, err := Integers(res[:3])
		if err != nil {
			return out, fmt.Errorf("return units: %w", err)
		}
		if terms[0] > 0 {
			s.UnitsBack(activityID)
		}
		offers, err := offered(activityID, res[3:])
		if err != nil {
			return out, fmt.Errorf("return units: %w", err)
		}
		priced := Sale{PriceCents: terms[1], PayWindow: time.Duration(terms[2]) * time.Second}
		for _, q := range offers {
			out = append(out, q.Priced(priced))
		}
	}
	return out, nil
}

// Forget says MySQL records the return of these orders of a sale: each is remembered
// ReturnedRetention more, then dropped. An order not remembered is left out.
func (s *Stock) Forget(ctx context.Context, activityID int64, orders ...Returning) error {
	if len(orders) == 0 {
		return nil
	}
	sale, err := s.SaleOf(ctx, activityID)
	if err != nil {
		return fmt.Errorf("forget returned orders: %w", err)
	}
	for b, os := range ByBucket(sale, orders, func(o Returning) buyer.ID { return o.Buyer }) {
		args := make([]any, 0, len(os)+1)
		for _, o := range os {
			args = append(args, o.OrderID)
		}
		args = append(args, ReturnedRetention.Milliseconds())
		if err := forgetScript.Run(ctx, s.rdb, []string{ReturnedKey(b)}, args...).Err(); err != nil {
			return fmt.Errorf("forget returned orders: %w", err)
		}
	}
	return nil
}

// staleScript lists queued orders taken before a time, oldest first (stale.lua).
//
//go:embed stale.lua
var staleLua string

var staleScript = NewScript(staleLua, nil)

// Stale returns up to limit queued orders of a sale (per bucket) taken at or before
// before, oldest first in each bucket, with Claimed set for those a worker has begun to
// persist.
func (s *Stock) Stale(ctx context.Context, activityID int64, before time.Time, limit int) ([]QueuedOrder, error) {
	sale, err := s.SaleOf(ctx, activityID)
	if err != nil {
		return nil, fmt.Errorf("stale queued orders: %w", err)
	}
	var out []QueuedOrder
	for _, b := range sale.All() {
		res, err := staleScript.Run(ctx, s.rdb, []string{QueuedSinceKey(b), QueuedKey(b), ClaimedKey(b)},
			before.UnixMilli(), limit).Slice()
		if err != nil {
			return nil, fmt.Errorf("stale queued orders: %w", err)
		}
		if len(res)%3 != 0 {
			return nil, fmt.Errorf("stale queued orders: reply of %d values", len(res))
		}
		for i := 0; i < len(res); i += 3 {
			id, ok1 := res[i].(string)
			v, ok2 := res[i+1].(string)
			claimed, ok3 := res[i+2].(int64)
			if !ok1 || !ok2 || !ok3 {
				return nil, fmt.Errorf("stale queued orders: unexpected reply %v", res[i:i+3])
			}
			q, err := ParseQueued(activityID, id, v)
			if err != nil {
				return nil, err
			}
			q.Claimed = claimed == 1
			out = append(out, q)
		}
	}
	return out, nil
}

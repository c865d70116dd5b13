package stock

import (
	"fmt"
	"strconv"

	"seckill/internal/buyer"
)

// What a buyer holds in a sale, and the per-user rule over it, are read and changed
// here only: in Lua by the scripts (holdingsLua, userLimitLua), in Go by the rebuild's
// staging and the snapshot (holdingFields, parseHoldings). A sale's users hash keeps it
// in two fields per buyer (buyerfields.go): the units, and, in a sale that counts them
// (counted: a cap on participations, or a group-buy sale), the orders
// (participations). MySQL keeps the same in user_purchases (internal/store's
// holdings.go).

// holdingsLua reads and changes what a buyer holds; user is the buyer's key, which is
// also the field of its units (buyerFieldsLua). get(h, field) and set(h, field, value)
// are the caller's way to the users hash h: hget and hset go to Redis at once (h is the
// hash's key; set with a nil value deletes the field), the reserve script passes its
// own, which read the hash once per call and write it once after.
//
//	holding(h, get, user, counted): the units and participations user holds (0
//	  participations when not counted)
//	hold(h, set, user, held, parts, qty, counted): user, who holds held units and parts
//	  participations, takes one more order of qty units
//	release(h, user, qty): one order of qty units of user comes back (in Redis at once);
//	  true when user holds nothing any more
//	holds_any(key, user): whether user holds anything in the sale (a pass was used)
const holdingsLua = buyerFieldsLua + `
local function hget(key, f) return redis.call('HGET', key, f) end
local function hset(key, f, v)
  if v then redis.call('HSET', key, f, v) else redis.call('HDEL', key, f) end
end
local function holding(h, get, user, counted)
  local parts = 0
  if counted then parts = tonumber(get(h, PARTS .. user) or '0') end
  return tonumber(get(h, user) or '0'), parts
end
local function hold(h, set, user, held, parts, qty, counted)
  set(h, user, string.format('%d', held + qty))
  if counted then set(h, PARTS .. user, string.format('%d', parts + 1)) end
end
local function release(h, user, qty)
  local held, parts = holding(h, hget, user, true)
  held = held - qty
  if held > 0 then hset(h, user, string.format('%d', held)) else hset(h, user, nil) end
  if parts > 1 then hset(h, PARTS .. user, string.format('%d', parts - 1))
  elseif parts > 0 then hset(h, PARTS .. user, nil) end
  return held <= 0
end
local function holds_any(key, user)
  return holding(key, hget, user, false) > 0
end
`

// userLimitLua is the per-user rule, which the reserve and the adopt scripts apply
// alike. It follows repliesLua.
//
//	quantity_refused(qty, limit): the refusal of a quantity the limit alone refuses
//	  (whatever the buyer holds), or nil; Go's quantityOverLimit is the same rule
//	user_refused(held, qty, limit, parts, cap): the refusal of one more order of qty
//	  units to a user who holds held units and parts participations, under the per-user
//	  limit and the cap on participations (0: none), or nil
const userLimitLua = `
local function quantity_refused(qty, limit)
  if qty > limit then return {QUANTITY_OVER_LIMIT, limit} end
end
local function user_refused(held, qty, limit, parts, cap)
  if held + qty > limit then return {OVER_LIMIT, held, limit} end
  if cap > 0 and parts >= cap then return {OVER_CAP, parts, cap} end
end
`

// quantityOverLimit is quantity_refused in Go: the sold-out flag answers only a
// purchase the script would not refuse for its quantity alone.
func quantityOverLimit(quantity, limit int) bool { return quantity > limit }

// Holds is what an order of quantity units adds to what its buyer holds (hold in
// holdingsLua): the ledger counts a queued order's share of its buyer's holding by it.
func Holds(quantity int) int64 { return int64(quantity) }

// holdingFields calls add with each field of the users hash, and its value, that makes
// the buyers' holdings: units each buyer holds, and orders (parts) where the sale counts
// them. The rebuild stages the users hash by it.
func holdingFields(units, parts map[buyer.ID]int64, counted bool, add func(field string, n int64)) {
	for who, n := range units {
		if n > 0 {
			add(unitsField(who), n)
		}
	}
	for who, n := range parts {
		if n > 0 && counted {
			add(partsField(who), n)
		}
	}
}

// variantHoldingFields calls add with each field of the users hash, and its value, of the
// units of each variant each buyer holds (variants: by buyer, by index), kept where the
// sale sets a per-variant limit (variant_held in variantHoldingsLua reads them).
func variantHoldingFields(variants map[buyer.ID]map[int]int64, add func(field string, n int64)) {
	for who, vs := range variants {
		for i, n := range vs {
			if n > 0 {
				add(variantUnitsField(who, VariantAt(i)), n)
			}
		}
	}
}

// parseHoldings adds to held what each buyer holds (units) in a users hash read whole,
// skipping the fields that are not holdings (participations, a lock, an allowance).
func parseHoldings(hash map[string]string, held map[buyer.ID]int64) error {
	for k, v := range hash {
		kind, who, err := buyerField(k)
		if err != nil {
			return err
		}
		if kind != unitsKind {
			continue
		}
		units, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("malformed holding %q=%q", k, v)
		}
		held[who] += units
	}
	return nil
}

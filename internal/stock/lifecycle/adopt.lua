-- Brings back orders whose task survived while their sale's Redis state was
-- lost (a shard wiped, a failover without the last writes, while the queue lives on
-- another master): each one not queued, not given back by the API, and taken before the
-- sale was last rebuilt has its units taken again, if there are enough and its buyer
-- stays within the limit and the cap on participations (the buyer may have bought again
-- on the rebuilt sale, which did not count it), and is queued and claimed, as it was. A
-- seat of a group-buy sale is not: its group's state went with the sale's. An orphan
-- not adopted is reported (nothing taken) for the worker to store failed.
--
-- KEYS[1] sale: sale hash  KEYS[2] users: users hash  KEYS[3] queued: queued hash
-- KEYS[4] claimed: claimed set  KEYS[5] given_back: given-back set
-- ARGV per order i: orders[i].id, orders[i].value (its queued value, queued.go)
-- Returns per order a code of adoptCodes (Adoption), then the sale's epoch.
--
-- Sales.Adopt runs it (rebuild.go), per bucket.

---- begin codes: written by go generate from adoptCodes
local NOT_ORPHAN, ADOPTED, ORPHAN_NO_STOCK, SALE_MISSING, ORPHAN_SEAT, ORPHAN_OVER_LIMIT = 0, 1, 2, 3, 4, 5
---- end codes
---- begin queued.lua: a copy; edit queued.lua, then run go generate
-- A queued order's value in the queued hash (queued.go says its format; Go's encoder and
-- decoder are there, TestQueuedValueOneFormat holds the two languages to one format).
-- Its fields are strings, as the script's arguments and Redis' values are, so nothing is
-- converted that is not compared (a number turned into a string costs the server more
-- than the whole value).
--
--   queued_value(p, limit, cap, group, size, expires): the value of the order of the
--     reserve script's purchase p (its orderArgs: p.user the buyer's key, p.qty, p.now
--     its creation, p.variant its variant, '' for none; p.early true in the early
--     window), or of units the waitlist offered (p.offered true); cap nil or 0 and group
--     nil for no participations counted and no group
--   parse_queued(v): user (the buyer's key), qty, created, limit, cap, group, size,
--     expires, variant; cap nil when the sale counts no participations, group, size and
--     expires nil outside a group, variant (the index, a string) nil outside a sale of
--     variants. Fields past these are left to Go: no script decides by them.
local function queued_value(p, limit, cap, group, size, expires)
  local v = p.user .. ' ' .. p.qty .. ' ' .. p.now .. ' ' .. limit
  if group then
    v = v .. ' ' .. (cap or 0) .. ' ' .. group .. ' ' .. size .. ' ' .. expires
    if p.early then return v .. ' - e' end
    return v
  end
  if p.offered or p.early then
    local mark = p.offered and ' o' or ' e'
    if p.variant == '' then return v .. ' ' .. (cap or 0) .. ' - 0 0 -' .. mark end
    return v .. ' ' .. (cap or 0) .. ' - 0 0 ' .. p.variant .. mark
  end
  if p.variant ~= '' then return v .. ' ' .. (cap or 0) .. ' - 0 0 ' .. p.variant end
  if cap and tonumber(cap) > 0 then return v .. ' ' .. cap .. ' - 0 0' end
  return v
end
local function parse_queued(v)
  local user, qty, created, limit, tail = string.match(v, '^(%S+) (%d+) (%d+) (%d+)(.*)$')
  local cap, group, size, expires, variant
  if tail ~= '' then
    cap, group, size, expires, variant = string.match(tail, '^ (%d+) (%S+) (%d+) (%d+) ?(%S*)')
    if group == '-' then group, size, expires = nil, nil, nil end
    if variant == '' or variant == '-' then variant = nil end
  end
  return user, qty, created, limit, cap, group, size, expires, variant
end
---- end queued.lua
---- begin replies.lua: a copy; edit replies.lua, then run go generate
-- The reserve script's reply codes (replies.go: reserveReplies, which gives each its
-- meaning and a refusal its error), which the scripts that apply the per-user rule
-- answer with too (user_limit.lua).
---- begin codes: written by go generate from reserveReplies (replies.go)
local RESERVED, REPLAYED, NO_SALE, BUSY, NOT_STARTED, ENDED, SOLD_OUT, OVER_LIMIT, KEY_REUSED, QUANTITY_OVER_LIMIT, GROUP_SALE, NOT_GROUP_SALE, NO_GROUP, GROUP_CLOSED, ALREADY_IN_GROUP, GROUP_FULL, OVER_CAP, RATE_LIMITED, NOT_ADMITTED, WRONG_BUCKETS, CLOSED, NO_VARIANT, OVER_VARIANT_LIMIT, RESERVED_EARLY, CODE_INVALID, CODE_TAKEN = 0, 1, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14, -15, -16, -17, -18, -19, -20, -21, 2, -22, -23
---- end codes
---- end replies.lua
---- begin buyer_fields.lua: a copy; edit buyer_fields.lua, then run go generate
-- The fields of a buyer in a sale's users hash, for the scripts, which have a buyer's
-- key (buyer.ID.Key), never its subject (buyerfields.go is the one home of these names,
-- for Go and for Lua): the units field is the key itself, the others the key after the
-- constants PARTS (participations), LOCK, ALLOWANCE (PARTS .. key: a constant costs the
-- script what a literal does, a function call more), a variant's units
-- VARIANT .. index .. ':' .. key, and the ids of the buyer's queued orders QUEUED .. key
-- (queued_ids.lua).
--
--   counted(cap, group): whether a sale keeps its buyers' orders (participations) beside
--     their units, of a cap (a number, 0: none) and a group (any true value: the sale
--     sells in groups); Go's counted (buyerfields.go) is the same rule
---- begin marks: written by go generate from the marks of buyerfields.go
local PARTS, LOCK, ALLOWANCE, VARIANT, QUEUED = 'p', 'l', 'a', 'v', 'q'
---- end marks
local function counted(cap, group) return cap > 0 or (group and true or false) end
---- end buyer_fields.lua
---- begin holdings.lua: a copy; edit holdings.lua, then run go generate
-- What a buyer holds in a sale (holdings.go): user is the buyer's key, which is also the
-- field of its units (buyer_fields.lua). get(h, field) and set(h, field, value) are the
-- caller's way to the users hash h: hget and hset go to Redis at once (h is the hash's
-- key; set with a nil value deletes the field), the reserve script passes its own, which
-- read the hash once per call and write it once after.
--
--   holding(h, get, user, counted): the units and participations user holds (0
--     participations when not counted)
--   hold(h, set, user, held, parts, qty, counted): user, who holds held units and parts
--     participations, takes one more order of qty units
--   release(h, user, qty): one order of qty units of user comes back (in Redis at once);
--     true when user holds nothing any more
--   holds_any(key, user): whether user holds anything in the sale (a pass was used)
-- needs: buyer_fields.lua
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
---- end holdings.lua
---- begin queued_ids.lua: a copy; edit queued_ids.lua, then run go generate
-- The ids of a buyer's queued orders, in the buyer's field QUEUED .. key of the users
-- hash (buyer_fields.lua), separated by single spaces: the scripts that queue an order
-- add its id, the ones that end its queued state take it out (unqueue, units.lua).
--
--   queued_with(ids, id): a queued ids field's value ids (false or nil: no field) with
--     order id added
--   queued_without(ids, gone): the value ids without the ids that are keys of the table
--     gone, nil when none is left
--   add_queued(key, user, id): order id into the queued ids field of user (in Redis at
--     once; the reserve script writes its own in its one HSET)
-- needs: buyer_fields.lua, holdings.lua
local function queued_with(ids, id)
  if ids then return ids .. ' ' .. id end
  return id
end
local function queued_without(ids, gone)
  if gone[ids] then return nil end -- the one id, as most buyers have
  local kept = {}
  for id in string.gmatch(ids, '%S+') do
    if not gone[id] then kept[#kept + 1] = id end
  end
  if #kept > 0 then return table.concat(kept, ' ') end
end
local function add_queued(key, user, id)
  hset(key, QUEUED .. user, queued_with(hget(key, QUEUED .. user), id))
end
---- end queued_ids.lua
---- begin user_limit.lua: a copy; edit user_limit.lua, then run go generate
-- The per-user rule, which the reserve, the adopt and the giving-back scripts apply
-- alike (holdings.go), answering with the reserve script's codes (replies.lua).
--
--   quantity_refused(qty, limit): the refusal of a quantity the limit alone refuses
--     (whatever the buyer holds), or nil; Go's quantityOverLimit is the same rule
--   user_refused(held, qty, limit, parts, cap): the refusal of one more order of qty
--     units to a user who holds held units and parts participations, under the per-user
--     limit and the cap on participations (0: none), or nil
-- needs: replies.lua
local function quantity_refused(qty, limit)
  if qty > limit then return {QUANTITY_OVER_LIMIT, limit} end
end
local function user_refused(held, qty, limit, parts, cap)
  if held + qty > limit then return {OVER_LIMIT, held, limit} end
  if cap > 0 and parts >= cap then return {OVER_CAP, parts, cap} end
end
---- end user_limit.lua
---- begin variants.lua: a copy; edit variants.lua, then run go generate
-- The fields of a sale of variants (variants.go): vfield(field, variant) is field's
-- share of the variant of index variant (a string or number; nil or '' for none: the
-- field itself).
local function vfield(field, variant)
  if variant == nil or variant == '' then return field end
  return field .. ':' .. variant
end
---- end variants.lua
---- begin variant_holdings.lua: a copy; edit variant_holdings.lua, then run go generate
-- What a buyer holds of a variant (the users hash's field VARIANT .. index .. ':' .. key,
-- kept only where the sale sets a per-variant limit; variants.go):
--
--   variant_held(users, user, variant): user's units of variant
--   hold_variant(users, user, variant, qty): they go up by qty, where the field is kept
--     (vlimit > 0, read by the caller)
--   release_variant(users, user, variant, qty): they go down by qty, the field dropped
--     at 0; nothing where the buyer has no such field
-- needs: variants.lua, buyer_fields.lua
local function variant_held(users, user, variant)
  return tonumber(redis.call('HGET', users, VARIANT .. variant .. ':' .. user) or '0')
end
local function hold_variant(users, user, variant, qty)
  redis.call('HINCRBY', users, VARIANT .. variant .. ':' .. user, qty)
end
local function release_variant(users, user, variant, qty)
  local f = VARIANT .. variant .. ':' .. user
  local held = tonumber(redis.call('HGET', users, f) or '0') - qty
  if held > 0 then redis.call('HSET', users, f, string.format('%d', held)) else redis.call('HDEL', users, f) end
end
---- end variant_holdings.lua

local K = {sale = KEYS[1], users = KEYS[2], queued = KEYS[3], claimed = KEYS[4], given_back = KEYS[5]}
local orders = {}
for a = 1, #ARGV, 2 do orders[#orders + 1] = {id = ARGV[a], value = ARGV[a + 1]} end

local out = {}
if redis.call('HEXISTS', K.sale, 'total') == 0 or redis.call('HEXISTS', K.sale, 'closed') == 1 then
  for i = 1, #orders do out[i] = SALE_MISSING end
  out[#out + 1] = 0
  return out
end
local rebuilt = tonumber(redis.call('HGET', K.sale, 'rebuilt') or '0')
local vlimit = tonumber(redis.call('HGET', K.sale, 'vlimit') or '0')
for _, o in ipairs(orders) do
  local id, v = o.id, o.value
  local user, qty, created, limit, cap, group, _, _, variant = parse_queued(v)
  qty, created, limit, cap = tonumber(qty), tonumber(created), tonumber(limit), tonumber(cap or '0')
  local count = counted(cap, group)
  local held, parts = holding(K.users, hget, user, count)
  local r
  if redis.call('HEXISTS', K.queued, id) == 1 then
    redis.call('SADD', K.claimed, id)
    r = ADOPTED
  elseif created >= rebuilt or redis.call('SISMEMBER', K.given_back, id) == 1 then
    r = NOT_ORPHAN
  elseif group then
    r = ORPHAN_SEAT
  elseif user_refused(held, qty, limit, parts, cap) or
      variant and vlimit > 0 and variant_held(K.users, user, variant) + qty > vlimit then
    r = ORPHAN_OVER_LIMIT
  else
    local s = redis.call('HMGET', K.sale, 'avail', vfield('avail', variant))
    local avail, left = tonumber(s[1]), tonumber(s[2] or '0')
    if avail >= qty and left >= qty then
      redis.call('HSET', K.sale, 'avail', string.format('%d', avail - qty))
      if variant then
        redis.call('HSET', K.sale, vfield('avail', variant), string.format('%d', left - qty))
        if vlimit > 0 then hold_variant(K.users, user, variant, qty) end
      end
      redis.call('HINCRBY', K.sale, 'qunits', qty)
      hold(K.users, hset, user, held, parts, qty, count)
      redis.call('HSET', K.queued, id, v)
      add_queued(K.users, user, id)
      redis.call('SADD', K.claimed, id)
      r = ADOPTED
    else
      r = ORPHAN_NO_STOCK
    end
  end
  out[#out + 1] = r
end
out[#out + 1] = tonumber(redis.call('HGET', K.sale, 'epoch') or '0')
return out

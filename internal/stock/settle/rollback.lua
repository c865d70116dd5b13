-- Gives back a reservation whose reserve script's reply was lost (the
-- purchase was answered 503, so no order stands for it).
--
-- KEYS[1] sale: sale hash  KEYS[2] users: users hash  KEYS[3] queued: queued hash
-- KEYS[4] claimed: claimed set  KEYS[5] idempotency: idempotency key (any key when the
-- purchase had none)  KEYS[6] given_back: given-back set
-- ARGV[1] order: order id  ARGV[2] activity: activity id (published on the
-- returned-units channel)  ARGV[3] channel: the returned-units channel
--
-- The sale's generation goes up (a rebuild that read the order queued reads again).
-- Returns a code of rollbackCodes (RollbackResult): ROLLED_BACK, and the order is
-- recorded as given back for a day; STANDS, a worker already claimed it (the repair pass
-- enqueued it meanwhile), or a replay of its Idempotency-Key was answered with it (the
-- repair pass enqueues it); NOT_QUEUED, given back or settled before.
--
-- Settler.Rollback runs it (settle.go).

---- begin codes: written by go generate from rollbackCodes
local ROLLED_BACK, STANDS, NOT_QUEUED = 0, 1, 2
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
---- begin units.lua: a copy; edit units.lua, then run go generate
-- The steps of giving units back, which the settling, the roll-back, the claim, a
-- group's failure and the rebuild share, so each is written once.
--
--   each(cmd, key, list): runs cmd on key with the values of list as arguments, in
--     calls of at most 1000 (Lua's stack bounds unpack).
--   unqueue(sale, users, queued, claimed, ids): ends the queued state of the orders ids
--     (out of the queued hash and their buyers' queued ids fields in the users hash) and
--     returns, by position, each one's buyer key, quantity and variant (nil for none);
--     nil for an id not queued (or seen before in ids). The queued hash and the buyers'
--     fields are read once, and they, the claimed set and the sale's qunits are each
--     written once, for all of them: a command inside a script costs the server more
--     than its own work. The since index keeps the ids: the repair pass drops its
--     members lazily (stale.lua).
--   give_back(sale, users, user, qty, variant): qty units (of variant, nil for none) back
--     to stock, and the order they made out of what the buyer of key user holds
--     (free_buyer)
--   free_buyer(users, user, qty, variant): the order of qty units (of variant, nil for
--     none) out of what the buyer of key user holds (release, holdings.lua;
--     release_variant, variant_holdings.lua); a buyer who holds nothing any more loses
--     the field of their attempts' allowance too, once that allowance is full again (as
--     its key would have expired)
-- needs: queued.lua, buyer_fields.lua, holdings.lua, variant_holdings.lua, queued_ids.lua
local function each(cmd, key, list)
  for i = 1, #list, 1000 do
    redis.call(cmd, key, unpack(list, i, math.min(i + 999, #list)))
  end
end
local function unqueue(sale, users_hash, queued, claimed, ids)
  local users, qtys, variants, gone, seen, units = {}, {}, {}, {}, {}, 0
  local fields, listed = {}, {} -- the queued ids fields of the orders' buyers, each once
  for first = 1, #ids, 1000 do
    local values = redis.call('HMGET', queued, unpack(ids, first, math.min(first + 999, #ids)))
    for j, v in ipairs(values) do
      local i = first + j - 1
      if v and not seen[ids[i]] then
        seen[ids[i]] = true
        local user, qty, _, _, _, _, _, _, variant = parse_queued(v)
        users[i], qtys[i], variants[i] = user, tonumber(qty), variant
        units = units + qtys[i]
        gone[#gone + 1] = ids[i]
        if not listed[user] then listed[user], fields[#fields + 1] = true, QUEUED .. user end
      end
    end
  end
  if #gone > 0 then
    each('HDEL', queued, gone)
    each('SREM', claimed, gone)
    redis.call('HINCRBY', sale, 'qunits', string.format('%d', -units))
    local left, emptied = {}, {}
    for first = 1, #fields, 1000 do
      local values = redis.call('HMGET', users_hash, unpack(fields, first, math.min(first + 999, #fields)))
      for j, v in ipairs(values) do
        local kept = v and queued_without(v, seen)
        if kept then left[#left + 1], left[#left + 2] = fields[first + j - 1], kept
        elseif v then emptied[#emptied + 1] = fields[first + j - 1] end
      end
    end
    if #left > 0 then each('HSET', users_hash, left) end
    if #emptied > 0 then each('HDEL', users_hash, emptied) end
  end
  return users, qtys, variants
end
local function free_buyer(users, user, qty, variant)
  if variant then release_variant(users, user, variant, qty) end
  if release(users, user, qty) then
    local a = redis.call('HGET', users, ALLOWANCE .. user)
    if a then
      local t = redis.call('TIME')
      if tonumber(a) <= tonumber(t[1]) * 1000000 + tonumber(t[2]) then redis.call('HDEL', users, ALLOWANCE .. user) end
    end
  end
end
local function give_back(sale, users, user, qty, variant)
  redis.call('HINCRBY', sale, 'avail', qty)
  if variant then redis.call('HINCRBY', sale, vfield('avail', variant), qty) end
  free_buyer(users, user, qty, variant)
end
---- end units.lua
---- begin bump_gen.lua: a copy; edit bump_gen.lua, then run go generate
-- bump_gen(sale): the step the scripts that move orders share (generations: see
-- lifecycle's rebuild.go): the sale's generation goes up by one, if the sale exists (a
-- lost sale stays missing, to be rebuilt). Returns the new generation, 0 for a missing
-- sale. A sale exists when its hash has total: a script that adds to a lost sale's
-- counts (avail, qunits) leaves a partial hash.
local function bump_gen(sale)
  if redis.call('HEXISTS', sale, 'total') == 0 then return 0 end
  return redis.call('HINCRBY', sale, 'gen', 1)
end
---- end bump_gen.lua

local K = {sale = KEYS[1], users = KEYS[2], queued = KEYS[3], claimed = KEYS[4], idempotency = KEYS[5],
  given_back = KEYS[6]}
local ARG = {order = ARGV[1], activity = ARGV[2], channel = ARGV[3]}

if redis.call('SISMEMBER', K.claimed, ARG.order) == 1 then return STANDS end
local prior = redis.call('GET', K.idempotency)
-- a replay answered with this order (reserveScript marked its key): it stands, and the
-- repair pass enqueues it
if prior and string.sub(prior, -#ARG.order - 3) == ' ' .. ARG.order .. ' r' then return STANDS end
local users, qtys, variants = unqueue(K.sale, K.users, K.queued, K.claimed, {ARG.order})
if not users[1] then return NOT_QUEUED end
give_back(K.sale, K.users, users[1], qtys[1], variants[1])
bump_gen(K.sale)
redis.call('SADD', K.given_back, ARG.order)
redis.call('EXPIRE', K.given_back, 86400)
if prior and string.sub(prior, -#ARG.order - 1) == ' ' .. ARG.order then redis.call('DEL', K.idempotency) end
redis.call('PUBLISH', ARG.channel, ARG.activity)
return ROLLED_BACK

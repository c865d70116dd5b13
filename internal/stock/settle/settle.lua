-- Ends the queued state of orders the worker has written to MySQL.
--
-- KEYS[1] sale: sale hash  KEYS[2] users: users hash  KEYS[3] queued: queued hash
-- KEYS[4] claimed: claimed set  KEYS[5] since: queued-since sorted set
-- KEYS[6] open_groups: open groups sorted set  KEYS[7] fill_groups: open groups, fullest
-- first  KEYS[8] entries: waitlist entries
-- ARGV[1] activity: activity id  ARGV[2] channel: the returned-units channel
-- ARGV[3] now: now (ms)  ARGV[4] m, then ARGV[5..4+m] offer_ids: order ids for offers
-- then per order i (from 1) three ARGV, orders[i].id, .failed ("1" when it failed: its
-- units come back, else "0"), .group (its group's id, "" outside a group), and three
-- KEYS, KEYS[6+3i] and KEYS[7+3i] orders[i].group_key and .seats (the hash and the
-- seats of its group: any key of the sale's slot outside a group), KEYS[8+3i] .waiting
-- (the waiting set of its variant, WaitlistKey)
--
-- Each order is settled once: an order no longer queued is skipped. A failed order's
-- units go to the waitlist first (offer), and its seat in its group is free again (the
-- group reopens until its window ends); an offered order that failed ends its entry.
-- The sale's generation goes up. Returns the units given back, then the orders offered
-- (id, value, ...).
--
-- Settler.Settle runs it per bucket (settle.go).

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
---- begin replies.lua: a copy; edit replies.lua, then run go generate
-- The reserve script's reply codes (replies.go: reserveReplies, which gives each its
-- meaning and a refusal its error), which the scripts that apply the per-user rule
-- answer with too (user_limit.lua).
---- begin codes: written by go generate from reserveReplies (replies.go)
local RESERVED, REPLAYED, NO_SALE, BUSY, NOT_STARTED, ENDED, SOLD_OUT, OVER_LIMIT, KEY_REUSED, QUANTITY_OVER_LIMIT, GROUP_SALE, NOT_GROUP_SALE, NO_GROUP, GROUP_CLOSED, ALREADY_IN_GROUP, GROUP_FULL, OVER_CAP, RATE_LIMITED, NOT_ADMITTED, WRONG_BUCKETS, CLOSED, NO_VARIANT, OVER_VARIANT_LIMIT, RESERVED_EARLY, CODE_INVALID, CODE_TAKEN = 0, 1, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14, -15, -16, -17, -18, -19, -20, -21, 2, -22, -23
---- end codes
---- end replies.lua
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
---- begin list_group.lua: a copy; edit list_group.lua, then run go generate
-- list_group(open, fill, group, id): puts group id (its hash: group) in the sale's two
-- sorted sets of open groups (open, by the end of its window; fill, fullest first) when
-- its hash says it is open, and takes it out of both otherwise (complete, failed, or no
-- such group). Every script that changes a group's members or status calls it, so the
-- two sets agree.
local function list_group(open, fill, group, id)
  local g = redis.call('HMGET', group, 'members', 'expires', 'status')
  if g[3] == '0' then
    redis.call('ZADD', open, g[2], id)
    redis.call('ZADD', fill, string.format('%d', tonumber(g[1]) * 1e13 - tonumber(g[2])), id)
  else
    redis.call('ZREM', open, id)
    redis.call('ZREM', fill, id)
  end
end
---- end list_group.lua
---- begin entry.lua: a copy; edit entry.lua, then run go generate
-- A waitlist entry (waitlist.go), read and written: "<seq> <qty> <variant or -> <joined ms> <status>
-- <order or ->" with status w (waiting), o (offered) or e (ended):
--
--   parse_entry(v): {seq, qty, variant (nil: none), joined, status, order (nil: none)}
--   entry_value(e): the value of e
local function parse_entry(v)
  if not v then return nil end
  local seq, qty, variant, joined, status, order = string.match(v, '^(%d+) (%d+) (%S+) (%d+) (%a) (%S+)$')
  if not seq then return nil end
  if variant == '-' then variant = nil end
  if order == '-' then order = nil end
  return {seq = seq, qty = tonumber(qty), variant = variant, joined = joined, status = status, order = order}
end
local function entry_value(e)
  return e.seq .. ' ' .. string.format('%d', e.qty) .. ' ' .. (e.variant or '-') .. ' ' .. e.joined .. ' ' .. e.status ..
    ' ' .. (e.order or '-')
end
---- end entry.lua
---- begin offer.lua: a copy; edit offer.lua, then run go generate
-- offer gives units that came back to the waitlist first (waitlist.go), in the script that
-- gave them back.
--
--   offer(w, variant): w = {sale, users, queued, since, entries, set (the variant's
--     waiting set), now (ms, a string), ids (order ids minted for offers), next (the
--     first unused id), offers (out: id, value, ...)};
--     offers the units of variant (nil: the sale's) left in the sale to the waiting
--     entries in join order while they last: each entry whose quantity fits, and whose
--     buyer's holding stays within the limits with it, gets a queued order of them
--     (marked offered), its status offered with the order's id. An entry that does not
--     fit stays waiting. Nothing happens once the sale has ended, or without an id left.
-- needs: entry.lua, queued.lua, buyer_fields.lua, holdings.lua, user_limit.lua, queued_ids.lua
-- needs: variants.lua, variant_holdings.lua
local function offer(w, variant)
  if redis.call('ZCARD', w.set) == 0 then return end
  local field = vfield('avail', variant)
  local s = redis.call('HMGET', w.sale, 'avail', field, 'limit', 'plimit', 'vlimit', 'kind', 'end')
  if not s[1] or tonumber(w.now) >= tonumber(s[7]) then return end
  local avail, left, limit_text = tonumber(s[1]), tonumber(s[2] or '0'), s[3]
  local limit, cap, vlimit = tonumber(limit_text), tonumber(s[4] or '0'), tonumber(s[5] or '0')
  local count = counted(cap, s[6] == 'group')
  -- Pages of the waiting set by join sequence, each after the last one read: an entry
  -- that does not fit is passed over, however many there are before one that does.
  local after, page = '-inf', {}
  local i = 1
  while left > 0 and w.next <= #w.ids do
    if i > #page then
      page = redis.call('ZRANGEBYSCORE', w.set, after, '+inf', 'WITHSCORES', 'LIMIT', 0, 100)
      if #page == 0 then break end
      after, i = '(' .. page[#page], 1
    end
    local user = page[i]
    i = i + 2
    local e = parse_entry(redis.call('HGET', w.entries, user))
    if not e or e.status ~= 'w' then
      redis.call('ZREM', w.set, user)
    elseif e.qty <= left then
      local held, parts = holding(w.users, hget, user, count)
      local over = user_refused(held, e.qty, limit, parts, cap)
      if not over and variant and vlimit > 0 then over = variant_held(w.users, user, variant) + e.qty > vlimit end
      if not over then
        local id = w.ids[w.next]
        w.next = w.next + 1
        avail, left = avail - e.qty, left - e.qty
        hold(w.users, hset, user, held, parts, e.qty, count)
        if variant and vlimit > 0 then hold_variant(w.users, user, variant, e.qty) end
        local v = queued_value({user = user, qty = string.format('%d', e.qty), now = w.now, variant = variant or '',
          offered = true}, limit_text, cap)
        redis.call('HSET', w.queued, id, v)
        add_queued(w.users, user, id)
        redis.call('ZADD', w.since, w.now, id)
        redis.call('HINCRBY', w.sale, 'qunits', string.format('%d', e.qty))
        e.status, e.order = 'o', id
        redis.call('HSET', w.entries, user, entry_value(e))
        redis.call('ZREM', w.set, user)
        w.offers[#w.offers + 1], w.offers[#w.offers + 2] = id, v
      end
    end
  end
  local fields = {'avail', string.format('%d', avail)}
  if variant then fields[3], fields[4] = field, string.format('%d', left) end
  redis.call('HSET', w.sale, unpack(fields))
end
---- end offer.lua
---- begin end_offer.lua: a copy; edit end_offer.lua, then run go generate
-- end_offer ends the entry of an offered order that comes back (cancelled, expired,
-- failed, refunded): it reads ended.
--
--   end_offer(entries, user, id): the entry of user, if offered order id, ends
-- needs: entry.lua
local function end_offer(entries, user, id)
  local e = parse_entry(redis.call('HGET', entries, user))
  if e and e.status == 'o' and e.order == id then
    e.status = 'e'
    redis.call('HSET', entries, user, entry_value(e))
  end
end
---- end end_offer.lua

local K = {sale = KEYS[1], users = KEYS[2], queued = KEYS[3], claimed = KEYS[4], since = KEYS[5], open_groups = KEYS[6],
  fill_groups = KEYS[7], entries = KEYS[8]}
local ARG = {activity = ARGV[1], channel = ARGV[2], now = ARGV[3]}
local offer_ids = {}
for j = 1, tonumber(ARGV[4]) do offer_ids[j] = ARGV[4 + j] end
local orders = {}
for a = 5 + #offer_ids, #ARGV, 3 do
  local i = #orders + 1
  orders[i] = {id = ARGV[a], failed = ARGV[a + 1] == '1', group = ARGV[a + 2], group_key = KEYS[6 + 3 * i],
    seats = KEYS[7 + 3 * i], waiting = KEYS[8 + 3 * i]}
end

local w = {sale = K.sale, users = K.users, queued = K.queued, since = K.since, entries = K.entries, now = ARG.now,
  ids = offer_ids, next = 1, offers = {}}
local ids = {}
for i, o in ipairs(orders) do ids[i] = o.id end
local users, qtys, variants = unqueue(K.sale, K.users, K.queued, K.claimed, ids)
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

-- Writes one bucket of a sale from MySQL's figures, only if the bucket is
-- as the caller read it (RebuildPoint): missing if it was missing, else at the generation
-- read, and, in a sale of several buckets, still closed by this rebuild. Otherwise
-- something moved meanwhile (another rebuild, a worker's claim or settle) and it writes
-- nothing.
--
-- KEYS[1] sale: sale hash  KEYS[2] users: users hash  KEYS[3] queued: queued hash
-- KEYS[4] claimed: claimed set  KEYS[5] returned: returned set  KEYS[6] staged: the
-- users hash as MySQL's orders make it (units, and participations), written beforehand
-- in chunks (it becomes the users hash; it may not exist when no buyer holds any)
-- KEYS[7] moves: moves hash
-- ARGV[1] gen: the generation read, "" when the sale was missing
-- ARGV[2] total  ARGV[3] held: the units out of the stock in MySQL (its orders' and
-- those kept off sale)  ARGV[4] new_gen: the new generation
-- ARGV[5] activity: activity id  ARGV[6] channel: the returned-units channel
-- ARGV[7] into: where the units left go: avail (a one-bucket sale), reserve (bucket 0
-- of a sale of several), "" nowhere (another bucket: total and held are its own, avail 0)
-- ARGV[8] token: the rebuild's closing token, "" for a one-bucket sale
-- then, each part a count and its elements:
--   - settings: the sale's settings as field, value, ... (Sale.fields)
--   - stored: the queued order ids MySQL has (they are settled here: MySQL's units count
--     them)
--   - variants: the sale's variants (0 for none), then vlimit, the per-variant limit (0:
--     none), then per variant its total and the units MySQL's orders hold of it (as
--     total and held for the sale)
--
-- What it writes:
--   - the users hash the caller staged (in chunks, so that a sale of many buyers never
--     blocks Redis for long), renamed into place, with the units (and participations,
--     and units of a variant where the sale keeps them) of the orders that stay queued
--     added, and their ids in their buyers' queued ids fields; the locks and allowances of those orders' buyers stay, the other buyers'
--     locks go with the old hash (their allowances were copied to keys of their own
--     beforehand: keepAllowances);
--   - the units left, total minus held minus the queued orders' units, into the field
--     into names, and so for each variant (avail:<i>, or reserve:<i>);
--   - the stored orders settled: MySQL's units count them;
--   - the returned set and the moves hash emptied: MySQL's units count the cancelled
--     orders whose units are not back yet, which the return job then gives back, and the
--     units of a move not applied are among those left.
--
-- A group-buy sale's groups are written after it (RestoreGroups).
-- Returns {REBUILT, units of the orders that stay queued, then those of each variant}
-- when it wrote, {MOVED} when the bucket moved (rebuildCodes).
--
-- Sales.Rebuild runs it per bucket (rebuild.go).

---- begin codes: written by go generate from rebuildCodes
local REBUILT, MOVED = 1, 0
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

local K = {sale = KEYS[1], users = KEYS[2], queued = KEYS[3], claimed = KEYS[4], returned = KEYS[5], staged = KEYS[6],
  moves = KEYS[7]}
local ARG = {gen = ARGV[1], total = ARGV[2], held = ARGV[3], new_gen = ARGV[4], activity = ARGV[5], channel = ARGV[6],
  into = ARGV[7], token = ARGV[8]}
local at = 9 -- the count of the part that comes next
local settings = {}
for i = 1, tonumber(ARGV[at]) do settings[i] = ARGV[at + i] end
at = at + #settings + 1
local stored = {}
for i = 1, tonumber(ARGV[at]) do stored[i] = ARGV[at + i] end
at = at + #stored + 1
local variants, vlimit = {}, tonumber(ARGV[at + 1])
for i = 1, tonumber(ARGV[at]) do variants[i] = {total = ARGV[at + 2 * i], held = ARGV[at + 2 * i + 1]} end

local gen = redis.call('HGET', K.sale, 'gen')
if ARG.gen == '' then
  if redis.call('HEXISTS', K.sale, 'total') == 1 then return {MOVED} end
elseif gen ~= ARG.gen and not (gen == false and ARG.gen == '0') then
  return {MOVED}
end
if ARG.token ~= '' and string.match(redis.call('HGET', K.sale, 'closed') or '', '^(%S+)') ~= ARG.token then
  return {MOVED}
end
unqueue(K.sale, K.users, K.queued, K.claimed, stored)
local queued, queued_ids, all = {}, {}, redis.call('HGETALL', K.queued)
for i = 1, #all, 2 do queued_ids[#queued_ids + 1], queued[#queued + 1] = all[i], all[i + 1] end
-- the buyer locks of the purchases whose orders stay queued (their commits may be under
-- way) stay held, and their buyers' attempts allowances stay (they may have reserved
-- since keepAllowances read the others)
local kept = {}
for _, v in ipairs(queued) do
  local user = parse_queued(v)
  kept[#kept + 1], kept[#kept + 2] = LOCK .. user, ALLOWANCE .. user
end
local held = {}
for first = 1, #kept, 1000 do
  local part = redis.call('HMGET', K.users, unpack(kept, first, math.min(first + 999, #kept)))
  for j, v in ipairs(part) do held[first + j - 1] = v end
end
redis.call('UNLINK', K.users, K.returned, K.moves)
if redis.call('EXISTS', K.staged) == 1 then
  redis.call('RENAME', K.staged, K.users)
  redis.call('PERSIST', K.users)
end
for i, v in ipairs(held) do
  if v then redis.call('HSET', K.users, kept[i], v) end
end
local qunits, vqunits = 0, {}
for i = 1, #variants do vqunits[i] = 0 end
for i, v in ipairs(queued) do
  local user, qty, _, _, cap, group, _, _, variant = parse_queued(v)
  local count = counted(tonumber(cap or '0'), group)
  local units, parts = holding(K.users, hget, user, count)
  hold(K.users, hset, user, units, parts, tonumber(qty), count)
  add_queued(K.users, user, queued_ids[i])
  qunits = qunits + tonumber(qty)
  if variant and tonumber(variant) < #variants then
    vqunits[tonumber(variant) + 1] = vqunits[tonumber(variant) + 1] + tonumber(qty)
    if vlimit > 0 then hold_variant(K.users, user, variant, qty) end
  end
end
local function put_left(fields, total, out, q, avail, reserve)
  local left = string.format('%d', math.max(0, tonumber(total) - tonumber(out) - q))
  fields[#fields + 1], fields[#fields + 2] = avail, '0'
  if ARG.into == 'avail' then fields[#fields] = left end
  if ARG.into == 'reserve' then fields[#fields + 1], fields[#fields + 2] = reserve, left end
end
local fields = {'qunits', string.format('%d', qunits), 'gen', ARG.new_gen}
put_left(fields, ARG.total, ARG.held, qunits, 'avail', 'reserve')
for i, v in ipairs(variants) do
  put_left(fields, v.total, v.held, vqunits[i], vfield('avail', i - 1), vfield('reserve', i - 1))
end
for _, f in ipairs(settings) do fields[#fields + 1] = f end
redis.call('HSET', K.sale, unpack(fields))
redis.call('PUBLISH', ARG.channel, ARG.activity)
local out = {REBUILT, qunits}
for i = 1, #variants do out[#out + 1] = vqunits[i] end
return out

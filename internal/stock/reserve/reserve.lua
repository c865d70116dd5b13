-- Takes units for the purchases of one sale's bucket (the buyers' home bucket,
-- internal/stock's bucket.go), atomically, each decided on its own and in the order
-- given, as if each ran alone after the one before: one call carries the purchases that
-- waited in one API process at the same moment (coalesce.go). In a group-buy sale a
-- purchase is a seat: it opens a group or joins one, in the same step.
--
-- KEYS and ARGV are the call's (callKeys, callArgs), then each purchase's in turn
-- (purchaseKeys, and seatKeys for a seat; purchaseArgs), defined once in call.go; the
-- section "layout" below unpacks them by name: K.<call key>, ARG.<call arg>, and a
-- table p per purchase. It returns one reply per purchase (PurchaseReplies, replies.lua),
-- then the sale's terms {limit, price, pay window, cap, room}, which every answer
-- carries.
--
-- Each purchase goes through the pieces below in this order, the first refusal being its
-- reply: replayed, locked, outside_window, wrong_kind, seat_refused, units_refused, and
-- take. The Idempotency-Key comes first: it is written in the same step as the
-- reservation, so a key found is a purchase that was made, and its replay gets the order
-- even while that purchase's lock is held. Every check after it comes after the lock's,
-- so a second purchase of the same user sees the outcome of the first (in the same call
-- too). A purchase that reaches the script counts against the user's allowance first
-- (reserve); a retry after the lock does not count again (interval 0).
--
-- Reserver.reserveAll runs it (call.go), for the purchases coalesce.go gathered.

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
---- begin code.lua: a copy; edit code.lua, then run go generate
-- A sale's access codes (early access), for the scripts a buyer presents a code to: the
-- reserve script of a purchase before the start, and the waiting room's join. The codes
-- hash (keys.go's CodesKey) maps a code to '' (free), '<buyer key> <unix ms>' (owned by
-- that buyer since), or either after '-' (revoked); internal/stock/codes writes and
-- reads the rest of it.
--
--   code_refused(codes, claims, code, user, now): nil when the buyer of key user may use
--     the code: it was free, and is theirs from now (added to claims, the uses not yet
--     recorded in MySQL), or it is theirs already; else 'invalid' (no such code, or
--     revoked) or 'taken' (another buyer's). now is unix ms.
local function code_refused(codes, claims, code, user, now)
  local v = redis.call('HGET', codes, code)
  if not v or string.sub(v, 1, 1) == '-' then return 'invalid' end
  if v == '' then
    local at = string.format('%d', now)
    redis.call('HSET', codes, code, user .. ' ' .. at)
    redis.call('ZADD', claims, at, code)
    return nil
  end
  if string.match(v, '^(%S+)') ~= user then return 'taken' end
  return nil
end
---- end code.lua
---- begin layout: written by go generate from the layout of a call (callKeys, callArgs, purchaseKeys, seatKeys, purchaseArgs in reserve.go)
local K = {sale = KEYS[1], users = KEYS[2], queued = KEYS[3], since = KEYS[4], open_groups = KEYS[5], fill_groups = KEYS[6], codes = KEYS[7], claims = KEYS[8]}
local ARG = {key_ttl = ARGV[1], buckets = ARGV[2]}
local function unpack_purchases()
  local out, k = {}, 8
  for a = 2, #ARGV - 1, 15 do
    local p = {now = ARGV[a + 1], user = ARGV[a + 2], qty = ARGV[a + 3], order = ARGV[a + 4], variant = ARGV[a + 5], fingerprint = ARGV[a + 6], lock_token = ARGV[a + 7], lock_ttl = tonumber(ARGV[a + 8]), mode = ARGV[a + 9], group = ARGV[a + 10], interval = tonumber(ARGV[a + 11]), tolerance = tonumber(ARGV[a + 12]), redis_clock = ARGV[a + 13] == '1', pass_expires = tonumber(ARGV[a + 14]), access_code = ARGV[a + 15], idempotency_key = KEYS[k + 1], allowance_key = KEYS[k + 2]}
    k = k + 2
    if p.mode ~= '' then
      p.group_key = KEYS[k + 1]
      p.seats_key = KEYS[k + 2]
      k = k + 2
    end
    out[#out + 1] = p
  end
  return out
end
---- end layout

local v = redis.call('HMGET', K.sale, 'avail', 'limit', 'start', 'end', 'price', 'paywin', 'qunits', 'kind',
  'gsize', 'gwin', 'plimit', 'room', 'buckets', 'closed', 'variants', 'vlimit')
local sale = {avail = tonumber(v[1]), limit = tonumber(v[2]), limit_text = v[2], starts = tonumber(v[3]), ends = tonumber(v[4]),
  price = v[5] or '0', pay_window = v[6] or '0', qunits = tonumber(v[7] or '0'), group = v[8] == 'group',
  group_size = v[9], group_window = tonumber(v[10]), cap = tonumber(v[11] or '0'), room = v[12] == '1',
  buckets = v[13] or '1', closed = v[14], variants = tonumber(v[15]), vlimit = tonumber(v[16] or '0')}
sale.counted = counted(sale.cap, sale.group)
-- shut is the reply of every purchase of the call when the sale takes none now
local shut
if not sale.avail or not sale.starts then shut = {NO_SALE}
elseif sale.buckets ~= ARG.buckets then shut = {WRONG_BUCKETS, sale.buckets}
elseif sale.closed then shut = {CLOSED} end

local now_us -- Redis' clock (µs), read once per call
local function clock_us()
  if not now_us then
    local t = redis.call('TIME')
    now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return now_us
end

-- A command inside a script costs the server far more than its own work, so the users
-- hash's fields (a buyer's units, lock, allowance, participations, queued orders) and the
-- orders of a call are read with one HMGET each before its first purchase and written
-- with one HSET each after its last (taken); each purchase sees what the ones before it
-- wrote. h.v holds a field's value (false: absent), h.w the fields to write.
local users, queued = {key = K.users, v = {}, w = {}}, {key = K.queued, v = {}, w = {}}
local function read(h, fields)
  local v = redis.call('HMGET', h.key, unpack(fields))
  for i = 1, #fields do h.v[fields[i]] = v[i] end
end
local function get(h, f)
  if h.v[f] == nil then h.v[f] = redis.call('HGET', h.key, f) end
  return h.v[f]
end
local function put(h, f, v)
  h.v[f], h.w[#h.w + 1], h.w[#h.w + 2] = v, f, v
end
-- the call's entry in the since index: the order ids of its reservations, in order, as
-- one member scored by the earliest of their nows (keys.go, QueuedSinceKey), one ZADD
local since = {ids = {}}
-- a sale of variants: the units left of each variant the call's purchases named, by its
-- field (avail:<i>), read at its first purchase and written once after the last
local variants, variants_w = {}, {}

-- Each purchase's fields of its buyer (buyer_fields.lua) are named once, here: p.lock_field,
-- p.queued_field, and p.allowance_field, read only when its attempts count (interval).
local purchases = unpack_purchases()
if not shut and #purchases > 0 then -- a call carries at most maxCoalesced: the unpacks stay small
  local fields, ids = {}, {}
  for _, p in ipairs(purchases) do
    p.lock_field, p.queued_field = LOCK .. p.user, QUEUED .. p.user
    fields[#fields + 1], fields[#fields + 2], fields[#fields + 3] = p.user, p.lock_field, p.queued_field
    if p.interval ~= 0 then
      p.allowance_field = ALLOWANCE .. p.user
      fields[#fields + 1] = p.allowance_field
    end
    ids[#ids + 1] = p.order
  end
  read(users, fields)
  read(queued, ids)
end

-- The reply of a reservation: units left, and a seat's group as this seat left it;
-- RESERVED_EARLY for one of the early window (p.early, or when this call runs again
-- (again true) its queued value's mark).
local function reserved(p, avail, again)
  local code = RESERVED
  if p.early or again and string.sub(get(queued, p.order), -2) == ' e' then code = RESERVED_EARLY end
  if p.mode == '' then return {code, avail} end
  local g = redis.call('HMGET', p.group_key, 'members', 'size', 'expires', 'status')
  return {code, avail, g[1], g[2], g[3], g[4]}
end

-- Each check returns its refusal, or nil to let the purchase go on.

-- An Idempotency-Key used before: the order it made (a replay), or with another body a
-- refusal.
local function replayed(p)
  if p.fingerprint == '' then return nil end
  local prior = redis.call('GET', p.idempotency_key)
  if not prior then return nil end
  local fp, id, mark = string.match(prior, '^(%S+) (%S+)( ?r?)$')
  if fp ~= p.fingerprint then return {KEY_REUSED, id} end
  -- A replay while the order is still queued marks the key: the purchase that made it
  -- may yet fail its replicas' confirmation, and its roll-back must then leave the
  -- order standing for this answer (rollbackScript).
  if mark == '' and get(queued, id) then redis.call('SET', p.idempotency_key, prior .. ' r', 'KEEPTTL') end
  return {REPLAYED, id}
end

-- The buyer's lock (userlock.go): held while its expiry, by Redis' clock, has not passed.
local function locked(p)
  local lock = get(users, p.lock_field)
  if lock and tonumber(string.match(lock, ' (%d+)$')) > clock_us() / 1000 then return {BUSY} end
end

-- Before the start, in the sale's early window (its opening, the hash's early, read only
-- then), a buyer who presents an access code the sale has, free or theirs, buys as after
-- the start (p.early: the order is marked); anyone else waits for the start. A free code
-- becomes the buyer's here (code_refused), whatever the purchase's outcome.
local early_at
local function early_refused(p, clock)
  if p.access_code == '' then return {NOT_STARTED} end
  if not early_at then early_at = tonumber(redis.call('HGET', K.sale, 'early') or sale.starts) end
  if clock < early_at then return {NOT_STARTED} end
  local refused = code_refused(K.codes, K.claims, p.access_code, p.user, clock)
  if refused == 'invalid' then return {CODE_INVALID} end
  if refused == 'taken' then return {CODE_TAKEN} end
  p.early = true
end

-- The sale's window, and a waiting room's pass, judged by Redis' clock (the same for
-- every API instance) or by the caller's now.
local function outside_window(p)
  local clock = tonumber(p.now)
  if p.redis_clock then clock = math.floor(clock_us() / 1000) end
  if clock < sale.starts then
    local refusal = early_refused(p, clock)
    if refusal then return refusal end
  end
  if clock >= sale.ends then return {ENDED} end
  if sale.room and not (clock < (p.pass_expires or 0)) then return {NOT_ADMITTED} end
end

-- A seat in a group-buy sale, a plain purchase in any other.
local function wrong_kind(p)
  if p.mode == '' and sale.group then return {GROUP_SALE} end
  if p.mode ~= '' and not sale.group then return {NOT_GROUP_SALE} end
end

-- A seat joins a group that exists, has a seat left, is open and is not the user's;
-- else the refusal. Returns nil and the group (members, size, expires, status).
local function seat_refused(p)
  if p.mode ~= 'join' then return nil end
  local g = redis.call('HMGET', p.group_key, 'members', 'size', 'expires', 'status')
  if not g[1] then return {NO_GROUP} end
  if redis.call('HEXISTS', p.seats_key, p.user) == 1 then return {ALREADY_IN_GROUP} end
  if g[4] == '1' or tonumber(g[1]) >= tonumber(g[2]) then return {GROUP_FULL} end
  if g[4] ~= '0' or tonumber(p.now) >= tonumber(g[3]) then return {GROUP_CLOSED} end
  return nil, g
end

-- The units left for purchase p: the sale's, or in a sale of variants the variant's
-- (p.vfield, its field); a purchase that names no variant of the sale, or names one in a
-- sale without, is refused.
local function left_for(p)
  if not sale.variants and p.variant == '' then return nil, sale.avail end
  local i = tonumber(p.variant)
  if not sale.variants or not i or i >= sale.variants then return {NO_VARIANT} end
  p.vfield = 'avail:' .. p.variant
  if not variants[p.vfield] then variants[p.vfield] = tonumber(redis.call('HGET', K.sale, p.vfield) or '0') end
  return nil, variants[p.vfield]
end

-- A buyer within the per-variant limit with qty more units of p's variant (p.vheld: what
-- they hold of it), where the sale sets one.
local function variant_refused(p, qty)
  if sale.vlimit <= 0 or p.vfield == nil then return nil end
  p.vheld = tonumber(get(users, VARIANT .. p.variant .. ':' .. p.user) or '0')
  if p.vheld + qty > sale.vlimit then return {OVER_VARIANT_LIMIT, p.vheld, sale.vlimit} end
end

-- The quantity within the per-user limit, units left for it, the user within the limit
-- with it, within the cap on participations, and within the per-variant limit; else the
-- refusal. Returns nil, the units and the participations the user holds.
local function units_refused(p)
  local qty = tonumber(p.qty)
  local refusal = quantity_refused(qty, sale.limit)
  if refusal then return refusal end
  local left
  refusal, left = left_for(p)
  if refusal then return refusal end
  if left < qty then return {SOLD_OUT, left, sale.room and 1 or 0, sale.limit} end
  local held, parts = holding(users, get, p.user, sale.counted)
  refusal = user_refused(held, qty, sale.limit, parts, sale.cap) or variant_refused(p, qty)
  if refusal then return refusal end
  return nil, held, parts
end

-- Takes the units, the user's lock and participation and the seat, and queues the order;
-- allow is the user's allowance after this attempt (nil: not counted), g the group a
-- seat joins, held and parts what the user holds before.
local function take(p, allow, g, held, parts)
  local qty = tonumber(p.qty)
  sale.avail, sale.qunits = sale.avail - qty, sale.qunits + qty
  local left = sale.avail
  if p.vfield then
    left = variants[p.vfield] - qty
    variants[p.vfield], variants_w[p.vfield] = left, true
    if p.vheld then put(users, VARIANT .. p.variant .. ':' .. p.user, string.format('%d', p.vheld + qty)) end
  end
  hold(users, put, p.user, held, parts, qty, sale.counted)
  put(users, p.lock_field, p.lock_token .. ' ' .. string.format('%d', math.floor(clock_us() / 1000) + p.lock_ttl))
  if allow then put(users, p.allowance_field, allow) end
  if sale.room and held == 0 then redis.call('HINCRBY', K.sale, 'rused', 1) end -- a pass's first use
  if p.mode == 'open' then
    g = {1, sale.group_size, string.format('%d', tonumber(p.now) + sale.group_window * 1000), '0'}
    redis.call('HSET', p.group_key, 'members', g[1], 'size', g[2], 'expires', g[3], 'status', g[4])
  elseif g and redis.call('HINCRBY', p.group_key, 'members', 1) >= tonumber(g[2]) then
    redis.call('HSET', p.group_key, 'status', 1)
  end
  local group, size, expires
  if g then
    list_group(K.open_groups, K.fill_groups, p.group_key, p.group)
    redis.call('HSET', p.seats_key, p.user, p.order .. ' ' .. p.qty)
    group, size, expires = p.group, g[2], g[3]
  end
  put(queued, p.order, queued_value(p, sale.limit_text, sale.cap, group, size, expires))
  put(users, p.queued_field, queued_with(get(users, p.queued_field), p.order))
  since.ids[#since.ids + 1] = p.order
  if not since.at or tonumber(p.now) < tonumber(since.at) then since.at = p.now end
  if p.fingerprint ~= '' then
    redis.call('SET', p.idempotency_key, p.fingerprint .. ' ' .. p.order, 'EX', ARG.key_ttl)
  end
  return reserved(p, left)
end

local function decide(p, allow)
  local refusal = replayed(p) or locked(p) or outside_window(p) or wrong_kind(p)
  if refusal then return refusal end
  local g, held, parts
  refusal, g = seat_refused(p)
  if refusal then return refusal end
  refusal, held, parts = units_refused(p)
  return refusal or take(p, allow, g, held, parts)
end

-- The user's allowance of attempts in this sale (GCRA on Redis' clock: internal/ratelimit
-- describes it) counts the attempt before anything is decided. An order id found queued
-- is this call run again (a cluster client retries a command whose reply was lost): it
-- gets the reply of the run that reserved, not its own lock.
local function reserve(p)
  if shut then return shut end
  if get(queued, p.order) then return reserved(p, sale.avail, true) end
  if p.interval == 0 then return decide(p) end
  local t = clock_us()
  local nxt = math.max(tonumber(get(users, p.allowance_field) or '0'), tonumber(redis.call('GET', p.allowance_key) or '0'),
    t) + p.interval
  local wait = nxt - p.tolerance - t
  if wait > 0 then return {RATE_LIMITED, string.format('%d', wait)} end
  local allow = string.format('%d', nxt)
  local res = decide(p, allow)
  if res[1] ~= RESERVED then -- not reserved: the allowance goes to its own key, gone once full again
    redis.call('SET', p.allowance_key, allow, 'PX', string.format('%d', math.ceil((nxt - t) / 1000)))
  end
  return res
end

-- Writes what the call's reservations so far changed. A purchase that fails with an
-- error (not a reply) has it written for the purchases before it, then fails the call,
-- so those stay whole for their roll-backs to find.
local function taken()
  for _, h in ipairs({users, queued}) do
    if #h.w > 0 then redis.call('HSET', h.key, unpack(h.w)) end
  end
  if #since.ids > 0 then
    -- counts computed in Lua go out with '%d': Redis 7.2.0-7.2.4 writes 900000000 as
    -- "9e+08", which HINCRBY then refuses
    local fields = {'avail', string.format('%d', sale.avail), 'qunits', string.format('%d', sale.qunits)}
    for f in pairs(variants_w) do fields[#fields + 1], fields[#fields + 2] = f, string.format('%d', variants[f]) end
    redis.call('HSET', K.sale, unpack(fields))
    redis.call('ZADD', K.since, since.at, table.concat(since.ids, ' '))
  end
end

local out = {}
for i, p in ipairs(purchases) do
  local ok, res = pcall(reserve, p)
  if not ok then
    taken()
    error(res, 0)
  end
  out[i] = res
end
taken()
out[#out + 1] = {sale.limit or 0, sale.price, sale.pay_window, sale.cap, sale.room and 1 or 0}
return out

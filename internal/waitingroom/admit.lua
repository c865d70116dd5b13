-- Advances a sale's line: it retires expired passes, then admits the next
-- waiting buyers whose slots have come.
--
-- Returns {ADVANCED, admitted now, waiting, passes outstanding and unused, passes used},
-- or NO_SALE.
--
-- Buyers are admitted in place order (the lowest scores of K.wait first); each admitted
-- ticket keeps its place, and the meta hash's through is the highest place admitted.
--
-- Admission slots are spaced by interval = (10 s + tolerance) / (10 x admit - 1) and the
-- next slot is never older than now - tolerance when a run starts: a buyer admitted at
-- t has a slot in [t - tolerance, t], so any 10 s window holds at most
-- (10 s + tolerance) / interval + 1 = 10 x admit admissions, however late or often the
-- runs come. Admission is from the opening of the early window (the start, for a sale
-- without one; before the start only code holders' places, below ARG.lottery) to the
-- end of the sale (by the clock), while
-- units are left, and while the passes outstanding and unused are fewer than
-- max(admit, 2 x units left). A pass is used once its holder has bought (the reserve
-- script counts a pass holder's first purchase: sale_state's passes_used); passes that
-- expire leave the count, those whose holder holds units counted as used (usedexp).

---- begin codes: written by go generate from lineReplies, ticketStatuses and lineStates
local JOINED, TICKET, CHALLENGE, ADVANCED, STATUS, NO_SALE, NO_ROOM, ENDED, SOLD_OUT, NOT_OPEN, CHALLENGE_REQUIRED, SOLUTION_USED, NO_TICKET, CHALLENGE_EXPIRED, PLACE_TAKEN, NOT_STARTED, CODE_INVALID, CODE_TAKEN, TICKET_WAITING, TICKET_ADMITTED, TICKET_EXPIRED, TICKET_SOLD_OUT, LINE_BEFORE, LINE_ADMITTING, LINE_SOLD_OUT, LINE_ENDED = 0, 1, 2, 3, 4, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, 0, 1, 2, 3, 0, 1, 2, 3
---- end codes
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
---- begin sale_state.lua: a copy; edit sale_state.lua, then run go generate
-- The reads of a sale's state that internal/waitingroom's scripts make in the sale's slot, so
-- that only this package knows the fields of its hashes:
--
--   sale_state(sale_key): nil for no sale (or one being archived), else a table of its
--     avail (units left), starts and ends (unix ms), room (true: a waiting room), admit
--     (admissions a second), pass_ttl and prequeue (s), challenge (true: on), cost (the
--     challenge's maxnumber), passes_used (buyers whose first purchase came with a
--     pass) and early (unix ms: when the early window opens to the holders of the sale's
--     access codes; starts for none)
--   holds_any(users_key, user): whether the buyer of key user holds anything in the sale
--     (holdings.lua)
-- needs: holdings.lua
local function sale_state(key)
  local v = redis.call('HMGET', key, 'avail', 'start', 'end', 'room', 'admit', 'pttl', 'preq', 'chal', 'cost', 'rused',
    'archived', 'early')
  if not v[1] or not v[2] or v[11] then return nil end
  local starts = tonumber(v[2])
  return {avail = tonumber(v[1]), starts = starts, ends = tonumber(v[3]), room = v[4] == '1',
    admit = tonumber(v[5] or '0'), pass_ttl = tonumber(v[6] or '300'), prequeue = tonumber(v[7] or '0'),
    challenge = v[8] == '1', cost = tonumber(v[9] or '0'), passes_used = tonumber(v[10] or '0'),
    early = math.min(tonumber(v[12] or starts), starts)}
end
---- end sale_state.lua
---- begin clock.lua: a copy; edit clock.lua, then run go generate
-- clock_ms(arg): the scripts' clock: arg "" reads Redis' own (TIME), the one clock of every
-- API instance and worker; tests pass unix ms instead. A sale's own state is read through
-- internal/stock's sale_state and holds_any (sale_state.lua).
local function clock_ms(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
---- end clock.lua
---- begin head: written by go generate from the script's keys and arguments (scripts.go)
local K = {sale = KEYS[1], meta = KEYS[2], wait = KEYS[3], tickets = KEYS[4], passes = KEYS[5], users = KEYS[6], joined = KEYS[7], waits = KEYS[8]}
local ARG = {clock = ARGV[1], tolerance = ARGV[2], most = ARGV[3], lottery = ARGV[4]}
---- end head

local sale = sale_state(K.sale)
if not sale then return {NO_SALE} end
local now = clock_ms(ARG.clock)
local tolerance = tonumber(ARG.tolerance)
local meta = redis.call('HMGET', K.meta, 'next', 'usedexp')
local usedexp = tonumber(meta[2] or '0')
local gone = redis.call('ZRANGEBYSCORE', K.passes, '-inf', now, 'LIMIT', 0, 5000)
if #gone > 0 then
  local used = 0
  for _, u in ipairs(gone) do
    if holds_any(K.users, u) then used = used + 1 end
  end
  redis.call('ZREMRANGEBYRANK', K.passes, 0, #gone - 1)
  usedexp = usedexp + used
  redis.call('HINCRBY', K.meta, 'usedexp', used)
  redis.call('HINCRBY', K.meta, 'expired', #gone - used)
end
local rused = sale.passes_used
local outstanding = redis.call('ZCARD', K.passes)
local open = outstanding - math.min(outstanding, math.max(0, rused - usedexp))
local rate, avail = sale.admit, sale.avail
local n = 0
if sale.room and rate > 0 and avail > 0 and now >= sale.early and now < sale.ends then
  local interval = (10000 + tolerance) / (10 * rate - 1)
  local slot = math.max(tonumber(meta[1] or '0'), now - tolerance)
  if slot <= now then
    n = math.max(0, math.min(math.floor((now - slot) / interval) + 1, math.max(rate, 2 * avail) - open,
      tonumber(ARG.most)))
  end
  if n > 0 and now < sale.starts then -- the early window: code holders only
    n = math.min(n, redis.call('ZCOUNT', K.wait, '-inf', '(' .. ARG.lottery))
  end
  if n > 0 then
    local popped = redis.call('ZPOPMIN', K.wait, n)
    n = #popped / 2
    if n > 0 then redis.call('HSET', K.meta, 'through', string.format('%d', tonumber(popped[2 * n]))) end
    local before = redis.call('HINCRBY', K.meta, 'admitted', n) - n
    local exp = math.ceil((now + sale.pass_ttl * 1000) / 1000) * 1000
    redis.call('HSETNX', K.meta, 'epoch', string.format('%d', now))
    local since = now - tonumber(redis.call('HGET', K.meta, 'epoch'))
    for i = 1, n do
      local user = popped[2 * i - 1]
      redis.call('HSET', K.tickets, user, string.format('%d %d %d %d', since, before + i, exp - now, tonumber(popped[2 * i])))
      redis.call('ZADD', K.passes, exp, user)
      -- for the funnel: its wait, from the later of its join and the opening of its
      -- admission (the early window's for a code holder's place)
      local opens = sale.starts
      if tonumber(popped[2 * i]) < tonumber(ARG.lottery) then opens = sale.early end
      local joined = redis.call('HGET', K.joined, user)
      if joined then redis.call('HDEL', K.joined, user) end
      redis.call('HINCRBY', K.waits, string.format('%d', now - math.max(tonumber(joined or '0'), opens)), 1)
    end
    redis.call('HSET', K.meta, 'next', string.format('%.3f', slot + n * interval))
  end
end
return {ADVANCED, n, redis.call('ZCARD', K.wait), open + n, rused}

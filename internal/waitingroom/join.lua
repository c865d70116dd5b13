-- Gives a user a place in a sale's line, once.
--
-- Returns answer(JOINED, ...) for a new ticket, answer(TICKET, ...) for the user's
-- ticket (a second join; nothing changes), or NO_SALE, NO_ROOM, ENDED, SOLD_OUT,
-- NOT_OPEN, NOT_STARTED, CODE_INVALID, CODE_TAKEN, CHALLENGE_REQUIRED, SOLUTION_USED,
-- CHALLENGE_EXPIRED, PLACE_TAKEN (the draw is a waiting buyer's place: nothing changed,
-- draw again).
--
-- The sale's state comes before the solution: a user with a ticket gets it back, and a
-- closed line says so, whatever solution came. The line opens prequeue seconds before
-- the early window (before the start, for a sale without one). A join before the start
-- (by the clock) is placed by its draw in the lottery's band: the order of those joiners
-- is a uniform lottery, fixed at join time, so nothing is shuffled at the start. A later
-- join is placed in the arrival band at the count of later joins, behind them all, in
-- arrival order. Before the start an access code counts (the first buyer who presents
-- it owns it: code_refused): its holder's join before the early window is drawn in the
-- early band, below every lottery place, and in the window it goes in the members' band
-- in join order (the line admits code holders by then); in the window nobody joins
-- without one. A place is the buyer's score in K.wait, and stays with its ticket once
-- admitted. For the funnel, a join before the start is counted (meta early), and the
-- instant of a join whose wait counts from it (after the start, or a code holder's in
-- the early window) kept (K.joined) until its admission.

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
---- begin ticket.lua: a copy; edit ticket.lua, then run go generate
-- A buyer's ticket, for the join and read scripts.
--
-- read_ticket(keys, user, now, sale) reads keys.wait, keys.meta, keys.tickets and
-- keys.users (the sale's users hash: units each buyer holds); sale is sale_state's table.
-- It returns nil (no ticket) or {status, position, ahead, admitted ms, pass expiry ms,
-- place}: TICKET_SOLD_OUT is one look at the sale, never a write per ticket, and a
-- waiting buyer's position counts the admitted ones before: everyone admitted was
-- ahead. A waiting buyer's place is its score in keys.wait; an admitted one's is kept
-- with its ticket (0 for a ticket admitted before places were kept).
-- answer(code, t, sale, now) is a script's reply: the code, then ticketValues values.
-- needs: holdings.lua
local function read_ticket(keys, user, now, sale)
  local rank = redis.call('ZRANK', keys.wait, user)
  if rank then
    local status = TICKET_WAITING
    if now >= sale.ends or sale.avail <= 0 then status = TICKET_SOLD_OUT end
    local admitted = tonumber(redis.call('HGET', keys.meta, 'admitted') or '0')
    return {status, admitted + rank + 1, rank, 0, 0, tonumber(redis.call('ZSCORE', keys.wait, user))}
  end
  local v = redis.call('HGET', keys.tickets, user)
  if not v then return nil end
  local at, pos, ttl, place = string.match(v, '^(%d+) (%d+) (%d+) ?(%d*)$')
  at = tonumber(redis.call('HGET', keys.meta, 'epoch')) + tonumber(at)
  local exp = at + tonumber(ttl)
  local status = TICKET_ADMITTED
  if now >= exp and not holds_any(keys.users, user) then status = TICKET_EXPIRED end
  return {status, tonumber(pos), 0, at, exp, tonumber(place) or 0}
end
local function answer(code, t, sale, now)
  return {code, t[1], t[2], t[3], t[4], t[5], t[6], sale.avail, sale.starts, sale.admit, now, sale.early}
end
---- end ticket.lua
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
---- begin head: written by go generate from the script's keys and arguments (scripts.go)
local K = {sale = KEYS[1], meta = KEYS[2], wait = KEYS[3], tickets = KEYS[4], users = KEYS[5], pow = KEYS[6], joined = KEYS[7], codes = KEYS[8], claims = KEYS[9]}
local ARG = {clock = ARGV[1], user = ARGV[2], draw = ARGV[3], lottery = ARGV[4], arrival = ARGV[5], early = ARGV[6], members = ARGV[7], code = ARGV[8], solution = ARGV[9], expires = ARGV[10]}
---- end head

local sale = sale_state(K.sale)
if not sale then return {NO_SALE} end
if not sale.room then return {NO_ROOM} end
local now = clock_ms(ARG.clock)
local t = read_ticket(K, ARG.user, now, sale)
if t then return answer(TICKET, t, sale, now) end
if now >= sale.ends then return {ENDED} end
if sale.avail <= 0 then return {SOLD_OUT} end
if now < sale.early - sale.prequeue * 1000 then return {NOT_OPEN} end
local place, member
if now < sale.starts and ARG.code ~= '' then
  local refused = code_refused(K.codes, K.claims, ARG.code, ARG.user, now)
  if refused == 'invalid' then return {CODE_INVALID} end
  if refused == 'taken' then return {CODE_TAKEN} end
  member = true
end
if now >= sale.early and now < sale.starts and not member then return {NOT_STARTED} end
if now < sale.early then
  place = tonumber(member and ARG.early or ARG.lottery) + tonumber(ARG.draw)
  if redis.call('ZCOUNT', K.wait, place, place) > 0 then return {PLACE_TAKEN} end
elseif now < sale.starts then
  place = 'members'
end
if sale.challenge or ARG.solution == '0' then
  if ARG.solution ~= '1' then return {CHALLENGE_REQUIRED} end
  local expires = tonumber(ARG.expires)
  if now >= expires then return {CHALLENGE_EXPIRED} end
  -- kept until the challenge expires: no instance accepts the solution after that
  if not redis.call('SET', K.pow, '1', 'NX', 'PX', string.format('%d', expires - now)) then
    return {SOLUTION_USED}
  end
end
if place == 'members' then place = tonumber(ARG.members) + redis.call('HINCRBY', K.meta, 'mseq', 1) end
if not place then place = tonumber(ARG.arrival) + redis.call('HINCRBY', K.meta, 'seq', 1) end
redis.call('ZADD', K.wait, string.format('%d', place), ARG.user)
if now < sale.starts then redis.call('HINCRBY', K.meta, 'early', 1) end
if now >= sale.starts or member and now >= sale.early then
  redis.call('HSET', K.joined, ARG.user, now) -- for the funnel: its wait counts from now
end
redis.call('HINCRBY', K.meta, 'joined', 1)
return answer(JOINED, read_ticket(K, ARG.user, now, sale), sale, now)

-- Reads a line's public status: what every waiting buyer reads, the same
-- for all of them.
--
-- Returns {STATUS, state, admitted through, joined, admitted, admissions a second, units
-- left, now (unix ms)}, NO_SALE or NO_ROOM. The state is LINE_ENDED from the sale's
-- end, else LINE_BEFORE before its start, else LINE_SOLD_OUT with no unit left, else
-- LINE_ADMITTING.

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
local K = {sale = KEYS[1], meta = KEYS[2]}
local ARG = {clock = ARGV[1]}
---- end head

local sale = sale_state(K.sale)
if not sale then return {NO_SALE} end
if not sale.room then return {NO_ROOM} end
local now = clock_ms(ARG.clock)
local state = LINE_ADMITTING
if now >= sale.ends then state = LINE_ENDED
elseif now < sale.starts then state = LINE_BEFORE
elseif sale.avail <= 0 then state = LINE_SOLD_OUT end
local m = redis.call('HMGET', K.meta, 'through', 'joined', 'admitted')
return {STATUS, state, tonumber(m[1] or '0'), tonumber(m[2] or '0'), tonumber(m[3] or '0'), sale.admit,
  math.max(sale.avail, 0), now}

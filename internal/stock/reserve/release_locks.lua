-- Releases user locks of one bucket.
--
-- KEYS[1] users: users hash, then KEYS[1 + i] waiters[i]: the waiters list of lock i
-- (lock.WaitersKey of its userLockKey), i = 1, 2, ...
-- ARGV[3i-2] locks[i].user: lock i's buyer key  ARGV[3i-1] locks[i].token: its owner
-- token  ARGV[3i] locks[i].channel: its release channel (lock.ReleaseChannel of its
-- userLockKey)
--
-- A lock is released when its field holds its owner's token, expired or not; a released
-- lock with a waiter listed gets an empty message on its channel, which wakes every
-- waiter (seckill/lock). Nobody waits for most locks: one EXISTS looks at all the
-- waiters lists first. Returns per lock a code of releaseCodes: RELEASED, or NOT_HELD.
--
-- Reserver.ReleaseUserLocks runs it per bucket (userlock.go).

---- begin codes: written by go generate from releaseCodes
local RELEASED, NOT_HELD = 1, -2
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

local users, waiters, locks = KEYS[1], {}, {}
for i = 1, #KEYS - 1 do
  waiters[i] = KEYS[1 + i]
  locks[i] = {user = ARGV[3 * i - 2], token = ARGV[3 * i - 1], channel = ARGV[3 * i]}
end

local fields = {}
for i, l in ipairs(locks) do fields[i] = LOCK .. l.user end
local held = redis.call('HMGET', users, unpack(fields))
local out, gone = {}, {}
for i, l in ipairs(locks) do
  if held[i] and string.match(held[i], '^(%S+)') == l.token then
    out[i], gone[#gone + 1] = RELEASED, fields[i]
  else
    out[i] = NOT_HELD
  end
end
if #gone > 0 then redis.call('HDEL', users, unpack(gone)) end
if redis.call('EXISTS', unpack(waiters)) > 0 then
  for i, l in ipairs(locks) do
    if out[i] == RELEASED and redis.call('EXISTS', waiters[i]) == 1 then redis.call('PUBLISH', l.channel, '') end
  end
end
return out

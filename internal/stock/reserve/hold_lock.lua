-- Takes a user lock without units.
--
-- KEYS[1] users: users hash  ARGV[1] user: buyer key  ARGV[2] token: owner token
-- ARGV[3] ttl: TTL (ms)
-- Returns a code of holdCodes: LOCK_TAKEN, or LOCK_BUSY (held by a live lock).
--
-- Reserver.HoldUserLock runs it (userlock.go).

---- begin codes: written by go generate from holdCodes
local LOCK_TAKEN, LOCK_BUSY = 1, 0
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

local users = KEYS[1]
local user, token, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])

local field = LOCK .. user
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = redis.call('HGET', users, field)
if v and tonumber(string.match(v, ' (%d+)$')) > now then return LOCK_BUSY end
redis.call('HSET', users, field, token .. ' ' .. string.format('%d', now + ttl))
return LOCK_TAKEN

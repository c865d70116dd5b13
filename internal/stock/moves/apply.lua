-- Adds a move's units to its destination bucket, once per move id.
--
-- KEYS[1] sale: the destination's sale hash  KEYS[2] applied: its applied set
-- ARGV[1] id: move id  ARGV[2] units  ARGV[3] stamp: the rebuild stamp of the source
-- when taken  ARGV[4] activity: activity id  ARGV[5] channel: the returned-units channel
-- ARGV[6] retention: MoveRetention in ms  ARGV[7] variant: the variant's index, "" for
-- none
--
-- Returns a code of applyCodes: APPLIED now (and every API process's sold-out flag of
-- the sale is dropped), APPLIED_BEFORE, DESTINATION_GONE (lost or archived),
-- REBUILT_BETWEEN (a rebuild came between take and apply: it counted the units; they
-- are not added). In the last two cases the units are left to the rebuild (or to MySQL,
-- which answers for an archived sale), and the record may go.
--
-- Mover.apply runs it (moves.go): at once, or in the repair pass (FinishMoves).

---- begin codes: written by go generate from applyCodes
local APPLIED, APPLIED_BEFORE, DESTINATION_GONE, REBUILT_BETWEEN = 1, 0, -1, -2
---- end codes
---- begin variants.lua: a copy; edit variants.lua, then run go generate
-- The fields of a sale of variants (variants.go): vfield(field, variant) is field's
-- share of the variant of index variant (a string or number; nil or '' for none: the
-- field itself).
local function vfield(field, variant)
  if variant == nil or variant == '' then return field end
  return field .. ':' .. variant
end
---- end variants.lua

local K = {sale = KEYS[1], applied = KEYS[2]}
local ARG = {id = ARGV[1], units = ARGV[2], stamp = ARGV[3], activity = ARGV[4], channel = ARGV[5],
  retention = tonumber(ARGV[6]), variant = ARGV[7]}

if redis.call('ZSCORE', K.applied, ARG.id) then return APPLIED_BEFORE end
local d = redis.call('HMGET', K.sale, 'total', 'rebuilt', 'archived')
if not d[1] or d[3] then return DESTINATION_GONE end
if (d[2] or '0') ~= ARG.stamp then return REBUILT_BETWEEN end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', K.applied, '-inf', '(' .. (now - ARG.retention))
redis.call('ZADD', K.applied, now, ARG.id)
redis.call('HINCRBY', K.sale, 'avail', ARG.units)
if ARG.variant ~= '' then redis.call('HINCRBY', K.sale, vfield('avail', ARG.variant), ARG.units) end
redis.call('PUBLISH', ARG.channel, ARG.activity)
return APPLIED

-- Takes units out of a bucket (or the reserve) for another bucket, and
-- records the move.
--
-- KEYS[1] sale: the source bucket's sale hash  KEYS[2] moves: its moves hash
-- ARGV[1] field: the field to take from, avail (a bucket's units) or reserve (bucket 0
-- only)  ARGV[2] want: units wanted  ARGV[3] divisor: take at least ceil(held / divisor)
-- ARGV[4] id: move id  ARGV[5] to: the destination bucket  ARGV[6] variant: the
-- variant's index, "" for none: the units are the variant's (its share of the field,
-- which goes down with it)
--
-- Returns {units taken, moves recorded here before this one, the source's rebuild stamp}
-- (units 0: none there), or {a code of takeCodes} (negative): the source is lost, or the
-- sale is closed for a rebuild.
--
-- Mover.take runs it (moves.go), for a refill.

---- begin codes: written by go generate from takeCodes
local SOURCE_LOST, SOURCE_CLOSED = -1, -2
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

local K = {sale = KEYS[1], moves = KEYS[2]}
local ARG = {field = ARGV[1], want = tonumber(ARGV[2]), divisor = tonumber(ARGV[3]), id = ARGV[4], to = ARGV[5],
  variant = ARGV[6]}

local field = vfield(ARG.field, ARG.variant)
local s = redis.call('HMGET', K.sale, 'total', 'closed', field, 'rebuilt', ARG.field)
if not s[1] then return {SOURCE_LOST} end
if s[2] then return {SOURCE_CLOSED} end
local held, pending, stamp = tonumber(s[3] or '0'), redis.call('HLEN', K.moves), s[4] or '0'
local n = math.min(held, math.max(ARG.want, math.ceil(held / ARG.divisor)))
if n <= 0 then return {0, pending, stamp} end
local t = redis.call('TIME')
redis.call('HSET', K.sale, field, string.format('%d', held - n))
if field ~= ARG.field then redis.call('HSET', K.sale, ARG.field, string.format('%d', tonumber(s[5] or '0') - n)) end
local record = ARG.to .. ' ' .. string.format('%d', n) .. ' ' ..
  string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) .. ' ' .. stamp
if ARG.variant ~= '' then record = record .. ' ' .. ARG.variant end
redis.call('HSET', K.moves, ARG.id, record)
return {n, pending, stamp}

-- Revokes an access code of a sale that is not archived: its value gets '-' before it,
-- the owner it had kept for the record (code.lua).
--
-- KEYS[1] sale: the sale's hash  KEYS[2] codes: the sale's codes
-- ARGV[1] code
--
-- Returns 1, or 0 for an archived sale (nothing written).
--
-- Codes.Revoke runs it (codes.go).

local K = {sale = KEYS[1], codes = KEYS[2]}
local ARG = {code = ARGV[1]}

if redis.call('HEXISTS', K.sale, 'archived') == 1 then return 0 end
local v = redis.call('HGET', K.codes, ARG.code) or ''
if string.sub(v, 1, 1) ~= '-' then redis.call('HSET', K.codes, ARG.code, '-' .. v) end
return 1

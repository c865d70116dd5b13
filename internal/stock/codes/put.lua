-- Adds access codes to a sale, each unless the sale has it (free, owned or revoked: code.lua
-- says the values). A sale Redis lost gets them too: its rebuild writes every code back,
-- and adds none twice. Only an archived sale gets none (its keys are going, or gone).
--
-- KEYS[1] sale: the sale's hash  KEYS[2] codes: the sale's codes
-- ARGV the codes
--
-- Returns how many it added.
--
-- Codes.Put runs it (codes.go).

local K = {sale = KEYS[1], codes = KEYS[2]}
local given = ARGV

if redis.call('HEXISTS', K.sale, 'archived') == 1 then return 0 end
local added = 0
for _, code in ipairs(given) do added = added + redis.call('HSETNX', K.codes, code, '') end
return added

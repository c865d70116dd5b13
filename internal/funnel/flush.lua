-- flush adds one API's refusals of a sale, counted since its last flush, to the sale's
-- count of them, unless the sale is lost or being archived (sale_live, from
-- internal/stock): nothing is written to the keys of a sale that is leaving Redis.
--
-- KEYS[1] sale:    the sale's hash (stock.SaleKey)
-- KEYS[2] refused: the sale's refusals by error code (refusedKey)
-- ARGV    code, count, code, count, ...
-- Returns 1 when added, 0 when the sale is not live (the counts are dropped).

---- begin sale_live.lua: a copy; edit sale_live.lua, then run go generate
-- sale_live(sale): whether the sale's hash holds a sale (its total) that is not being
-- archived. Every script that could write to the keys of a sale without queued orders
-- asks it first (the archive: lifecycle's archive.go).
local function sale_live(sale)
  local v = redis.call('HMGET', sale, 'total', 'archived')
  return v[1] ~= false and v[2] == false
end
---- end sale_live.lua

local K = {sale = KEYS[1], refused = KEYS[2]}
local counts = ARGV

if not sale_live(K.sale) then return 0 end
for i = 1, #counts, 2 do
  redis.call('HINCRBY', K.refused, counts[i], counts[i + 1])
end
return 1

-- flush adds one API's refusals of a sale, counted since its last flush, to the sale's
-- count of them, unless the sale is lost or being archived (sale_live, from
-- internal/stock): nothing is written to the keys of a sale that is leaving Redis.
--
-- KEYS[1] sale:    the sale's hash (stock.SaleKey)
-- KEYS[2] refused: the sale's refusals by error code (refusedKey)
-- ARGV    code, count, code, count, ...
-- Returns 1 when added, 0 when the sale is not live (the counts are dropped).
local K = {sale = KEYS[1], refused = KEYS[2]}
if not sale_live(K.sale) then return 0 end
for i = 1, #ARGV, 2 do
  redis.call('HINCRBY', K.refused, ARGV[i], ARGV[i + 1])
end
return 1

-- Checks that orders are still queued on the master it runs on, and
-- writes, so that the WAIT after it on the same connection covers every write the
-- master made before it: the replication stream is ordered, so a replica that has the
-- barrier has the reservations that were answered before it was sent.
--
-- KEYS[1] queued: queued hash  KEYS[2] barrier: barrier counter (a key of the sale, so
-- on its master)  KEYS[3] sale: the sale's hash
-- ARGV[i] ids[i]: order ids
-- Returns the ids that are not queued. A sale that is lost or archived (sale_live) gets
-- no counter: it holds no reservation to wait for, and its keys are not to come back.

---- begin sale_live.lua: a copy; edit sale_live.lua, then run go generate
-- sale_live(sale): whether the sale's hash holds a sale (its total) that is not being
-- archived. Every script that could write to the keys of a sale without queued orders
-- asks it first (the archive: lifecycle's archive.go).
local function sale_live(sale)
  local v = redis.call('HMGET', sale, 'total', 'archived')
  return v[1] ~= false and v[2] == false
end
---- end sale_live.lua

local queued, barrier, sale = KEYS[1], KEYS[2], KEYS[3]
local ids = ARGV

local missing = {}
for _, id in ipairs(ids) do
  if redis.call('HEXISTS', queued, id) == 0 then missing[#missing + 1] = id end
end
if sale_live(sale) then redis.call('INCR', barrier) end
return missing

-- Lists queued orders taken before a time, oldest first.
--
-- KEYS[1] since: queued-since sorted set  KEYS[2] queued: queued hash
-- KEYS[3] claimed: claimed set
-- ARGV[1] before: taken at or before (unix ms)  ARGV[2] limit: most orders to list
--
-- Returns a flat array of order id, its queued value, and 1 when claimed else 0.
--
-- Settler.Stale runs it (settle.go).

local since, queued, claimed = KEYS[1], KEYS[2], KEYS[3]
local before, limit = ARGV[1], ARGV[2]

local ids = redis.call('ZRANGEBYSCORE', since, '-inf', before, 'LIMIT', 0, limit)
local out = {}
for _, id in ipairs(ids) do
  local v = redis.call('HGET', queued, id)
  if v then
    table.insert(out, id)
    table.insert(out, v)
    table.insert(out, redis.call('SISMEMBER', claimed, id))
  else
    redis.call('ZREM', since, id)
  end
end
return out

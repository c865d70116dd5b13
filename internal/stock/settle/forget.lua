-- Starts the retention of returned orders that MySQL now records as
-- returned.
--
-- KEYS[1] returned: returned set
-- ARGV[1] .. ARGV[n-1] ids: order ids  ARGV[n] retention: ReturnedRetention in ms
--
-- Settler.Forget runs it (settle.go).

---- begin trim_returned.lua: a copy; edit trim_returned.lua, then run go generate
-- trim_returned(key, keep_ms): drops from the returned set key what MySQL recorded as
-- returned more than keep_ms ago by Redis' clock, and returns that clock in ms.
local function trim_returned(key, keep_ms)
  local t = redis.call('TIME')
  local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. (now_ms - keep_ms))
  return now_ms
end
---- end trim_returned.lua

local returned, retention, ids = KEYS[1], tonumber(ARGV[#ARGV]), {}
for i = 1, #ARGV - 1 do ids[i] = ARGV[i] end

local now_ms = trim_returned(returned, retention)
for _, id in ipairs(ids) do redis.call('ZADD', returned, 'XX', now_ms, id) end
return 0

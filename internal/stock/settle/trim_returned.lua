-- trim_returned(key, keep_ms): drops from the returned set key what MySQL recorded as
-- returned more than keep_ms ago by Redis' clock, and returns that clock in ms.
local function trim_returned(key, keep_ms)
  local t = redis.call('TIME')
  local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. (now_ms - keep_ms))
  return now_ms
end

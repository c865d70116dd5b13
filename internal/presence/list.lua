-- Drops the instances not seen since a time and returns the others. Registry.List runs it
-- (presence.go).
--
--   KEYS[1] seen: sorted set of instance ids by when last seen (unix ms)
--   KEYS[2] info: hash of instance id -> the instance as JSON
--   ARGV[1] since: an instance seen before this (unix ms) is gone
--
-- Returns the JSON of every live instance.

local seen, info = KEYS[1], KEYS[2]
local since = ARGV[1]

local gone = redis.call('ZRANGEBYSCORE', seen, '-inf', '(' .. since)
for _, id in ipairs(gone) do redis.call('HDEL', info, id) end
if #gone > 0 then redis.call('ZREMRANGEBYSCORE', seen, '-inf', '(' .. since) end
local ids = redis.call('ZRANGE', seen, 0, -1)
if #ids == 0 then return {} end
local out = {}
for i, v in ipairs(redis.call('HMGET', info, unpack(ids))) do
  if v then out[#out + 1] = v end
end
return out

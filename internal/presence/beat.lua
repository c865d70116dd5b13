-- Writes one heartbeat. Registry.Beat runs it (presence.go).
--
--   KEYS[1] seen: sorted set of instance ids by when last seen (unix ms)
--   KEYS[2] info: hash of instance id -> the instance as JSON
--   ARGV[1] id: instance id  ARGV[2] now: unix ms  ARGV[3] instance: the instance as JSON
--
-- Returns 1.

local seen, info = KEYS[1], KEYS[2]
local id, now, instance = ARGV[1], ARGV[2], ARGV[3]

redis.call('ZADD', seen, now, id)
redis.call('HSET', info, id, instance)
return 1

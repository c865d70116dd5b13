-- Claims a period for a job when no later or equal period was claimed. Client.RunOnce
-- runs it (once.go).
--
--   KEYS[1] last period run   ARGV[1] period number   ARGV[2] TTL in milliseconds
--
-- Returns 1 when claimed, 0 when the period or a later one was claimed before.

local last_run, period, ttl = KEYS[1], ARGV[1], ARGV[2]

local last = tonumber(redis.call("GET", last_run) or "-1")
if last >= tonumber(period) then
	return 0
end
redis.call("SET", last_run, period, "PX", ttl)
return 1

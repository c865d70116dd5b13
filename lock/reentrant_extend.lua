-- Sets a new TTL on a reentrant lock if the owner holds it. Lock.Extend and the watchdog
-- of a reentrant lock run it (reentrant.go).
--
--   KEYS[1] lock hash   ARGV[1] owner   ARGV[2] TTL in milliseconds
--
-- Returns 1 when extended, -2 when the owner holds none.

local key, owner, ttl = KEYS[1], ARGV[1], ARGV[2]

if redis.call("HEXISTS", key, owner) == 1 then
	redis.call("PEXPIRE", key, ttl)
	return 1
end
return -2

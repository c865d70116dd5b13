-- Sets a new TTL on the lock if it holds our token. Lock.Extend and the watchdog run it
-- (mutex.go).
--
--   KEYS[1] lock key   ARGV[1] owner token   ARGV[2] TTL in milliseconds
--
-- Returns 1 when extended, -2 when the key does not hold our token.

local key, token, ttl = KEYS[1], ARGV[1], ARGV[2]

if redis.call("GET", key) == token then
	redis.call("PEXPIRE", key, ttl)
	return 1
end
return -2

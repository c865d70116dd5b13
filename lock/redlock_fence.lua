-- Raises one master's fence counter to our fencing token while we hold the lock there.
-- Redlock.Obtain runs it on the masters that granted the lock (redlock.go).
--
--   KEYS[1] lock key        ARGV[1] owner token
--   KEYS[2] fence counter   ARGV[2] fencing token
--
-- Returns 1 when the counter is at least the token now, -2 when the key does not hold
-- our token.

local key, fence, token, number = KEYS[1], KEYS[2], ARGV[1], ARGV[2]

if redis.call("GET", key) ~= token then
	return -2
end
if tonumber(redis.call("GET", fence) or "0") < tonumber(number) then
	redis.call("SET", fence, number)
end
return 1

-- Lists a waiter beside a lock (listing.lua). Client.WaitRelease runs it (client.go).
--
--   KEYS[1] waiters   ARGV[1] waiter id   ARGV[2] listing lifetime in milliseconds
--
-- Returns 1.

---- begin listing.lua: a copy; edit listing.lua, then run go generate
-- The listing of the Clients that wait for a lock (listing.go): a sorted set beside the
-- lock, the waiters key, of Client ids scored by when each listing lapses (ms).
--
--   enlist(key, id, lifetime)  lists id until lifetime ms from now; id "" lists nobody
--   delist(key, id)            removes id
--   pick(key)                  removes and returns the listed id whose listing
--                              lapses first (the longest waiting), or ""
local function now_ms()
	local t = redis.call("TIME")
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function enlist(key, id, lifetime)
	if id == "" then
		return
	end
	redis.call("ZADD", key, now_ms() + tonumber(lifetime), id)
	if redis.call("PTTL", key) < tonumber(lifetime) then
		redis.call("PEXPIRE", key, lifetime)
	end
end
local function delist(key, id)
	if id ~= "" then
		redis.call("ZREM", key, id)
	end
end
local function pick(key)
	if redis.call("EXISTS", key) == 0 then
		return "" -- nobody listed: the common case, kept cheap
	end
	redis.call("ZREMRANGEBYSCORE", key, "-inf", now_ms())
	local id = redis.call("ZRANGE", key, 0, 0)[1]
	if id then
		redis.call("ZREM", key, id)
		return id
	end
	return ""
end
---- end listing.lua

local waiters, id, lifetime = KEYS[1], ARGV[1], ARGV[2]

enlist(waiters, id, lifetime)
return 1

-- Takes a free reentrant lock, or counts one more hold for its owner; lists or delists
-- the waiting Client (listing.lua). Client.ObtainReentrant runs it (reentrant.go).
--
--   KEYS[1] lock hash (owner -> holds)   ARGV[1] owner
--   KEYS[2] fence counter                ARGV[2] TTL in milliseconds
--   KEYS[3] waiters                      ARGV[3] waiting Client id, or ""
--                                        ARGV[4] listing lifetime in milliseconds
--                                        ARGV[5] "1" to stay listed after taking the lock
--
-- Returns the fencing token: a new one for a first hold, the current one for another
-- hold by the same owner; or -1 when another owner holds the lock.

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

local key, fence_key, waiters = KEYS[1], KEYS[2], KEYS[3]
local owner, ttl, id, lifetime, stay = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

local fence
if redis.call("EXISTS", key) == 0 then
	redis.call("HSET", key, owner, 1)
	redis.call("PEXPIRE", key, ttl)
	fence = redis.call("INCR", fence_key)
elseif redis.call("HEXISTS", key, owner) == 1 then
	redis.call("HINCRBY", key, owner, 1)
	if redis.call("PTTL", key) < tonumber(ttl) then
		redis.call("PEXPIRE", key, ttl)
	end
	fence = tonumber(redis.call("GET", fence_key) or "0")
else
	enlist(waiters, id, lifetime)
	return -1
end
if stay == "1" then
	enlist(waiters, id, lifetime)
else
	delist(waiters, id)
end
return fence

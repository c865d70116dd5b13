-- Takes a free lock, or refreshes one that already holds our token (so a retry after a
-- lost reply succeeds), and numbers the acquisition; lists or delists the waiting Client
-- (listing.lua). Client.Obtain runs it (mutex.go).
--
--   KEYS[1] lock key        ARGV[1] owner token
--   KEYS[2] fence counter   ARGV[2] TTL in milliseconds
--   KEYS[3] waiters         ARGV[3] waiting Client id, or ""
--                           ARGV[4] listing lifetime in milliseconds
--                           ARGV[5] "1" to stay listed after taking the lock
--
-- Returns the new fencing token (>= 1), or -1 when another owner holds the key.

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
---- begin taking.lua: a copy; edit taking.lua, then run go generate
-- take(key, token, ttl, waiters, id, lifetime, stay): takes the free lock key for ttl ms
-- with token, or refreshes it when it holds token already; then lists the waiting
-- Client id for lifetime ms beside it (waiters) when stay is "1" (more of its waiters
-- remain) or the lock is busy, and delists it when not. Returns whether the lock is ours.
-- needs: listing.lua
local function take(key, token, ttl, waiters, id, lifetime, stay)
	local taken = redis.call("SET", key, token, "NX", "PX", ttl)
	if not taken and redis.call("GET", key) == token then
		taken = redis.call("PEXPIRE", key, ttl)
	end
	if not taken then
		enlist(waiters, id, lifetime)
		return false
	end
	if stay == "1" then
		enlist(waiters, id, lifetime)
	else
		delist(waiters, id)
	end
	return true
end
---- end taking.lua

local key, fence, waiters = KEYS[1], KEYS[2], KEYS[3]
local token, ttl, id, lifetime, stay = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

if not take(key, token, ttl, waiters, id, lifetime, stay) then
	return -1
end
return redis.call("INCR", fence)

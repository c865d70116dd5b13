-- Releases one lock if it holds our token, and tells a listed waiter (releasing.lua).
-- Lock.Release runs it (mutex.go).
--
--   KEYS[1] lock key   ARGV[1] owner token
--   KEYS[2] waiters    ARGV[2] release channel, or "" to tell nobody
--                      ARGV[3] the releasing Client's id
--
-- Returns 1 when released, -2 when the key does not hold our token.

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
---- begin releasing.lua: a copy; edit releasing.lua, then run go generate
-- release(key, waiters, token, channel, id): deletes the lock key if it holds token and,
-- when a waiter is listed (waiters), publishes on channel "<id> <picked>", naming the
-- Client to try first (id: the releasing Client's). Nobody listed is nobody waiting:
-- the release sends no message (on a Redis Cluster a PUBLISH goes to every node), nor
-- does it with channel "". Returns 1 when released, -2 when key does not hold token.
-- needs: listing.lua
local function release(key, waiters, token, channel, id)
	if redis.call("GET", key) ~= token then
		return -2
	end
	redis.call("DEL", key)
	if channel ~= "" then
		local picked = pick(waiters)
		if picked ~= "" then
			redis.call("PUBLISH", channel, id .. " " .. picked)
		end
	end
	return 1
end
---- end releasing.lua

local key, waiters = KEYS[1], KEYS[2]
local token, channel, id = ARGV[1], ARGV[2], ARGV[3]

return release(key, waiters, token, channel, id)

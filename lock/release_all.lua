-- Releases n locks of one hash slot, each if it holds its token, and tells a listed
-- waiter of each (releasing.lua). Client.ReleaseAll runs it per slot (mutex.go).
--
--   KEYS[2i-1] lock i's key       ARGV[1]    the releasing Client's id
--   KEYS[2i]   lock i's waiters   ARGV[2i]   lock i's owner token
--                                 ARGV[2i+1] lock i's release channel
--
-- Returns an array with, for each lock, 1 when released or -2 when its key does not
-- hold our token.

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

local id, locks = ARGV[1], {}
for i = 1, #KEYS / 2 do locks[i] = {key = KEYS[2*i-1], waiters = KEYS[2*i], token = ARGV[2*i], channel = ARGV[2*i+1]} end

local released = {}
for i, l in ipairs(locks) do
	released[i] = release(l.key, l.waiters, l.token, l.channel, id)
end
return released

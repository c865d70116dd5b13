-- Gives up one hold of a reentrant lock, and after the last one deletes the lock and,
-- when a waiter is listed, tells the waiters, naming the one to try first
-- (listing.lua; as release in releasing.lua). Lock.Release of a reentrant lock runs it
-- (reentrant.go).
--
--   KEYS[1] lock hash   ARGV[1] owner
--   KEYS[2] waiters     ARGV[2] release channel
--                       ARGV[3] the releasing Client's id
--
-- Returns the holds left (0 when the lock is gone), or -2 when the owner holds none.

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

local key, waiters = KEYS[1], KEYS[2]
local owner, channel, id = ARGV[1], ARGV[2], ARGV[3]

if redis.call("HEXISTS", key, owner) == 0 then
	return -2
end
local left = redis.call("HINCRBY", key, owner, -1)
if left > 0 then
	return left
end
redis.call("DEL", key)
local picked = pick(waiters)
if picked ~= "" then
	redis.call("PUBLISH", channel, id .. " " .. picked)
end
return 0

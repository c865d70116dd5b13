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

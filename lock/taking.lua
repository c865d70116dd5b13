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

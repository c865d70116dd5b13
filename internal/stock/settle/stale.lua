-- Lists queued orders taken before a time, oldest first, and drops the members of the
-- queued-since index none of whose orders is queued any more: nothing else removes them
-- (keys.go, QueuedSinceKey).
--
-- KEYS[1] since: queued-since sorted set  KEYS[2] queued: queued hash
-- KEYS[3] claimed: claimed set
-- ARGV[1] before: taken at or before (unix ms, or +inf)  ARGV[2] limit: most orders to
-- list  ARGV[3] skip: members scored at or before before to pass over first (those the
-- calls before this one in the same walk kept)  ARGV[4] walk: most members to look at
--
-- A member is one or more order ids separated by single spaces (a reserve call's
-- reservations, or a single order), scored by the earliest of them. It reads walk
-- members at or before before, oldest first, from the skip-th on, and for each lists its
-- orders still queued, in the member's order, and drops a member with none, until it
-- has listed limit orders. The bound: one call looks at no more than walk members, of at
-- most a reserve call's purchases each (maxCoalesced, 64: reserve's coalesce.go),
-- whatever the index holds, and lists no more than limit orders.
--
-- Returns where the next call starts (the members this one kept, skip included) when it
-- looked at walk members, or -1 when it is done: limit orders listed, or no member left
-- at or before before; then the score of the first member it kept ('' for none), no
-- later than any order queued after it; then a flat array of order id, its queued value,
-- and 1 when claimed else 0.
--
-- Settler.Stale and Settler.Oldest run it (settle.go), again while it answers a count.

local since, queued, claimed = KEYS[1], KEYS[2], KEYS[3]
local before, limit, skip, walk = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local out, listed, kept = {-1, ''}, 0, skip
local members = redis.call('ZRANGEBYSCORE', since, '-inf', before, 'WITHSCORES', 'LIMIT', skip, walk)
for k = 1, #members, 2 do
  local m = members[k]
  local ids = {}
  for id in string.gmatch(m, '%S+') do ids[#ids + 1] = id end
  local values = redis.call('HMGET', queued, unpack(ids))
  local any = false
  for i = 1, #ids do
    if values[i] then
      any = true
      if listed < limit then
        out[#out + 1], out[#out + 2], out[#out + 3] = ids[i], values[i], redis.call('SISMEMBER', claimed, ids[i])
        listed = listed + 1
      end
    end
  end
  if not any then
    redis.call('ZREM', since, m)
  else
    if kept == skip then out[2] = members[k + 1] end
    kept = kept + 1
  end
  if listed >= limit then return out end
end
if #members == 2 * walk then out[1] = kept end
return out

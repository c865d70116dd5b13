-- What a buyer holds in a sale (holdings.go): user is the buyer's key, which is also the
-- field of its units (buyer_fields.lua). get(h, field) and set(h, field, value) are the
-- caller's way to the users hash h: hget and hset go to Redis at once (h is the hash's
-- key; set with a nil value deletes the field), the reserve script passes its own, which
-- read the hash once per call and write it once after.
--
--   holding(h, get, user, counted): the units and participations user holds (0
--     participations when not counted)
--   hold(h, set, user, held, parts, qty, counted): user, who holds held units and parts
--     participations, takes one more order of qty units
--   release(h, user, qty): one order of qty units of user comes back (in Redis at once);
--     true when user holds nothing any more
--   holds_any(key, user): whether user holds anything in the sale (a pass was used)
-- needs: buyer_fields.lua
local function hget(key, f) return redis.call('HGET', key, f) end
local function hset(key, f, v)
  if v then redis.call('HSET', key, f, v) else redis.call('HDEL', key, f) end
end
local function holding(h, get, user, counted)
  local parts = 0
  if counted then parts = tonumber(get(h, PARTS .. user) or '0') end
  return tonumber(get(h, user) or '0'), parts
end
local function hold(h, set, user, held, parts, qty, counted)
  set(h, user, string.format('%d', held + qty))
  if counted then set(h, PARTS .. user, string.format('%d', parts + 1)) end
end
local function release(h, user, qty)
  local held, parts = holding(h, hget, user, true)
  held = held - qty
  if held > 0 then hset(h, user, string.format('%d', held)) else hset(h, user, nil) end
  if parts > 1 then hset(h, PARTS .. user, string.format('%d', parts - 1))
  elseif parts > 0 then hset(h, PARTS .. user, nil) end
  return held <= 0
end
local function holds_any(key, user)
  return holding(key, hget, user, false) > 0
end

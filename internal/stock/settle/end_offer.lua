-- end_offer ends the entry of an offered order that comes back (cancelled, expired,
-- failed, refunded): it reads ended.
--
--   end_offer(entries, user, id): the entry of user, if offered order id, ends
-- needs: entry.lua
local function end_offer(entries, user, id)
  local e = parse_entry(redis.call('HGET', entries, user))
  if e and e.status == 'o' and e.order == id then
    e.status = 'e'
    redis.call('HSET', entries, user, entry_value(e))
  end
end

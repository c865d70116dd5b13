-- offer gives units that came back to the waitlist first (waitlist.go), in the script that
-- gave them back.
--
--   offer(w, variant): w = {sale, users, queued, since, entries, set (the variant's
--     waiting set), now (ms, a string), ids (order ids minted for offers), next (the
--     first unused id), offers (out: id, value, ...)};
--     offers the units of variant (nil: the sale's) left in the sale to the waiting
--     entries in join order while they last: each entry whose quantity fits, and whose
--     buyer's holding stays within the limits with it, gets a queued order of them
--     (marked offered), its status offered with the order's id. An entry that does not
--     fit stays waiting. Nothing happens once the sale has ended, or without an id left.
-- needs: entry.lua, queued.lua, buyer_fields.lua, holdings.lua, user_limit.lua, queued_ids.lua
-- needs: variants.lua, variant_holdings.lua
local function offer(w, variant)
  if redis.call('ZCARD', w.set) == 0 then return end
  local field = vfield('avail', variant)
  local s = redis.call('HMGET', w.sale, 'avail', field, 'limit', 'plimit', 'vlimit', 'kind', 'end')
  if not s[1] or tonumber(w.now) >= tonumber(s[7]) then return end
  local avail, left, limit_text = tonumber(s[1]), tonumber(s[2] or '0'), s[3]
  local limit, cap, vlimit = tonumber(limit_text), tonumber(s[4] or '0'), tonumber(s[5] or '0')
  local count = counted(cap, s[6] == 'group')
  -- Pages of the waiting set by join sequence, each after the last one read: an entry
  -- that does not fit is passed over, however many there are before one that does.
  local after, page = '-inf', {}
  local i = 1
  while left > 0 and w.next <= #w.ids do
    if i > #page then
      page = redis.call('ZRANGEBYSCORE', w.set, after, '+inf', 'WITHSCORES', 'LIMIT', 0, 100)
      if #page == 0 then break end
      after, i = '(' .. page[#page], 1
    end
    local user = page[i]
    i = i + 2
    local e = parse_entry(redis.call('HGET', w.entries, user))
    if not e or e.status ~= 'w' then
      redis.call('ZREM', w.set, user)
    elseif e.qty <= left then
      local held, parts = holding(w.users, hget, user, count)
      local over = user_refused(held, e.qty, limit, parts, cap)
      if not over and variant and vlimit > 0 then over = variant_held(w.users, user, variant) + e.qty > vlimit end
      if not over then
        local id = w.ids[w.next]
        w.next = w.next + 1
        avail, left = avail - e.qty, left - e.qty
        hold(w.users, hset, user, held, parts, e.qty, count)
        if variant and vlimit > 0 then hold_variant(w.users, user, variant, e.qty) end
        local v = queued_value({user = user, qty = string.format('%d', e.qty), now = w.now, variant = variant or '',
          offered = true}, limit_text, cap)
        redis.call('HSET', w.queued, id, v)
        add_queued(w.users, user, id)
        redis.call('ZADD', w.since, w.now, id)
        redis.call('HINCRBY', w.sale, 'qunits', string.format('%d', e.qty))
        e.status, e.order = 'o', id
        redis.call('HSET', w.entries, user, entry_value(e))
        redis.call('ZREM', w.set, user)
        w.offers[#w.offers + 1], w.offers[#w.offers + 2] = id, v
      end
    end
  end
  local fields = {'avail', string.format('%d', avail)}
  if variant then fields[3], fields[4] = field, string.format('%d', left) end
  redis.call('HSET', w.sale, unpack(fields))
end

-- The steps of giving units back, which the settling, the roll-back, the claim, a
-- group's failure and the rebuild share, so each is written once.
--
--   each(cmd, key, list): runs cmd on key with the values of list as arguments, in
--     calls of at most 1000 (Lua's stack bounds unpack).
--   unqueue(sale, users, queued, claimed, ids): ends the queued state of the orders ids
--     (out of the queued hash and their buyers' queued ids fields in the users hash) and
--     returns, by position, each one's buyer key, quantity and variant (nil for none);
--     nil for an id not queued (or seen before in ids). The queued hash and the buyers'
--     fields are read once, and they, the claimed set and the sale's qunits are each
--     written once, for all of them: a command inside a script costs the server more
--     than its own work. The since index keeps the ids: the repair pass drops its
--     members lazily (stale.lua).
--   give_back(sale, users, user, qty, variant): qty units (of variant, nil for none) back
--     to stock, and the order they made out of what the buyer of key user holds
--     (free_buyer)
--   free_buyer(users, user, qty, variant): the order of qty units (of variant, nil for
--     none) out of what the buyer of key user holds (release, holdings.lua;
--     release_variant, variant_holdings.lua); a buyer who holds nothing any more loses
--     the field of their attempts' allowance too, once that allowance is full again (as
--     its key would have expired)
-- needs: queued.lua, buyer_fields.lua, holdings.lua, variant_holdings.lua, queued_ids.lua
local function each(cmd, key, list)
  for i = 1, #list, 1000 do
    redis.call(cmd, key, unpack(list, i, math.min(i + 999, #list)))
  end
end
local function unqueue(sale, users_hash, queued, claimed, ids)
  local users, qtys, variants, gone, seen, units = {}, {}, {}, {}, {}, 0
  local fields, listed = {}, {} -- the queued ids fields of the orders' buyers, each once
  for first = 1, #ids, 1000 do
    local values = redis.call('HMGET', queued, unpack(ids, first, math.min(first + 999, #ids)))
    for j, v in ipairs(values) do
      local i = first + j - 1
      if v and not seen[ids[i]] then
        seen[ids[i]] = true
        local user, qty, _, _, _, _, _, _, variant = parse_queued(v)
        users[i], qtys[i], variants[i] = user, tonumber(qty), variant
        units = units + qtys[i]
        gone[#gone + 1] = ids[i]
        if not listed[user] then listed[user], fields[#fields + 1] = true, QUEUED .. user end
      end
    end
  end
  if #gone > 0 then
    each('HDEL', queued, gone)
    each('SREM', claimed, gone)
    redis.call('HINCRBY', sale, 'qunits', string.format('%d', -units))
    local left, emptied = {}, {}
    for first = 1, #fields, 1000 do
      local values = redis.call('HMGET', users_hash, unpack(fields, first, math.min(first + 999, #fields)))
      for j, v in ipairs(values) do
        local kept = v and queued_without(v, seen)
        if kept then left[#left + 1], left[#left + 2] = fields[first + j - 1], kept
        elseif v then emptied[#emptied + 1] = fields[first + j - 1] end
      end
    end
    if #left > 0 then each('HSET', users_hash, left) end
    if #emptied > 0 then each('HDEL', users_hash, emptied) end
  end
  return users, qtys, variants
end
local function free_buyer(users, user, qty, variant)
  if variant then release_variant(users, user, variant, qty) end
  if release(users, user, qty) then
    local a = redis.call('HGET', users, ALLOWANCE .. user)
    if a then
      local t = redis.call('TIME')
      if tonumber(a) <= tonumber(t[1]) * 1000000 + tonumber(t[2]) then redis.call('HDEL', users, ALLOWANCE .. user) end
    end
  end
end
local function give_back(sale, users, user, qty, variant)
  redis.call('HINCRBY', sale, 'avail', qty)
  if variant then redis.call('HINCRBY', sale, vfield('avail', variant), qty) end
  free_buyer(users, user, qty, variant)
end

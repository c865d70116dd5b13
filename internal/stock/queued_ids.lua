-- The ids of a buyer's queued orders, in the buyer's field QUEUED .. key of the users
-- hash (buyer_fields.lua), separated by single spaces: the scripts that queue an order
-- add its id, the ones that end its queued state take it out (unqueue, units.lua).
--
--   queued_with(ids, id): a queued ids field's value ids (false or nil: no field) with
--     order id added
--   queued_without(ids, gone): the value ids without the ids that are keys of the table
--     gone, nil when none is left
--   add_queued(key, user, id): order id into the queued ids field of user (in Redis at
--     once; the reserve script writes its own in its one HSET)
-- needs: buyer_fields.lua, holdings.lua
local function queued_with(ids, id)
  if ids then return ids .. ' ' .. id end
  return id
end
local function queued_without(ids, gone)
  if gone[ids] then return nil end -- the one id, as most buyers have
  local kept = {}
  for id in string.gmatch(ids, '%S+') do
    if not gone[id] then kept[#kept + 1] = id end
  end
  if #kept > 0 then return table.concat(kept, ' ') end
end
local function add_queued(key, user, id)
  hset(key, QUEUED .. user, queued_with(hget(key, QUEUED .. user), id))
end

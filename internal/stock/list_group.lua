-- list_group(open, fill, group, id): puts group id (its hash: group) in the sale's two
-- sorted sets of open groups (open, by the end of its window; fill, fullest first) when
-- its hash says it is open, and takes it out of both otherwise (complete, failed, or no
-- such group). Every script that changes a group's members or status calls it, so the
-- two sets agree.
local function list_group(open, fill, group, id)
  local g = redis.call('HMGET', group, 'members', 'expires', 'status')
  if g[3] == '0' then
    redis.call('ZADD', open, g[2], id)
    redis.call('ZADD', fill, string.format('%d', tonumber(g[1]) * 1e13 - tonumber(g[2])), id)
  else
    redis.call('ZREM', open, id)
    redis.call('ZREM', fill, id)
  end
end

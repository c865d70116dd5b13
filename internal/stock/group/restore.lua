-- Writes groups a lost sale had, as MySQL records them, each one only if
-- Redis does not have it.
--
-- KEYS[1] open_groups: open groups sorted set  KEYS[2] fill_groups: open groups, fullest
-- first  KEYS[1+2i] and KEYS[2+2i] groups[i].key and .seats_key: group i's hash and seats
-- ARGV, per group i: groups[i].id, .size, .expires (unix ms), .status (GroupStatus), n
-- seats, then n x .seats[j].user (a buyer key), .seats[j].seat ("<order id> <quantity>")
-- Returns how many groups it wrote.
--
-- Groups.Restore runs it (group.go).

---- begin list_group.lua: a copy; edit list_group.lua, then run go generate
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
---- end list_group.lua

local K = {open_groups = KEYS[1], fill_groups = KEYS[2]}
local groups, a = {}, 1
for i = 1, (#KEYS - 2) / 2 do
  local g = {key = KEYS[1 + 2 * i], seats_key = KEYS[2 + 2 * i], id = ARGV[a], size = ARGV[a + 1], expires = ARGV[a + 2],
    status = ARGV[a + 3], seats = {}}
  for j = 1, tonumber(ARGV[a + 4]) do
    g.seats[j] = {user = ARGV[a + 3 + 2 * j], seat = ARGV[a + 4 + 2 * j]}
  end
  a = a + 5 + 2 * #g.seats
  groups[i] = g
end

local written = 0
for _, g in ipairs(groups) do
  if redis.call('EXISTS', g.key) == 0 then
    redis.call('HSET', g.key, 'members', #g.seats, 'size', g.size, 'expires', g.expires, 'status', g.status)
    for _, s in ipairs(g.seats) do redis.call('HSET', g.seats_key, s.user, s.seat) end
    list_group(K.open_groups, K.fill_groups, g.key, g.id)
    written = written + 1
  end
end
return written

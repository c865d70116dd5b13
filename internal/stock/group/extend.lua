-- Gives an open group a later end of its window. The end the group was
-- opened with is kept in the field window.
--
-- KEYS[1] group: group hash  KEYS[2] open_groups: open groups sorted set
-- KEYS[3] fill_groups: open groups, fullest first  KEYS[4] sale: the sale's hash
-- ARGV[1] id: group id  ARGV[2] ends: the new end (unix ms)
--
-- Returns the group's end after the call (unix ms), or NOT_OPEN (extendCodes) when it
-- is not open (or does not exist, or its sale is lost or archived: sale_live).
--
-- Groups.Extend runs it (group.go).

---- begin codes: written by go generate from extendCodes
local NOT_OPEN = -1
---- end codes
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
---- begin sale_live.lua: a copy; edit sale_live.lua, then run go generate
-- sale_live(sale): whether the sale's hash holds a sale (its total) that is not being
-- archived. Every script that could write to the keys of a sale without queued orders
-- asks it first (the archive: lifecycle's archive.go).
local function sale_live(sale)
  local v = redis.call('HMGET', sale, 'total', 'archived')
  return v[1] ~= false and v[2] == false
end
---- end sale_live.lua

local K = {group = KEYS[1], open_groups = KEYS[2], fill_groups = KEYS[3], sale = KEYS[4]}
local ARG = {id = ARGV[1], ends = ARGV[2]}

if not sale_live(K.sale) then return NOT_OPEN end
local g = redis.call('HMGET', K.group, 'expires', 'status')
if not g[1] or g[2] ~= '0' then return NOT_OPEN end
if tonumber(ARG.ends) <= tonumber(g[1]) then return tonumber(g[1]) end
redis.call('HSETNX', K.group, 'window', g[1])
redis.call('HSET', K.group, 'expires', ARG.ends)
list_group(K.open_groups, K.fill_groups, K.group, ARG.id)
return tonumber(ARG.ends)

-- A queued order's value in the queued hash (queued.go says its format; Go's encoder and
-- decoder are there, TestQueuedValueOneFormat holds the two languages to one format).
-- Its fields are strings, as the script's arguments and Redis' values are, so nothing is
-- converted that is not compared (a number turned into a string costs the server more
-- than the whole value).
--
--   queued_value(p, limit, cap, group, size, expires): the value of the order of the
--     reserve script's purchase p (its orderArgs: p.user the buyer's key, p.qty, p.now
--     its creation, p.variant its variant, '' for none; p.early true in the early
--     window), or of units the waitlist offered (p.offered true); cap nil or 0 and group
--     nil for no participations counted and no group
--   parse_queued(v): user (the buyer's key), qty, created, limit, cap, group, size,
--     expires, variant; cap nil when the sale counts no participations, group, size and
--     expires nil outside a group, variant (the index, a string) nil outside a sale of
--     variants. Fields past these are left to Go: no script decides by them.
local function queued_value(p, limit, cap, group, size, expires)
  local v = p.user .. ' ' .. p.qty .. ' ' .. p.now .. ' ' .. limit
  if group then
    v = v .. ' ' .. (cap or 0) .. ' ' .. group .. ' ' .. size .. ' ' .. expires
    if p.early then return v .. ' - e' end
    return v
  end
  if p.offered or p.early then
    local mark = p.offered and ' o' or ' e'
    if p.variant == '' then return v .. ' ' .. (cap or 0) .. ' - 0 0 -' .. mark end
    return v .. ' ' .. (cap or 0) .. ' - 0 0 ' .. p.variant .. mark
  end
  if p.variant ~= '' then return v .. ' ' .. (cap or 0) .. ' - 0 0 ' .. p.variant end
  if cap and tonumber(cap) > 0 then return v .. ' ' .. cap .. ' - 0 0' end
  return v
end
local function parse_queued(v)
  local user, qty, created, limit, tail = string.match(v, '^(%S+) (%d+) (%d+) (%d+)(.*)$')
  local cap, group, size, expires, variant
  if tail ~= '' then
    cap, group, size, expires, variant = string.match(tail, '^ (%d+) (%S+) (%d+) (%d+) ?(%S*)')
    if group == '-' then group, size, expires = nil, nil, nil end
    if variant == '' or variant == '-' then variant = nil end
  end
  return user, qty, created, limit, cap, group, size, expires, variant
end

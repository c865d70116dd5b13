-- Reads a buyer's entry, with its position while waiting.
--
-- KEYS[1] entries: waitlist entries  ARGV[1] user: the buyer's key  ARGV[2] prefix: the
-- waitlist key prefix (the waiting set is it and the entry's variant, or "-")
-- Returns {} for none, else {seq, qty, variant, joined, status, order, position}.
--
-- Settler.WaitlistEntry runs it (waitlist.go).

---- begin entry.lua: a copy; edit entry.lua, then run go generate
-- A waitlist entry (waitlist.go), read and written: "<seq> <qty> <variant or -> <joined ms> <status>
-- <order or ->" with status w (waiting), o (offered) or e (ended):
--
--   parse_entry(v): {seq, qty, variant (nil: none), joined, status, order (nil: none)}
--   entry_value(e): the value of e
local function parse_entry(v)
  if not v then return nil end
  local seq, qty, variant, joined, status, order = string.match(v, '^(%d+) (%d+) (%S+) (%d+) (%a) (%S+)$')
  if not seq then return nil end
  if variant == '-' then variant = nil end
  if order == '-' then order = nil end
  return {seq = seq, qty = tonumber(qty), variant = variant, joined = joined, status = status, order = order}
end
local function entry_value(e)
  return e.seq .. ' ' .. string.format('%d', e.qty) .. ' ' .. (e.variant or '-') .. ' ' .. e.joined .. ' ' .. e.status ..
    ' ' .. (e.order or '-')
end
---- end entry.lua

local entries, user, prefix = KEYS[1], ARGV[1], ARGV[2]

local e = parse_entry(redis.call('HGET', entries, user))
if not e then return {} end
local pos = 0
if e.status == 'w' then pos = (redis.call('ZRANK', prefix .. (e.variant or '-'), user) or -1) + 1 end
return {e.seq, string.format('%d', e.qty), e.variant or '', e.joined, e.status, e.order or '', pos}

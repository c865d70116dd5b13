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

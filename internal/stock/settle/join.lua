-- Puts a buyer on a sale's waitlist, or answers the entry they have.
--
-- KEYS[1] sale: sale hash  KEYS[2] users: users hash  KEYS[3] entries: waitlist entries
-- KEYS[4] set: the waiting set of the variant asked for
-- ARGV[1] user: the buyer's key  ARGV[2] qty: quantity  ARGV[3] variant: the variant's
-- index, "" for none  ARGV[4] now: now (ms)  ARGV[5] prefix: the waitlist key prefix
-- (an entry's waiting set is it and the entry's variant, or "-")  ARGV[6] ticket: "1"
-- when the buyer holds a ticket of the sale's line (its waiting room), else "0"
--
-- Returns {JOINED | ENTRY (the entry there already, as it is: its own variant and
-- position, whatever the variant asked for), seq, qty, variant ("" none), joined,
-- status, order ("" none), position (0 when not waiting)}, or a refusal of
-- joinCodes {code, ...}: NO_SALE (lost or archived), GROUP_SALE, NO_VARIANT (none of
-- the sale's), NOT_ADMITTED (a sale with a waiting room, and no ticket of its line),
-- ENDED, NOT_SOLD_OUT (units are on sale), OVER_LIMIT {held, limit} past
-- the limit, QUANTITY_OVER_LIMIT {limit} a quantity above the limit,
-- OVER_VARIANT_LIMIT {held, limit} past the per-variant limit.
--
-- Settler.JoinWaitlist runs it (waitlist.go).

---- begin codes: written by go generate from joinCodes
local JOINED, ENTRY, NO_SALE, GROUP_SALE, NO_VARIANT, ENDED, NOT_SOLD_OUT, OVER_LIMIT, QUANTITY_OVER_LIMIT, OVER_VARIANT_LIMIT, NOT_ADMITTED = 0, 1, -1, -2, -3, -4, -5, -6, -7, -8, -9
---- end codes
---- begin buyer_fields.lua: a copy; edit buyer_fields.lua, then run go generate
-- The fields of a buyer in a sale's users hash, for the scripts, which have a buyer's
-- key (buyer.ID.Key), never its subject (buyerfields.go is the one home of these names,
-- for Go and for Lua): the units field is the key itself, the others the key after the
-- constants PARTS (participations), LOCK, ALLOWANCE (PARTS .. key: a constant costs the
-- script what a literal does, a function call more), a variant's units
-- VARIANT .. index .. ':' .. key, and the ids of the buyer's queued orders QUEUED .. key
-- (queued_ids.lua).
--
--   counted(cap, group): whether a sale keeps its buyers' orders (participations) beside
--     their units, of a cap (a number, 0: none) and a group (any true value: the sale
--     sells in groups); Go's counted (buyerfields.go) is the same rule
---- begin marks: written by go generate from the marks of buyerfields.go
local PARTS, LOCK, ALLOWANCE, VARIANT, QUEUED = 'p', 'l', 'a', 'v', 'q'
---- end marks
local function counted(cap, group) return cap > 0 or (group and true or false) end
---- end buyer_fields.lua
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
---- begin variants.lua: a copy; edit variants.lua, then run go generate
-- The fields of a sale of variants (variants.go): vfield(field, variant) is field's
-- share of the variant of index variant (a string or number; nil or '' for none: the
-- field itself).
local function vfield(field, variant)
  if variant == nil or variant == '' then return field end
  return field .. ':' .. variant
end
---- end variants.lua

local sale, users, entries, set = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local user, qty, variant, now, prefix, ticket = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5], ARGV[6]

local s = redis.call('HMGET', sale, 'total', 'kind', 'variants', 'end', 'avail', 'limit', 'vlimit', 'archived', 'room')
if not s[1] or s[8] then return {NO_SALE} end
if s[2] == 'group' then return {GROUP_SALE} end
local variants = tonumber(s[3] or '0')
if variant == '' then variant = nil end
if (variants > 0) ~= (variant ~= nil) or (variant and tonumber(variant) >= variants) then return {NO_VARIANT} end
local function answer(code, e)
  local pos = 0
  if e.status == 'w' then pos = (redis.call('ZRANK', prefix .. (e.variant or '-'), user) or -1) + 1 end
  return {code, e.seq, string.format('%d', e.qty), e.variant or '', e.joined, e.status, e.order or '', pos}
end
local e = parse_entry(redis.call('HGET', entries, user))
if e and e.status ~= 'e' then return answer(ENTRY, e) end
if s[9] == '1' and ticket ~= '1' then return {NOT_ADMITTED} end
if tonumber(now) >= tonumber(s[4]) then return {ENDED} end
local left = s[5]
if variant then left = redis.call('HGET', sale, vfield('avail', variant)) end
if tonumber(left or '0') > 0 then return {NOT_SOLD_OUT} end
local limit = tonumber(s[6])
if qty > limit then return {QUANTITY_OVER_LIMIT, limit} end
local held = tonumber(redis.call('HGET', users, user) or '0')
if held + qty > limit then return {OVER_LIMIT, held, limit} end
local vlimit = tonumber(s[7] or '0')
if variant and vlimit > 0 then
  local vheld = tonumber(redis.call('HGET', users, VARIANT .. variant .. ':' .. user) or '0')
  if vheld + qty > vlimit then return {OVER_VARIANT_LIMIT, vheld, vlimit} end
end
local seq = redis.call('HINCRBY', sale, 'wlseq', 1)
e = {seq = string.format('%d', seq), qty = qty, variant = variant, joined = now, status = 'w'}
redis.call('HSET', entries, user, entry_value(e))
redis.call('ZADD', set, seq, user)
return answer(JOINED, e)

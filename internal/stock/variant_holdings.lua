-- What a buyer holds of a variant (the users hash's field VARIANT .. index .. ':' .. key,
-- kept only where the sale sets a per-variant limit; variants.go):
--
--   variant_held(users, user, variant): user's units of variant
--   hold_variant(users, user, variant, qty): they go up by qty, where the field is kept
--     (vlimit > 0, read by the caller)
--   release_variant(users, user, variant, qty): they go down by qty, the field dropped
--     at 0; nothing where the buyer has no such field
-- needs: variants.lua, buyer_fields.lua
local function variant_held(users, user, variant)
  return tonumber(redis.call('HGET', users, VARIANT .. variant .. ':' .. user) or '0')
end
local function hold_variant(users, user, variant, qty)
  redis.call('HINCRBY', users, VARIANT .. variant .. ':' .. user, qty)
end
local function release_variant(users, user, variant, qty)
  local f = VARIANT .. variant .. ':' .. user
  local held = tonumber(redis.call('HGET', users, f) or '0') - qty
  if held > 0 then redis.call('HSET', users, f, string.format('%d', held)) else redis.call('HDEL', users, f) end
end

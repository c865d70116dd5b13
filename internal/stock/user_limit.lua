-- The per-user rule, which the reserve, the adopt and the giving-back scripts apply
-- alike (holdings.go), answering with the reserve script's codes (replies.lua).
--
--   quantity_refused(qty, limit): the refusal of a quantity the limit alone refuses
--     (whatever the buyer holds), or nil; Go's quantityOverLimit is the same rule
--   user_refused(held, qty, limit, parts, cap): the refusal of one more order of qty
--     units to a user who holds held units and parts participations, under the per-user
--     limit and the cap on participations (0: none), or nil
-- needs: replies.lua
local function quantity_refused(qty, limit)
  if qty > limit then return {QUANTITY_OVER_LIMIT, limit} end
end
local function user_refused(held, qty, limit, parts, cap)
  if held + qty > limit then return {OVER_LIMIT, held, limit} end
  if cap > 0 and parts >= cap then return {OVER_CAP, parts, cap} end
end

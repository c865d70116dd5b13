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

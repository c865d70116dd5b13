-- The reserve script's reply codes (replies.go: reserveReplies, which gives each its
-- meaning and a refusal its error), which the scripts that apply the per-user rule
-- answer with too (user_limit.lua).
---- begin codes: written by go generate from reserveReplies (replies.go)
local RESERVED, REPLAYED, NO_SALE, BUSY, NOT_STARTED, ENDED, SOLD_OUT, OVER_LIMIT, KEY_REUSED, QUANTITY_OVER_LIMIT, GROUP_SALE, NOT_GROUP_SALE, NO_GROUP, GROUP_CLOSED, ALREADY_IN_GROUP, GROUP_FULL, OVER_CAP, RATE_LIMITED, NOT_ADMITTED, WRONG_BUCKETS, CLOSED, NO_VARIANT, OVER_VARIANT_LIMIT, RESERVED_EARLY, CODE_INVALID, CODE_TAKEN = 0, 1, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14, -15, -16, -17, -18, -19, -20, -21, 2, -22, -23
---- end codes

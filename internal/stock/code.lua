-- A sale's access codes (early access), for the scripts a buyer presents a code to: the
-- reserve script of a purchase before the start, and the waiting room's join. The codes
-- hash (keys.go's CodesKey) maps a code to '' (free), '<buyer key> <unix ms>' (owned by
-- that buyer since), or either after '-' (revoked); internal/stock/codes writes and
-- reads the rest of it.
--
--   code_refused(codes, claims, code, user, now): nil when the buyer of key user may use
--     the code: it was free, and is theirs from now (added to claims, the uses not yet
--     recorded in MySQL), or it is theirs already; else 'invalid' (no such code, or
--     revoked) or 'taken' (another buyer's). now is unix ms.
local function code_refused(codes, claims, code, user, now)
  local v = redis.call('HGET', codes, code)
  if not v or string.sub(v, 1, 1) == '-' then return 'invalid' end
  if v == '' then
    local at = string.format('%d', now)
    redis.call('HSET', codes, code, user .. ' ' .. at)
    redis.call('ZADD', claims, at, code)
    return nil
  end
  if string.match(v, '^(%S+)') ~= user then return 'taken' end
  return nil
end

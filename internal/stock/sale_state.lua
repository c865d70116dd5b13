-- The reads of a sale's state that internal/waitingroom's scripts make in the sale's slot, so
-- that only this package knows the fields of its hashes:
--
--   sale_state(sale_key): nil for no sale (or one being archived), else a table of its
--     avail (units left), starts and ends (unix ms), room (true: a waiting room), admit
--     (admissions a second), pass_ttl and prequeue (s), challenge (true: on), cost (the
--     challenge's maxnumber), passes_used (buyers whose first purchase came with a
--     pass) and early (unix ms: when the early window opens to the holders of the sale's
--     access codes; starts for none)
--   holds_any(users_key, user): whether the buyer of key user holds anything in the sale
--     (holdings.lua)
-- needs: holdings.lua
local function sale_state(key)
  local v = redis.call('HMGET', key, 'avail', 'start', 'end', 'room', 'admit', 'pttl', 'preq', 'chal', 'cost', 'rused',
    'archived', 'early')
  if not v[1] or not v[2] or v[11] then return nil end
  local starts = tonumber(v[2])
  return {avail = tonumber(v[1]), starts = starts, ends = tonumber(v[3]), room = v[4] == '1',
    admit = tonumber(v[5] or '0'), pass_ttl = tonumber(v[6] or '300'), prequeue = tonumber(v[7] or '0'),
    challenge = v[8] == '1', cost = tonumber(v[9] or '0'), passes_used = tonumber(v[10] or '0'),
    early = math.min(tonumber(v[12] or starts), starts)}
end

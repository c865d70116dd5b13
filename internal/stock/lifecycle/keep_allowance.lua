-- Writes allowances read from a users hash to their keys, each only
-- where it is later than the key's and still in force, expiring when it is full again.
-- KEYS[i] keys[i]: the allowance key (rateKey) of the i-th buyer
-- ARGV[1] now: Redis' clock (µs)  ARGV[1+i] allowances[i]: the i-th buyer's allowance (µs)
--
-- Sales.Rebuild runs it (rebuild.go: keepAllowances).

local keys, now, allowances = KEYS, tonumber(ARGV[1]), {}
for i = 1, #keys do allowances[i] = ARGV[1 + i] end

for i, key in ipairs(keys) do
  local next = tonumber(allowances[i])
  if next and next > now and next > tonumber(redis.call('GET', key) or '0') then
    redis.call('SET', key, allowances[i], 'PX', string.format('%d', math.ceil((next - now) / 1000)))
  end
end
return 0

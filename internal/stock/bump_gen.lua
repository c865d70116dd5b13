-- bump_gen(sale): the step the scripts that move orders share (generations: see
-- lifecycle's rebuild.go): the sale's generation goes up by one, if the sale exists (a
-- lost sale stays missing, to be rebuilt). Returns the new generation, 0 for a missing
-- sale. A sale exists when its hash has total: a script that adds to a lost sale's
-- counts (avail, qunits) leaves a partial hash.
local function bump_gen(sale)
  if redis.call('HEXISTS', sale, 'total') == 0 then return 0 end
  return redis.call('HINCRBY', sale, 'gen', 1)
end

-- sale_live(sale): whether the sale's hash holds a sale (its total) that is not being
-- archived. Every script that could write to the keys of a sale without queued orders
-- asks it first (the archive: lifecycle's archive.go).
local function sale_live(sale)
  local v = redis.call('HMGET', sale, 'total', 'archived')
  return v[1] ~= false and v[2] == false
end

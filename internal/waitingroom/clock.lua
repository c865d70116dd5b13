-- clock_ms(arg): the scripts' clock: arg "" reads Redis' own (TIME), the one clock of every
-- API instance and worker; tests pass unix ms instead. A sale's own state is read through
-- internal/stock's sale_state and holds_any (sale_state.lua).
local function clock_ms(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A buyer's ticket, for the join and read scripts.
--
-- read_ticket(keys, user, now, sale) reads keys.wait, keys.meta, keys.tickets and
-- keys.users (the sale's users hash: units each buyer holds); sale is sale_state's table.
-- It returns nil (no ticket) or {status, position, ahead, admitted ms, pass expiry ms,
-- place}: TICKET_SOLD_OUT is one look at the sale, never a write per ticket, and a
-- waiting buyer's position counts the admitted ones before: everyone admitted was
-- ahead. A waiting buyer's place is its score in keys.wait; an admitted one's is kept
-- with its ticket (0 for a ticket admitted before places were kept).
-- answer(code, t, sale, now) is a script's reply: the code, then ticketValues values.
-- needs: holdings.lua
local function read_ticket(keys, user, now, sale)
  local rank = redis.call('ZRANK', keys.wait, user)
  if rank then
    local status = TICKET_WAITING
    if now >= sale.ends or sale.avail <= 0 then status = TICKET_SOLD_OUT end
    local admitted = tonumber(redis.call('HGET', keys.meta, 'admitted') or '0')
    return {status, admitted + rank + 1, rank, 0, 0, tonumber(redis.call('ZSCORE', keys.wait, user))}
  end
  local v = redis.call('HGET', keys.tickets, user)
  if not v then return nil end
  local at, pos, ttl, place = string.match(v, '^(%d+) (%d+) (%d+) ?(%d*)$')
  at = tonumber(redis.call('HGET', keys.meta, 'epoch')) + tonumber(at)
  local exp = at + tonumber(ttl)
  local status = TICKET_ADMITTED
  if now >= exp and not holds_any(keys.users, user) then status = TICKET_EXPIRED end
  return {status, tonumber(pos), 0, at, exp, tonumber(place) or 0}
end
local function answer(code, t, sale, now)
  return {code, t[1], t[2], t[3], t[4], t[5], t[6], sale.avail, sale.starts, sale.admit, now, sale.early}
end

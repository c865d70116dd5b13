package line

import (
	"github.com/redis/go-redis/v9"

	"seckill/internal/stock"
)

// Every script of the line takes its clock from ARGV[1]: "" reads Redis' own (TIME),
// the one clock of every API instance and worker; tests pass unix ms instead. The
// sale's own state is read through internal/stock's sale_state and holds_any.
const clockLua = stock.SaleStateLua + `
local function clock_ms(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

// ticketLua reads a buyer's ticket, for the join and read scripts, whose KEYS are
// KEYS[1] sale hash  KEYS[2] meta hash  KEYS[3] waiting sorted set  KEYS[4] tickets hash
// KEYS[5] the sale's users hash (units each buyer holds)
// and whose sale is sale_state's table.
//
// read_ticket returns nil (no ticket) or {status, position, ahead, admitted ms, pass
// expiry ms}, status 0 waiting, 1 admitted, 2 expired (admitted, the pass unused past
// its expiry), 3 sold out (waiting in a line that closed: no unit left, or the sale
// ended; one look at the sale, never a write per ticket). A waiting buyer's position
// counts the admitted ones before: everyone admitted was ahead in the line.
// answer is a script's reply: {code, the ticket's five, avail, start, admit, now}.
const ticketLua = clockLua + `
local function read_ticket(user, now, sale)
  local rank = redis.call('ZRANK', KEYS[3], user)
  if rank then
    local status = 0
    if now >= sale.ends or sale.avail <= 0 then status = 3 end
    local admitted = tonumber(redis.call('HGET', KEYS[2], 'admitted') or '0')
    return {status, admitted + rank + 1, rank, 0, 0}
  end
  local v = redis.call('HGET', KEYS[4], user)
  if not v then return nil end
  local at, pos, ttl = string.match(v, '^(%d+) (%d+) (%d+)$')
  at = tonumber(redis.call('HGET', KEYS[2], 'epoch')) + tonumber(at)
  local exp = at + tonumber(ttl)
  local status = 1
  if now >= tonumber(exp) and not holds_any(KEYS[5], user) then status = 2 end
  return {status, tonumber(pos), 0, at, exp}
end
local function answer(code, t, sale, now)
  return {code, t[1], t[2], t[3], t[4], t[5], sale.avail, sale.starts, sale.admit, now}
end
`

// challengeScript reads what a sale's challenge needs.
//
// KEYS[1] sale hash
// ARGV[1] clock ("" Redis')
//
// Returns {cost, now (unix ms)}, {-1} no such sale, or {-2} the sale has no waiting room.
var challengeScript = redis.NewScript(clockLua + `
local sale = sale_state(KEYS[1])
if not sale then return {-1} end
if not sale.room then return {-2} end
return {sale.cost, clock_ms(ARGV[1])}
`)

// joinScript gives a user a place in a sale's line, once.
//
// KEYS[1..5] as ticketLua  KEYS[6] the solution's proof-of-work key (any key of the
// slot when none)
// ARGV[1] clock ("" Redis')  ARGV[2] buyer key  ARGV[3] the lottery's draw for this buyer
// (an integer below 2^48)  ARGV[4] "1" when a right solution of ours came with the join,
// "0" when one came that is not (refused even where no challenge is needed), "" for
// none  ARGV[5] the solution's challenge's expiry (unix ms; judged here, by the clock)
//
// Returns answer(0, ...) for a new ticket, answer(1, ...) for the user's ticket (a
// second join; nothing changes), or
//
//	{-1} no such sale   {-2} the sale has no waiting room   {-3} the sale has ended
//	{-4} sold out       {-5} before the line opens (prequeue before the start)
//	{-6} the challenge is on and no solution came, or one that is not valid
//	{-7} the solution was used before  {-9} the solution's challenge has expired
//
// The sale's state comes before the solution: a user with a ticket gets it back, and a
// closed line says so, whatever solution came.
// A join before the start (by Redis' clock) is placed by its draw: the order of those
// joiners is a uniform lottery, fixed at join time, so nothing is shuffled at the
// start. A later join is placed at 2^48 plus the count of later joins, behind them all,
// in arrival order.
var joinScript = redis.NewScript(ticketLua + `
local sale = sale_state(KEYS[1])
if not sale then return {-1} end
if not sale.room then return {-2} end
local now = clock_ms(ARGV[1])
local t = read_ticket(ARGV[2], now, sale)
if t then return answer(1, t, sale, now) end
if now >= sale.ends then return {-3} end
if sale.avail <= 0 then return {-4} end
if now < sale.starts - sale.prequeue * 1000 then return {-5} end
if sale.challenge or ARGV[4] == '0' then
  if ARGV[4] ~= '1' then return {-6} end
  local expires = tonumber(ARGV[5])
  if now >= expires then return {-9} end
  -- kept until the challenge expires: no instance accepts the solution after that
  if not redis.call('SET', KEYS[6], '1', 'NX', 'PX', string.format('%d', expires - now)) then return {-7} end
end
local score = ARGV[3]
if now >= sale.starts then
  score = string.format('%d', 2^48 + redis.call('HINCRBY', KEYS[2], 'seq', 1))
end
redis.call('ZADD', KEYS[3], score, ARGV[2])
redis.call('HINCRBY', KEYS[2], 'joined', 1)
return answer(0, read_ticket(ARGV[2], now, sale), sale, now)
`)

// readScript reads a user's ticket.
//
// KEYS[1..5] as ticketLua
// ARGV[1] clock ("" Redis')  ARGV[2] buyer key
//
// Returns answer(1, ...), {-1} no such sale, or {-8} the user never joined.
var readScript = redis.NewScript(ticketLua + `
local sale = sale_state(KEYS[1])
if not sale then return {-1} end
local now = clock_ms(ARGV[1])
local t = read_ticket(ARGV[2], now, sale)
if not t then return {-8} end
return answer(1, t, sale, now)
`)

// admitScript advances a sale's line: it retires expired passes, then admits the next
// waiting buyers whose slots have come.
//
// KEYS[1] sale hash  KEYS[2] meta hash  KEYS[3] waiting sorted set  KEYS[4] tickets hash
// KEYS[5] passes sorted set  KEYS[6] the sale's users hash
// ARGV[1] clock ("" Redis')  ARGV[2] tolerance (ms)  ARGV[3] most admissions in this run
//
// Returns {-1} for no such sale, else {admitted now, waiting, passes outstanding and
// unused, passes used}.
//
// Admission slots are spaced by interval = (10 s + tolerance) / (10 x admit - 1) and the
// next slot is never older than now - tolerance when a run starts: a buyer admitted at
// t has a slot in [t - tolerance, t], so any 10 s window holds at most
// (10 s + tolerance) / interval + 1 = 10 x admit admissions, however late or often the
// runs come. Admission is from the start to the end of the sale (Redis' clock), while
// units are left, and while the passes outstanding and unused are fewer than
// max(admit, 2 x units left). A pass is used once its holder has bought (the reserve
// script counts a pass holder's first purchase: sale_state's passes_used); passes that
// expire leave the count, those whose holder holds units counted as used (usedexp).
var admitScript = redis.NewScript(clockLua + `
local sale = sale_state(KEYS[1])
if not sale then return {-1} end
local now = clock_ms(ARGV[1])
local tolerance = tonumber(ARGV[2])
local meta = redis.call('HMGET', KEYS[2], 'next', 'usedexp')
local usedexp = tonumber(meta[2] or '0')
local gone = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'LIMIT', 0, 5000)
if #gone > 0 then
  local used = 0
  for _, u in ipairs(gone) do
    if holds_any(KEYS[6], u) then used = used + 1 end
  end
  redis.call('ZREMRANGEBYRANK', KEYS[5], 0, #gone - 1)
  usedexp = usedexp + used
  redis.call('HINCRBY', KEYS[2], 'usedexp', used)
  redis.call('HINCRBY', KEYS[2], 'expired', #gone - used)
end
local rused = sale.passes_used
local outstanding = redis.call('ZCARD', KEYS[5])
local open = outstanding - math.min(outstanding, math.max(0, rused - usedexp))
local rate, avail = sale.admit, sale.avail
local n = 0
if sale.room and rate > 0 and avail > 0 and now >= sale.starts and now < sale.ends then
  local interval = (10000 + tolerance) / (10 * rate - 1)
  local slot = math.max(tonumber(meta[1] or '0'), now - tolerance)
  if slot <= now then
    n = math.max(0, math.min(math.floor((now - slot) / interval) + 1, math.max(rate, 2 * avail) - open,
      tonumber(ARGV[3])))
  end
  if n > 0 then
    local popped = redis.call('ZPOPMIN', KEYS[3], n)
    n = #popped / 2
    local before = redis.call('HINCRBY', KEYS[2], 'admitted', n) - n
    local exp = math.ceil((now + sale.pass_ttl * 1000) / 1000) * 1000
    redis.call('HSETNX', KEYS[2], 'epoch', string.format('%d', now))
    local since = now - tonumber(redis.call('HGET', KEYS[2], 'epoch'))
    for i = 1, n do
      local user = popped[2 * i - 1]
      redis.call('HSET', KEYS[4], user, string.format('%d %d %d', since, before + i, exp - now))
      redis.call('ZADD', KEYS[5], exp, user)
    end
    redis.call('HSET', KEYS[2], 'next', string.format('%.3f', slot + n * interval))
  end
end
return {n, redis.call('ZCARD', KEYS[3]), open + n, rused}
`)

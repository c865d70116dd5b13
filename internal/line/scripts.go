package line

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"seckill/internal/stock"
)

// The line's scripts answer with a code, then the values the code says. lineReplies
// names each code for the scripts (their Lua constants are written from it, repliesLua)
// and gives a refusal's error; decode turns a reply into its values or that error.
const (
	replyJoined            = 0   // a new ticket: the ticket's answer (ticketValues)
	replyTicket            = 1   // the user's ticket: the ticket's answer
	replyChallenge         = 2   // the challenge's cost, and now (unix ms)
	replyAdvanced          = 3   // admitted now, waiting, passes outstanding and unused, passes used
	replyStatus            = 4   // the line's public status (statusValues)
	replyNoSale            = -1  // no such sale
	replyNoRoom            = -2  // the sale has no waiting room
	replyEnded             = -3  // the sale has ended
	replySoldOut           = -4  // no unit left
	replyNotOpen           = -5  // before the line opens (the prequeue before the start)
	replyChallengeRequired = -6  // the challenge is on and no solution came, or one that is not valid
	replySolutionUsed      = -7  // the solution joined the line before
	replyNoTicket          = -8  // the user never joined
	replyChallengeExpired  = -9  // the solution's challenge has expired
	replyPlaceTaken        = -10 // the lottery's draw is another ticket's place: draw again
	replyNotStarted        = -11 // the early window, and no access code came: only code holders join in it
	replyCodeInvalid       = -12 // the access code is not the sale's, or revoked
	replyCodeTaken         = -13 // the access code is another buyer's
)

// ticketValues is how many values follow the code of a ticket's answer: status,
// position, ahead, admitted (unix ms), pass expiry (unix ms), place, units left, the
// sale's start (unix ms), its admissions a second, now (unix ms), the opening of its
// early window (unix ms).
const ticketValues = 11

// statusValues is how many values follow the code of a status: the state (lineStates'
// index), admitted through (the highest place admitted), joined, admitted, admissions a
// second, units left, now (unix ms).
const statusValues = 7

// lineReply is one of the scripts' reply codes: its Lua constant's name, how many values
// follow the code, and for a refusal its error (nil: an answer made of the values).
type lineReply struct {
	code   int64
	lua    string
	values int
	err    error
}

// Errors of the refusals that say more than their sentinel.
var (
	errSolutionUsed     = fmt.Errorf("%w: this solution joined the line before", ErrChallengeFailed)
	errChallengeExpired = fmt.Errorf("%w: the challenge has expired", ErrChallengeFailed)
	errUnexpectedReply  = errors.New("unexpected script reply")
	errPlaceTaken       = errors.New("the lottery's draw is another ticket's place")
)

// lineReplies are all the reply codes of the line's scripts.
var lineReplies = []lineReply{
	{replyJoined, "JOINED", ticketValues, nil},
	{replyTicket, "TICKET", ticketValues, nil},
	{replyChallenge, "CHALLENGE", 2, nil},
	{replyAdvanced, "ADVANCED", 4, nil},
	{replyStatus, "STATUS", statusValues, nil},
	{replyNoSale, "NO_SALE", 0, ErrNoSale},
	{replyNoRoom, "NO_ROOM", 0, ErrNoWaitingRoom},
	{replyEnded, "ENDED", 0, stock.ErrEnded},
	{replySoldOut, "SOLD_OUT", 0, stock.ErrSoldOut},
	{replyNotOpen, "NOT_OPEN", 0, ErrNotOpen},
	{replyChallengeRequired, "CHALLENGE_REQUIRED", 0, ErrChallengeRequired},
	{replySolutionUsed, "SOLUTION_USED", 0, errSolutionUsed},
	{replyNoTicket, "NO_TICKET", 0, ErrNoTicket},
	{replyChallengeExpired, "CHALLENGE_EXPIRED", 0, errChallengeExpired},
	{replyPlaceTaken, "PLACE_TAKEN", 0, errPlaceTaken},
	{replyNotStarted, "NOT_STARTED", 0, stock.ErrNotStarted},
	{replyCodeInvalid, "CODE_INVALID", 0, stock.ErrCodeInvalid},
	{replyCodeTaken, "CODE_TAKEN", 0, stock.ErrCodeTaken},
}

// ticketStatuses are a ticket's statuses as the scripts number them (the index) and
// name them in Lua.
var ticketStatuses = []struct{ status, lua string }{
	{Waiting, "TICKET_WAITING"},
	{Admitted, "TICKET_ADMITTED"},
	{Expired, "TICKET_EXPIRED"},  // admitted, the pass unused past its expiry
	{SoldOut, "TICKET_SOLD_OUT"}, // waiting in a line that closed: no unit left, or the sale ended
}

// lineStates are a line's public states as the status script numbers them (the
// index) and names them in Lua.
var lineStates = []struct{ state, lua string }{
	{StateBefore, "LINE_BEFORE"},
	{StateAdmitting, "LINE_ADMITTING"},
	{StateSoldOut, "LINE_SOLD_OUT"},
	{StateEnded, "LINE_ENDED"},
}

// repliesLua defines the reply codes, the ticket statuses and the line's states as Lua
// constants.
func repliesLua() string {
	var names, values []string
	for _, r := range lineReplies {
		names, values = append(names, r.lua), append(values, strconv.FormatInt(r.code, 10))
	}
	for i, s := range ticketStatuses {
		names, values = append(names, s.lua), append(values, strconv.Itoa(i))
	}
	for i, s := range lineStates {
		names, values = append(names, s.lua), append(values, strconv.Itoa(i))
	}
	return "\nlocal " + strings.Join(names, ", ") + " = " + strings.Join(values, ", ") + "\n"
}

// decode turns a script's reply into the values after its code, when the code is one of
// want; a refusal's code into its error; anything else (an unknown code, another code, a
// count of values not the code's) into an error that is none of the line's.
func decode(res []int64, want ...int64) (code int64, values []int64, err error) {
	if len(res) == 0 {
		return 0, nil, fmt.Errorf("%w: none", errUnexpectedReply)
	}
	i := slices.IndexFunc(lineReplies, func(r lineReply) bool { return r.code == res[0] })
	if i < 0 || len(res)-1 != lineReplies[i].values || lineReplies[i].err == nil && !slices.Contains(want, res[0]) {
		return 0, nil, fmt.Errorf("%w %v", errUnexpectedReply, res)
	}
	if lineReplies[i].err != nil {
		return res[0], nil, lineReplies[i].err
	}
	return res[0], res[1:], nil
}

// lineScript is one of the line's scripts with its KEYS and ARGV named, once, here: the
// script's first lines unpack them as K.<name> and ARG.<name>, and its body never reads
// KEYS or ARGV by position. The shared fragments before those lines see neither: they
// take what they read as arguments.
type lineScript struct {
	keys, args []string
	body       string // the script's own lines, after the unpacking
	script     *redis.Script
}

func newScript(keys, args []string, shared, body string) *lineScript {
	var b strings.Builder
	b.WriteString(repliesLua())
	b.WriteString(shared)
	fmt.Fprintf(&b, "\nlocal K = {%s}\nlocal ARG = {%s}\n", named(keys, "KEYS"), named(args, "ARGV"))
	b.WriteString(body)
	return &lineScript{keys: keys, args: args, body: body, script: redis.NewScript(b.String())}
}

// named is the fields of a Lua table of names, each the element of list at its place.
func named(names []string, list string) string {
	fields := make([]string, len(names))
	for i, n := range names {
		fields[i] = fmt.Sprintf("%s = %s[%d]", n, list, i+1)
	}
	return strings.Join(fields, ", ")
}

// run runs the script with its keys, found by name in keys (which may hold more: a
// sale's line keys), and its arguments, all of them and no other, by name in args.
func (s *lineScript) run(ctx context.Context, rdb redis.Scripter, keys map[string]string, args map[string]any) ([]int64, error) {
	if len(args) != len(s.args) {
		return nil, fmt.Errorf("line script: arguments %v, want %v", mapKeys(args), s.args)
	}
	k, a := make([]string, len(s.keys)), make([]any, len(s.args))
	for i, name := range s.keys {
		v, ok := keys[name]
		if !ok {
			return nil, fmt.Errorf("line script: no key %q among %v", name, mapKeys(keys))
		}
		k[i] = v
	}
	for i, name := range s.args {
		v, ok := args[name]
		if !ok {
			return nil, fmt.Errorf("line script: no argument %q among %v", name, mapKeys(args))
		}
		a[i] = v
	}
	return s.script.Run(ctx, rdb, k, a...).Int64Slice()
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// clockLua reads the scripts' clock: arg "" reads Redis' own (TIME), the one clock of
// every API instance and worker; tests pass unix ms instead. A sale's own state is read
// through internal/stock's sale_state and holds_any.
const clockLua = stock.SaleStateLua + `
local function clock_ms(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

// ticketLua reads a buyer's ticket, for the join and read scripts.
//
// read_ticket(keys, user, now, sale) reads keys.wait, keys.meta, keys.tickets and
// keys.users (the sale's users hash: units each buyer holds); sale is sale_state's table.
// It returns nil (no ticket) or {status, position, ahead, admitted ms, pass expiry ms,
// place}: TICKET_SOLD_OUT is one look at the sale, never a write per ticket, and a
// waiting buyer's position counts the admitted ones before: everyone admitted was
// ahead. A waiting buyer's place is its score in keys.wait; an admitted one's is kept
// with its ticket (0 for a ticket admitted before places were kept).
// answer(code, t, sale, now) is a script's reply: the code, then ticketValues values.
const ticketLua = clockLua + `
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
`

// The keys and arguments of the scripts, by the names the scripts read them by:
//
//	sale     the sale's hash (stock.SaleKey)
//	codes    the sale's access codes, and claims the uses not yet recorded
//	         (stock.CodesKey, stock.CodeClaimsKey)
//	meta     the line's counters (metaKey)
//	wait     the waiting buyers (waitKey)
//	tickets  the admitted buyers' tickets (ticketsKey)
//	passes   the passes outstanding (passesKey)
//	users    the sale's users hash (stock.UsersKey)
//	pow      the solution's proof-of-work key (powKey; any key of the slot when none)
//	joined   when each waiting buyer who joined after the start joined (joinedKey)
//	waits    the admitted buyers' waits (waitsKey)
//
//	clock     "" for Redis' clock, or unix ms (tests)
//	user      the buyer's key (buyer.ID.Key)
//	draw      the lottery's draw for this buyer, an integer in [0, bandWidth)
//	lottery   the first place of the band of a join before the start (places.go); the
//	          line admits no place from it on before the start
//	arrival   the first place of the band of a join from the start on, less one
//	early     the first place of the band of a code holder's join before the early window
//	members   the first place of the band of a code holder's join in it, less one
//	code      the access code the buyer presents, "" for none
//	solution  "1" a right solution of ours came with the join, "0" one that is not
//	          (refused even where no challenge is needed), "" none
//	expires   the solution's challenge's expiry (unix ms), judged by the clock
//	tolerance how late an admission may come after its slot (ms)
//	most      the most admissions of one run
var (
	ticketKeyNames = []string{"sale", "meta", "wait", "tickets", "users"}
	admitKeyNames  = []string{"sale", "meta", "wait", "tickets", "passes", "users", "joined", "waits"}
)

// challengeScript reads what a sale's challenge needs.
//
// Returns {CHALLENGE, cost, now (unix ms)}, NO_SALE or NO_ROOM.
var challengeScript = newScript([]string{"sale"}, []string{"clock"}, clockLua, `
local sale = sale_state(K.sale)
if not sale then return {NO_SALE} end
if not sale.room then return {NO_ROOM} end
return {CHALLENGE, sale.cost, clock_ms(ARG.clock)}
`)

// joinScript gives a user a place in a sale's line, once.
//
// Returns answer(JOINED, ...) for a new ticket, answer(TICKET, ...) for the user's
// ticket (a second join; nothing changes), or NO_SALE, NO_ROOM, ENDED, SOLD_OUT,
// NOT_OPEN, NOT_STARTED, CODE_INVALID, CODE_TAKEN, CHALLENGE_REQUIRED, SOLUTION_USED,
// CHALLENGE_EXPIRED, PLACE_TAKEN (the draw is a waiting buyer's place: nothing
// changed, draw again).
//
// The sale's state comes before the solution: a user with a ticket gets it back, and a
// closed line says so, whatever solution came. The line opens prequeue seconds before
// the early window (before the start, for a sale without one). A join before the start
// (by the clock) is placed by its draw in the lottery's band: the order of those
// joiners is a uniform lottery, fixed at join time, so nothing is shuffled at the
// start. A later join is placed in the arrival band at the count of later joins, behind
// them all, in arrival order. Before the start an access code counts (the first buyer
// who presents it owns it: code_refused): its holder's join before the early window is
// drawn in the early band, below every lottery place, and in the window it goes in the
// members' band in join order (the line admits members by then); in the window nobody
// joins without one. A place is the buyer's score in K.wait, and stays with its ticket
// once admitted. For the funnel, a join before the start is counted (meta early) and the
// instant of a join kept (K.joined) until its admission when its wait counts from it: a
// join after the start, or a code holder's in the early window.
var joinScript = newScript(append(slices.Clone(ticketKeyNames), "pow", "joined", "codes", "claims"),
	[]string{"clock", "user", "draw", "lottery", "arrival", "early", "members", "code", "solution", "expires"}, ticketLua, `
local sale = sale_state(K.sale)
if not sale then return {NO_SALE} end
if not sale.room then return {NO_ROOM} end
local now = clock_ms(ARG.clock)
local t = read_ticket(K, ARG.user, now, sale)
if t then return answer(TICKET, t, sale, now) end
if now >= sale.ends then return {ENDED} end
if sale.avail <= 0 then return {SOLD_OUT} end
if now < sale.early - sale.prequeue * 1000 then return {NOT_OPEN} end
local place, member
if now < sale.starts and ARG.code ~= '' then
  local refused = code_refused(K.codes, K.claims, ARG.code, ARG.user, now)
  if refused == 'invalid' then return {CODE_INVALID} end
  if refused == 'taken' then return {CODE_TAKEN} end
  member = true
end
if now >= sale.early and now < sale.starts and not member then return {NOT_STARTED} end
if now < sale.early then
  place = tonumber(member and ARG.early or ARG.lottery) + tonumber(ARG.draw)
  if redis.call('ZCOUNT', K.wait, place, place) > 0 then return {PLACE_TAKEN} end
elseif now < sale.starts then
  place = 'members'
end
if sale.challenge or ARG.solution == '0' then
  if ARG.solution ~= '1' then return {CHALLENGE_REQUIRED} end
  local expires = tonumber(ARG.expires)
  if now >= expires then return {CHALLENGE_EXPIRED} end
  -- kept until the challenge expires: no instance accepts the solution after that
  if not redis.call('SET', K.pow, '1', 'NX', 'PX', string.format('%d', expires - now)) then
    return {SOLUTION_USED}
  end
end
if place == 'members' then place = tonumber(ARG.members) + redis.call('HINCRBY', K.meta, 'mseq', 1) end
if not place then place = tonumber(ARG.arrival) + redis.call('HINCRBY', K.meta, 'seq', 1) end
redis.call('ZADD', K.wait, string.format('%d', place), ARG.user)
if now < sale.starts then redis.call('HINCRBY', K.meta, 'early', 1) end
if now >= sale.starts or member and now >= sale.early then
  redis.call('HSET', K.joined, ARG.user, now) -- for the funnel: its wait counts from now
end
redis.call('HINCRBY', K.meta, 'joined', 1)
return answer(JOINED, read_ticket(K, ARG.user, now, sale), sale, now)
`)

// readScript reads a user's ticket.
//
// Returns answer(TICKET, ...), NO_SALE or NO_TICKET.
var readScript = newScript(ticketKeyNames, []string{"clock", "user"}, ticketLua, `
local sale = sale_state(K.sale)
if not sale then return {NO_SALE} end
local now = clock_ms(ARG.clock)
local t = read_ticket(K, ARG.user, now, sale)
if not t then return {NO_TICKET} end
return answer(TICKET, t, sale, now)
`)

// admitScript advances a sale's line: it retires expired passes, then admits the next
// waiting buyers whose slots have come.
//
// Returns {ADVANCED, admitted now, waiting, passes outstanding and unused, passes used},
// or NO_SALE.
//
// Buyers are admitted in place order (the lowest scores of K.wait first); each admitted
// ticket keeps its place, and the meta hash's through is the highest place admitted.
//
// Admission runs from the early window's opening: before the start, only the code
// holders' places (below lottery) are admitted.
//
// Admission slots are spaced by interval = (10 s + tolerance) / (10 x admit - 1) and the
// next slot is never older than now - tolerance when a run starts: a buyer admitted at
// t has a slot in [t - tolerance, t], so any 10 s window holds at most
// (10 s + tolerance) / interval + 1 = 10 x admit admissions, however late or often the
// runs come. Admission is from the start to the end of the sale (by the clock), while
// units are left, and while the passes outstanding and unused are fewer than
// max(admit, 2 x units left). A pass is used once its holder has bought (the reserve
// script counts a pass holder's first purchase: sale_state's passes_used); passes that
// expire leave the count, those whose holder holds units counted as used (usedexp).
var admitScript = newScript(admitKeyNames, []string{"clock", "tolerance", "most", "lottery"}, clockLua, `
local sale = sale_state(K.sale)
if not sale then return {NO_SALE} end
local now = clock_ms(ARG.clock)
local tolerance = tonumber(ARG.tolerance)
local meta = redis.call('HMGET', K.meta, 'next', 'usedexp')
local usedexp = tonumber(meta[2] or '0')
local gone = redis.call('ZRANGEBYSCORE', K.passes, '-inf', now, 'LIMIT', 0, 5000)
if #gone > 0 then
  local used = 0
  for _, u in ipairs(gone) do
    if holds_any(K.users, u) then used = used + 1 end
  end
  redis.call('ZREMRANGEBYRANK', K.passes, 0, #gone - 1)
  usedexp = usedexp + used
  redis.call('HINCRBY', K.meta, 'usedexp', used)
  redis.call('HINCRBY', K.meta, 'expired', #gone - used)
end
local rused = sale.passes_used
local outstanding = redis.call('ZCARD', K.passes)
local open = outstanding - math.min(outstanding, math.max(0, rused - usedexp))
local rate, avail = sale.admit, sale.avail
local n = 0
if sale.room and rate > 0 and avail > 0 and now >= sale.early and now < sale.ends then
  local interval = (10000 + tolerance) / (10 * rate - 1)
  local slot = math.max(tonumber(meta[1] or '0'), now - tolerance)
  if slot <= now then
    n = math.max(0, math.min(math.floor((now - slot) / interval) + 1, math.max(rate, 2 * avail) - open,
      tonumber(ARG.most)))
  end
  if n > 0 and now < sale.starts then -- the early window: code holders only
    n = math.min(n, redis.call('ZCOUNT', K.wait, '-inf', '(' .. ARG.lottery))
  end
  if n > 0 then
    local popped = redis.call('ZPOPMIN', K.wait, n)
    n = #popped / 2
    if n > 0 then redis.call('HSET', K.meta, 'through', string.format('%d', tonumber(popped[2 * n]))) end
    local before = redis.call('HINCRBY', K.meta, 'admitted', n) - n
    local exp = math.ceil((now + sale.pass_ttl * 1000) / 1000) * 1000
    redis.call('HSETNX', K.meta, 'epoch', string.format('%d', now))
    local since = now - tonumber(redis.call('HGET', K.meta, 'epoch'))
    for i = 1, n do
      local user = popped[2 * i - 1]
      redis.call('HSET', K.tickets, user, string.format('%d %d %d %d', since, before + i, exp - now, tonumber(popped[2 * i])))
      redis.call('ZADD', K.passes, exp, user)
      -- for the funnel: its wait, from the later of its join and the opening of its
      -- admission (the early window's for a code holder's place)
      local opens = sale.starts
      if tonumber(popped[2 * i]) < tonumber(ARG.lottery) then opens = sale.early end
      local joined = redis.call('HGET', K.joined, user)
      if joined then redis.call('HDEL', K.joined, user) end
      redis.call('HINCRBY', K.waits, string.format('%d', now - math.max(tonumber(joined or '0'), opens)), 1)
    end
    redis.call('HSET', K.meta, 'next', string.format('%.3f', slot + n * interval))
  end
end
return {ADVANCED, n, redis.call('ZCARD', K.wait), open + n, rused}
`)

// statusScript reads a line's public status: what every waiting buyer reads, the same
// for all of them.
//
// Returns {STATUS, state, admitted through, joined, admitted, admissions a second, units
// left, now (unix ms)}, NO_SALE or NO_ROOM. The state is LINE_ENDED from the sale's
// end, else LINE_BEFORE before its start, else LINE_SOLD_OUT with no unit left, else
// LINE_ADMITTING.
var statusScript = newScript([]string{"sale", "meta"}, []string{"clock"}, clockLua, `
local sale = sale_state(K.sale)
if not sale then return {NO_SALE} end
if not sale.room then return {NO_ROOM} end
local now = clock_ms(ARG.clock)
local state = LINE_ADMITTING
if now >= sale.ends then state = LINE_ENDED
elseif now < sale.starts then state = LINE_BEFORE
elseif sale.avail <= 0 then state = LINE_SOLD_OUT end
local m = redis.call('HMGET', K.meta, 'through', 'joined', 'admitted')
return {STATUS, state, tonumber(m[1] or '0'), tonumber(m[2] or '0'), tonumber(m[3] or '0'), sale.admit,
  math.max(sale.avail, 0), now}
`)

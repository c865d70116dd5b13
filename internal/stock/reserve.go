package stock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/ratelimit"
)

// reserveScript takes units for the purchases of one sale's bucket (the buyers' home
// bucket, bucket.go), atomically, each decided on its own and in the order given, as if
// each ran alone after the one before: one call carries the purchases that waited in
// one API process at the same moment (coalesce.go). In a group-buy sale a purchase is a
// seat: it opens a group or joins one, in the same step.
//
// KEYS and ARGV are the call's (callKeys, callArgs), then each purchase's in turn
// (purchaseKeys, and seatKeys for a seat; purchaseArgs), defined once below; the script
// has them by name: K.<call key>, ARG.<call arg>, and a table p per purchase.
// It returns one reply per purchase (reserveReplies), then the sale's terms {limit,
// price, pay window, cap, room}, which every answer carries.
//
// Each purchase goes through the pieces below in this order, the first refusal being its
// reply: replayed, locked, outside_window, wrong_kind, seat_refused, units_refused, and
// take. The Idempotency-Key comes first: it is written in the same step as the
// reservation, so a key found is a purchase that was made, and its replay gets the order
// even while that purchase's lock is held. Every check after it comes after the lock's,
// so a second purchase of the same user sees the outcome of the first (in the same call
// too). A purchase that reaches the script counts against the user's allowance first
// (reserve); a retry after the lock does not count again (interval 0).
var reserveScript = redis.NewScript(listGroupLua + queuedLua + repliesLua() + holdingsLua + userLimitLua + CodeLua + layoutLua() + `
local v = redis.call('HMGET', K.sale, 'avail', 'limit', 'start', 'end', 'price', 'paywin', 'qunits', 'kind',
  'gsize', 'gwin', 'plimit', 'room', 'buckets', 'closed', 'variants', 'vlimit')
local sale = {avail = tonumber(v[1]), limit = tonumber(v[2]), limit_text = v[2], starts = tonumber(v[3]), ends = tonumber(v[4]),
  price = v[5] or '0', pay_window = v[6] or '0', qunits = tonumber(v[7] or '0'), group = v[8] == 'group',
  group_size = v[9], group_window = tonumber(v[10]), cap = tonumber(v[11] or '0'), room = v[12] == '1',
  buckets = v[13] or '1', closed = v[14], variants = tonumber(v[15]), vlimit = tonumber(v[16] or '0')}
sale.counted = counted(sale.cap, sale.group)
-- shut is the reply of every purchase of the call when the sale takes none now
local shut
if not sale.avail or not sale.starts then shut = {NO_SALE}
elseif sale.buckets ~= ARG.buckets then shut = {WRONG_BUCKETS, sale.buckets}
elseif sale.closed then shut = {CLOSED} end

local now_us -- Redis' clock (µs), read once per call
local function clock_us()
  if not now_us then
    local t = redis.call('TIME')
    now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return now_us
end

-- A command inside a script costs the server far more than its own work, so the users
-- hash's fields (a buyer's units, lock, allowance, participations) and the
-- orders of a call are read with one HMGET each before its first purchase and written
-- with one HSET each after its last (taken); each purchase sees what the ones before it
-- wrote. h.v holds a field's value (false: absent), h.w the fields to write.
local users, queued = {key = K.users, v = {}, w = {}}, {key = K.queued, v = {}, w = {}}
local function read(h, fields)
  local v = redis.call('HMGET', h.key, unpack(fields))
  for i = 1, #fields do h.v[fields[i]] = v[i] end
end
local function get(h, f)
  if h.v[f] == nil then h.v[f] = redis.call('HGET', h.key, f) end
  return h.v[f]
end
local function put(h, f, v)
  h.v[f], h.w[#h.w + 1], h.w[#h.w + 2] = v, f, v
end
local since = {} -- score, order id of each reservation of the call, for one ZADD
-- a sale of variants: the units left of each variant the call's purchases named, by its
-- field (avail:<i>), read at its first purchase and written once after the last
local variants, variants_w = {}, {}

local purchases = unpack_purchases()
if not shut and #purchases > 0 then -- a call carries at most maxCoalesced: the unpacks stay small
  local fields, ids = {}, {}
  for _, p in ipairs(purchases) do
    fields[#fields + 1], fields[#fields + 2], fields[#fields + 3] = p.user, LOCK .. p.user, ALLOWANCE .. p.user
    ids[#ids + 1] = p.order
  end
  read(users, fields)
  read(queued, ids)
end

-- The reply of a reservation: units left, and a seat's group as this seat left it;
-- RESERVED_EARLY for one of the early window (p.early, or its queued value's mark when
-- this call runs again).
local function reserved(p, avail)
  local code = RESERVED
  if p.early or string.sub(get(queued, p.order) or '', -2) == ' e' then code = RESERVED_EARLY end
  if p.mode == '' then return {code, avail} end
  local g = redis.call('HMGET', p.group_key, 'members', 'size', 'expires', 'status')
  return {code, avail, g[1], g[2], g[3], g[4]}
end

-- Each check returns its refusal, or nil to let the purchase go on.

-- An Idempotency-Key used before: the order it made (a replay), or with another body a
-- refusal.
local function replayed(p)
  if p.fingerprint == '' then return nil end
  local prior = redis.call('GET', p.idempotency_key)
  if not prior then return nil end
  local fp, id, mark = string.match(prior, '^(%S+) (%S+)( ?r?)$')
  if fp ~= p.fingerprint then return {KEY_REUSED, id} end
  -- A replay while the order is still queued marks the key: the purchase that made it
  -- may yet fail its replicas' confirmation, and its roll-back must then leave the
  -- order standing for this answer (rollbackScript).
  if mark == '' and get(queued, id) then redis.call('SET', p.idempotency_key, prior .. ' r', 'KEEPTTL') end
  return {REPLAYED, id}
end

-- The buyer's lock (userlock.go): held while its expiry, by Redis' clock, has not passed.
local function locked(p)
  local lock = get(users, LOCK .. p.user)
  if lock and tonumber(string.match(lock, ' (%d+)$')) > clock_us() / 1000 then return {BUSY} end
end

-- Before the start, in the sale's early window (its opening, the hash's early, read
-- only then), a buyer who presents an access code the sale has, free or theirs, buys as
-- after the start (p.early: the order is marked); anyone else waits for the start. A
-- free code becomes the buyer's here (code_refused), whatever the purchase's outcome.
local early_at
local function early_refused(p, clock)
  if p.access_code == '' then return {NOT_STARTED} end
  if not early_at then early_at = tonumber(redis.call('HGET', K.sale, 'early') or sale.starts) end
  if clock < early_at then return {NOT_STARTED} end
  local refused = code_refused(K.codes, K.claims, p.access_code, p.user, clock)
  if refused == 'invalid' then return {CODE_INVALID} end
  if refused == 'taken' then return {CODE_TAKEN} end
  p.early = true
end

-- The sale's window, and a waiting room's pass, judged by Redis' clock (the same for
-- every API instance) or by the caller's now.
local function outside_window(p)
  local clock = tonumber(p.now)
  if p.redis_clock then clock = math.floor(clock_us() / 1000) end
  if clock < sale.starts then
    local refusal = early_refused(p, clock)
    if refusal then return refusal end
  end
  if clock >= sale.ends then return {ENDED} end
  if sale.room and not (clock < (p.pass_expires or 0)) then return {NOT_ADMITTED} end
end

-- A seat in a group-buy sale, a plain purchase in any other.
local function wrong_kind(p)
  if p.mode == '' and sale.group then return {GROUP_SALE} end
  if p.mode ~= '' and not sale.group then return {NOT_GROUP_SALE} end
end

-- A seat joins a group that exists, has a seat left, is open and is not the user's;
-- else the refusal. Returns nil and the group (members, size, expires, status).
local function seat_refused(p)
  if p.mode ~= 'join' then return nil end
  local g = redis.call('HMGET', p.group_key, 'members', 'size', 'expires', 'status')
  if not g[1] then return {NO_GROUP} end
  if redis.call('HEXISTS', p.seats_key, p.user) == 1 then return {ALREADY_IN_GROUP} end
  if g[4] == '1' or tonumber(g[1]) >= tonumber(g[2]) then return {GROUP_FULL} end
  if g[4] ~= '0' or tonumber(p.now) >= tonumber(g[3]) then return {GROUP_CLOSED} end
  return nil, g
end

-- The units left for purchase p: the sale's, or in a sale of variants the variant's
-- (p.vfield, its field); a purchase that names no variant of the sale, or names one in a
-- sale without, is refused.
local function left_for(p)
  if not sale.variants and p.variant == '' then return nil, sale.avail end
  local i = tonumber(p.variant)
  if not sale.variants or not i or i >= sale.variants then return {NO_VARIANT} end
  p.vfield = 'avail:' .. p.variant
  if not variants[p.vfield] then variants[p.vfield] = tonumber(redis.call('HGET', K.sale, p.vfield) or '0') end
  return nil, variants[p.vfield]
end

-- A buyer within the per-variant limit with qty more units of p's variant (p.vheld: what
-- they hold of it), where the sale sets one.
local function variant_refused(p, qty)
  if sale.vlimit <= 0 or p.vfield == nil then return nil end
  p.vheld = tonumber(get(users, VARIANT .. p.variant .. ':' .. p.user) or '0')
  if p.vheld + qty > sale.vlimit then return {OVER_VARIANT_LIMIT, p.vheld, sale.vlimit} end
end

-- The quantity within the per-user limit, units left for it, the user within the limit
-- with it, within the cap on participations, and within the per-variant limit; else the
-- refusal. Returns nil, the units and the participations the user holds.
local function units_refused(p)
  local qty = tonumber(p.qty)
  local refusal = quantity_refused(qty, sale.limit)
  if refusal then return refusal end
  local left
  refusal, left = left_for(p)
  if refusal then return refusal end
  if left < qty then return {SOLD_OUT, left, sale.room and 1 or 0, sale.limit} end
  local held, parts = holding(users, get, p.user, sale.counted)
  refusal = user_refused(held, qty, sale.limit, parts, sale.cap) or variant_refused(p, qty)
  if refusal then return refusal end
  return nil, held, parts
end

-- Takes the units, the user's lock and participation and the seat, and queues the order;
-- allow is the user's allowance after this attempt (nil: not counted), g the group a
-- seat joins, held and parts what the user holds before.
local function take(p, allow, g, held, parts)
  local qty = tonumber(p.qty)
  sale.avail, sale.qunits = sale.avail - qty, sale.qunits + qty
  local left = sale.avail
  if p.vfield then
    left = variants[p.vfield] - qty
    variants[p.vfield], variants_w[p.vfield] = left, true
    if p.vheld then put(users, VARIANT .. p.variant .. ':' .. p.user, string.format('%d', p.vheld + qty)) end
  end
  hold(users, put, p.user, held, parts, qty, sale.counted)
  put(users, LOCK .. p.user, p.lock_token .. ' ' .. string.format('%d', math.floor(clock_us() / 1000) + p.lock_ttl))
  if allow then put(users, ALLOWANCE .. p.user, allow) end
  if sale.room and held == 0 then redis.call('HINCRBY', K.sale, 'rused', 1) end -- a pass's first use
  if p.mode == 'open' then
    g = {1, sale.group_size, string.format('%d', tonumber(p.now) + sale.group_window * 1000), '0'}
    redis.call('HSET', p.group_key, 'members', g[1], 'size', g[2], 'expires', g[3], 'status', g[4])
  elseif g and redis.call('HINCRBY', p.group_key, 'members', 1) >= tonumber(g[2]) then
    redis.call('HSET', p.group_key, 'status', 1)
  end
  local group, size, expires
  if g then
    list_group(K.open_groups, K.fill_groups, p.group_key, p.group)
    redis.call('HSET', p.seats_key, p.user, p.order .. ' ' .. p.qty)
    group, size, expires = p.group, g[2], g[3]
  end
  put(queued, p.order, queued_value(p, sale.limit_text, sale.cap, group, size, expires))
  redis.call('SADD', p.user_queued_key, p.order)
  since[#since + 1], since[#since + 2] = p.now, p.order
  if p.fingerprint ~= '' then
    redis.call('SET', p.idempotency_key, p.fingerprint .. ' ' .. p.order, 'EX', ARG.key_ttl)
  end
  return reserved(p, left)
end

local function decide(p, allow)
  local refusal = replayed(p) or locked(p) or outside_window(p) or wrong_kind(p)
  if refusal then return refusal end
  local g, held, parts
  refusal, g = seat_refused(p)
  if refusal then return refusal end
  refusal, held, parts = units_refused(p)
  return refusal or take(p, allow, g, held, parts)
end

-- The user's allowance of attempts in this sale (GCRA on Redis' clock: internal/ratelimit
-- describes it) counts the attempt before anything is decided. An order id found queued
-- is this call run again (a cluster client retries a command whose reply was lost): it
-- gets the reply of the run that reserved, not its own lock.
local function reserve(p)
  if shut then return shut end
  if get(queued, p.order) then return reserved(p, sale.avail) end
  if p.interval == 0 then return decide(p) end
  local t = clock_us()
  local nxt = math.max(tonumber(get(users, ALLOWANCE .. p.user) or '0'), tonumber(redis.call('GET', p.allowance_key) or '0'),
    t) + p.interval
  local wait = nxt - p.tolerance - t
  if wait > 0 then return {RATE_LIMITED, string.format('%d', wait)} end
  local allow = string.format('%d', nxt)
  local res = decide(p, allow)
  if res[1] ~= RESERVED then -- not reserved: the allowance goes to its own key, gone once full again
    redis.call('SET', p.allowance_key, allow, 'PX', string.format('%d', math.ceil((nxt - t) / 1000)))
  end
  return res
end

-- Writes what the call's reservations so far changed. A purchase that fails with an
-- error (not a reply) has it written for the purchases before it, then fails the call,
-- so those stay whole for their roll-backs to find.
local function taken()
  for _, h in ipairs({users, queued}) do
    if #h.w > 0 then redis.call('HSET', h.key, unpack(h.w)) end
  end
  if #since > 0 then
    -- counts computed in Lua go out with '%d': Redis 7.2.0-7.2.4 writes 900000000 as
    -- "9e+08", which HINCRBY then refuses
    local fields = {'avail', string.format('%d', sale.avail), 'qunits', string.format('%d', sale.qunits)}
    for f in pairs(variants_w) do fields[#fields + 1], fields[#fields + 2] = f, string.format('%d', variants[f]) end
    redis.call('HSET', K.sale, unpack(fields))
    redis.call('ZADD', K.since, unpack(since))
  end
end

local out = {}
for i, p in ipairs(purchases) do
  local ok, res = pcall(reserve, p)
  if not ok then
    taken()
    error(res, 0)
  end
  out[i] = res
end
taken()
out[#out + 1] = {sale.limit or 0, sale.price, sale.pay_window, sale.cap, sale.room and 1 or 0}
return out
`)

// IdempotencyTTL is how long an Idempotency-Key is remembered.
const IdempotencyTTL = 24 * time.Hour

// Reservation asks for units of a sale for one purchase.
type Reservation struct {
	Purchase
	// OrderID names the order if units are taken.
	OrderID string
	Now     time.Time
	// LockToken and LockTTL take the user's lock (UserLockKey) with the units.
	LockToken string
	LockTTL   time.Duration
	// RedisClock judges the sale's window and the pass by Redis' clock, the same for
	// every API instance; false judges them by Now (tests inject it).
	RedisClock bool
	// PerSecond is the user's allowance of attempts per second in this sale, with
	// bursts of ratelimit.Burst(PerSecond); 0 counts this attempt against none (no
	// limit, or the retry of an attempt that met the user's lock).
	PerSecond float64
}

// allowance is the interval between two attempts of the user's allowance and its
// tolerance (a burst's worth), in µs: the reserve script's interval and tolerance.
func (r Reservation) allowance() (interval, tolerance int64) {
	if r.PerSecond <= 0 {
		return 0, 0
	}
	interval = max(1, int64(1e6/r.PerSecond))
	return interval, interval * int64(ratelimit.Burst(r.PerSecond))
}

// mode is the reserve script's mode of p: "" a purchase, "open" or "join" a seat (also
// before the group's id is minted: OpenGroup alone says "open").
func (p Purchase) mode() string {
	switch {
	case p.OpenGroup:
		return "open"
	case p.Group == "":
		return ""
	}
	return "join"
}

// passArg is the reserve script's pass_expires: unix ms, "" for no pass.
func (r Reservation) passArg() string {
	if r.PassExpires.IsZero() {
		return ""
	}
	return strconv.FormatInt(r.PassExpires.UnixMilli(), 10)
}

// Reserved is a successful Reserve.
type Reserved struct {
	// OrderID is the new order, or for a replay the order the key made before.
	OrderID string
	// Order is the new order as the script queued it, priced (not for a replay).
	Order QueuedOrder
	// Replayed is true when the Idempotency-Key already made OrderID; nothing was taken
	// and no lock is held.
	Replayed bool
	// EarlyAccess is true for a reservation of the sale's early window, with an access
	// code (its order is marked so).
	EarlyAccess bool
	// Available is what is left after this purchase.
	Available  int64
	Limit      int
	PriceCents int64
	PayWindow  time.Duration
	// ParticipationCap is the cap on the buyer's orders the purchase was checked
	// against (0: none).
	ParticipationCap int
	// Group is the seat's group after it was taken (a purchase in a group-buy sale).
	Group *Group
	// room: the sale has a waiting room (for the sold-out flag; also set beside
	// errNoneLeft, as Limit is).
	room bool
	// Bucket is the bucket the purchase went to (the buyer's home bucket), set on every
	// answer that came from Redis: Replicas.Confirm takes it.
	Bucket Bucket
}

// Reserve takes r.Quantity units for r.Buyer and takes the buyer's lock, in one round
// trip. On success the order is queued in Redis and the lock is held by r.LockToken;
// the caller enqueues the order, then releases the lock. Errors: ErrNoSale, ErrBusy,
// ErrNotStarted, ErrEnded, ErrSoldOut, ErrLimitExceeded, ErrQuantityOverLimit,
// ErrKeyReused (with the earlier order's id in a *KeyReusedError), ErrNotAdmitted, and for group-buy
// sales ErrGroupSale, ErrNotGroupSale, ErrNoGroup, ErrGroupClosed, ErrAlreadyInGroup,
// ErrGroupFull.
//
// Once a sale is sold out, Reserve answers ErrSoldOut from a flag in this process
// without asking Redis, until units come back (see Watch); AnsweredInProcess tells
// that answer. An attempt past the user's allowance (PerSecond) is a
// *RateLimitedError.
func (s *Stock) Reserve(ctx context.Context, r Reservation) (Reserved, error) {
	fingerprint := r.Fingerprint()
	var recheck *soldOutFlag
	if r.IdempotencyKey == "" { // a replay is answered even when sold out
		var flag *soldOutFlag
		if flag, recheck = s.soldOut.check(r.ActivityID, r.Variant, r.Now); flag != nil {
			if err := flaggedAnswer(flag, r); err != nil {
				return Reserved{}, err
			}
		}
	}
	epoch := s.soldOut.epoch()
	got, err := s.reserveRouted(ctx, r, fingerprint)
	// A purchase with an access code may be the early window's, which one without would
	// meet as not started: only one without sets the flag (it is sold out only after the
	// start).
	noneLeft := err == errNoneLeft || err == nil && !got.Replayed && got.Available == 0 && got.Bucket.k <= 1
	switch {
	case noneLeft && r.AccessCode == "":
		s.soldOut.set(r.ActivityID, r.Variant, epoch, &soldOutFlag{at: r.Now, room: got.room, group: r.mode() != "", limit: got.Limit})
	case recheck != nil:
		s.soldOut.dropRecheck(r.ActivityID, r.Variant, recheck)
	}
	return got, err
}

// errNoneLeft is sold out with no unit left: the answer that sets the sold-out flag.
// ErrSoldOutFlagged is the same answer given by the flag, without Redis: always this
// one value, so a caller may answer it with a body worked out once.
var (
	errNoneLeft       = &DetailError{ErrSoldOut, "no units are left"}
	ErrSoldOutFlagged = &DetailError{ErrSoldOut, "no units are left"}
	// errNoneLeftNow is sold out in a sale of several buckets while units are on their
	// way between buckets: not the answer that sets the flag.
	errNoneLeftNow = &DetailError{ErrSoldOut, "no units are left right now"}
	// errFlaggedNotAdmitted is the flag's answer to a purchase without a pass in a
	// waiting-room sale: the script would refuse it so before it looked at stock.
	errFlaggedNotAdmitted = &DetailError{ErrNotAdmitted, "no pass came with the purchase"}
)

// flaggedAnswer is what a sold-out flag answers purchase r, or nil when the flag cannot
// vouch for the script's answer: not admitted without a pass in a waiting-room sale
// (the script's first check of the two), sold out for a purchase of the kind and within
// the limit of the purchase that set the flag. Anything else (a seat in a plain sale, a
// purchase in a group-buy sale, a quantity above the limit: rare, and refused by the
// script before it looks at stock) goes to the script, which answers it.
func flaggedAnswer(flag *soldOutFlag, r Reservation) error {
	switch {
	case flag.room && r.PassExpires.IsZero():
		return errFlaggedNotAdmitted
	case flag.group != (r.mode() != ""), quantityOverLimit(r.Quantity, flag.limit):
		return nil
	}
	return ErrSoldOutFlagged
}

// FlaggedSoldOut returns the answer Reserve would give purchase r without an
// Idempotency-Key from this process's sold-out flag, without Redis (sold out, or not
// admitted for a waiting-room sale's purchase without a pass), or nil when the flag does
// not answer it now (Reserve may then send it to the script). It reads r's ActivityID,
// Now, Quantity, Variant, PassExpires, Group and OpenGroup: a caller checks it before preparing a
// reservation it would not need.
func (s *Stock) FlaggedSoldOut(r Reservation) error {
	if flag := s.soldOut.answers(r.ActivityID, r.Variant, r.Now); flag != nil {
		return flaggedAnswer(flag, r)
	}
	return nil
}

// AnsweredInProcess reports whether Reserve gave err without asking Redis (the
// sold-out flag), so the caller can count the attempt against what this process
// allows (internal/ratelimit) rather than the script's allowance.
func AnsweredInProcess(err error) bool {
	return errors.Is(err, ErrSoldOutFlagged) || errors.Is(err, errFlaggedNotAdmitted) // also a variant's, named
}

// maxRefills bounds how often a purchase in a sale of several buckets moves units into
// its bucket and tries again.
const maxRefills = 3

// reserveRouted sends r to its buyer's home bucket. A purchase that finds its bucket
// short of units moves units there from the reserve or the other buckets (refill) and
// tries again; it answers sold out with errNoneLeft (the answer that sets the sold-out
// flag) only once the refill found no unit anywhere.
func (s *Stock) reserveRouted(ctx context.Context, r Reservation, fingerprint string) (Reserved, error) {
	refills := 0
	for {
		b := home(r.ActivityID, r.Buyer, s.knownBuckets(r.ActivityID))
		got, err := s.reserve(ctx, r, fingerprint, b)
		got.Bucket = b
		var wrong *wrongBucketsError
		switch {
		case errors.As(err, &wrong):
			if wrong.k == b.k || wrong.k < 1 || wrong.k > MaxBuckets {
				return got, fmt.Errorf("reserve: sale %d has %d buckets", r.ActivityID, wrong.k)
			}
			s.learnBuckets(r.ActivityID, wrong.k)
			continue
		case b.k <= 1 || !errors.Is(err, ErrSoldOut):
			return got, err
		}
		// err is errNoneLeft (none in this bucket) or "only N left" (N in it)
		notFlagged := err
		if err == errNoneLeft {
			notFlagged = errNoneLeftNow
		}
		if refills == maxRefills {
			return got, notFlagged
		}
		refills++
		moved, empty, rerr := s.refill(ctx, b, int64(r.Quantity), r.Variant)
		switch {
		case rerr != nil: // a bucket closed for a rebuild or lost (ErrNoSale), or Redis failing
			return got, fmt.Errorf("move units to bucket %d: %w", b.n, rerr)
		case empty: // none anywhere else: sold out, or the last units are here, fewer than asked
			return got, err
		case moved == 0: // units on their way between buckets: not sold out, not here yet
			return got, notFlagged
		}
	}
}

// wrongBucketsError is the reserve script's answer to a purchase sent to a bucket of
// the wrong number of buckets: the sale has k.
type wrongBucketsError struct{ k int }

func (e *wrongBucketsError) Error() string { return fmt.Sprintf("the sale has %d buckets", e.k) }

func (s *Stock) reserve(ctx context.Context, r Reservation, fingerprint string, b Bucket) (Reserved, error) {
	c := &reserveCall{ctx: ctx, r: r, fingerprint: fingerprint, b: b, done: make(chan struct{})}
	s.reserving.do(c)
	if c.err != nil {
		return Reserved{}, fmt.Errorf("reserve: %w", c.err)
	}
	return decodeReserved(r, fingerprint, c.reply, c.terms)
}

// The reserve script's KEYS and ARGV, defined once here: reserveAll writes a call in
// this order, and the script unpacks it by these names (layoutLua): K.<name> and
// ARG.<name> for the call's, a table per purchase with a field per purchase key and
// argument. A call is callKeys, then each purchase's purchaseKeys and, for a seat,
// seatKeys; and callArgs, then len(purchaseArgs) arguments per purchase.

// callKeys are the keys of every call, all of the purchases' bucket.
var callKeys = []struct {
	name string
	key  func(Bucket) string
}{
	{"sale", saleKey},              // the sale's hash
	{"users", usersKey},            // per buyer: units, lock, allowance, participations
	{"queued", queuedKey},          // order id -> queued value (queued.go)
	{"since", queuedSinceKey},      // queued order ids by when they were taken
	{"open_groups", openGroupsKey}, // open groups by the end of their window
	{"fill_groups", fillGroupsKey}, // open groups, fullest first
	{"codes", codesKey},            // the sale's access codes (codes.go), read before the start only
	{"claims", codeClaimsKey},      // the uses of codes not yet recorded in MySQL
}

// callArgs are the arguments of every call.
var callArgs = []struct {
	name  string
	value func(Bucket) any
}{
	{"key_ttl", func(Bucket) any { return int64(IdempotencyTTL / time.Second) }},
	// the sale's buckets as the caller believes (it chose the bucket by them)
	{"buckets", func(b Bucket) any { return max(1, b.k) }},
}

// purchaseKeys are each purchase's keys; seatKeys follow them for a seat (mode not "").
var purchaseKeys, seatKeys = []purchaseKey{
	{"user_queued_key", func(b Bucket, r Reservation) string { return userQueuedKey(b, r.Buyer) }},
	{"idempotency_key", func(b Bucket, r Reservation) string { return idempotencyKey(b, r.Buyer, r.IdempotencyKey) }},
	{"allowance_key", func(b Bucket, r Reservation) string { return rateKey(b, r.Buyer) }},
}, []purchaseKey{
	{"group_key", func(b Bucket, r Reservation) string { return groupKey(b, r.Group) }},
	{"seats_key", func(b Bucket, r Reservation) string { return groupSeatsKey(b, r.Group) }},
}

type purchaseKey struct {
	name string
	key  func(Bucket, Reservation) string
}

// purchaseArgs are each purchase's arguments: the order's own (orderArgs, queued.go),
// then what the script decides by.
var purchaseArgs = slices.Concat(orderArgs, []purchaseArg{
	{"fingerprint", luaString, func(_ Reservation, fp string) any { return fp }}, // "": no Idempotency-Key
	{"lock_token", luaString, func(r Reservation, _ string) any { return r.LockToken }},
	{"lock_ttl", luaNumber, func(r Reservation, _ string) any { return r.LockTTL.Milliseconds() }},
	{"mode", luaString, func(r Reservation, _ string) any { return r.mode() }},
	{"group", luaString, func(r Reservation, _ string) any { return r.Group }},
	{"interval", luaNumber, func(r Reservation, _ string) any { i, _ := r.allowance(); return i }},
	{"tolerance", luaNumber, func(r Reservation, _ string) any { _, t := r.allowance(); return t }},
	{"redis_clock", luaFlag, func(r Reservation, _ string) any { return flag(r.RedisClock) }},
	{"pass_expires", luaNumber, func(r Reservation, _ string) any { return r.passArg() }}, // nil: no pass
	{"access_code", luaString, func(r Reservation, _ string) any { return r.AccessCode }}, // "": none
})

// purchaseArg is one of a purchase's arguments, with how the script reads it: a value
// the script writes back (now, qty) stays the string it came as, since turning a number
// into a string costs the server more than the rest of the value.
type purchaseArg struct {
	name  string
	lua   luaValue
	value func(r Reservation, fingerprint string) any
}

// luaValue is how the script reads an argument: a string, a number, or a flag (1: true).
type luaValue int

const (
	luaString luaValue = iota
	luaNumber
	luaFlag
)

// layoutLua unpacks a call for the script: K and ARG, and unpack_purchases(), which
// returns the purchases' tables in order.
func layoutLua() string {
	var b strings.Builder
	b.WriteString("\nlocal K = {")
	for i, k := range callKeys {
		fmt.Fprintf(&b, "%s%s = KEYS[%d]", sep(i), k.name, i+1)
	}
	b.WriteString("}\nlocal ARG = {")
	for i, a := range callArgs {
		fmt.Fprintf(&b, "%s%s = ARGV[%d]", sep(i), a.name, i+1)
	}
	fmt.Fprintf(&b, "}\nlocal function unpack_purchases()\n  local out, k = {}, %d\n", len(callKeys))
	fmt.Fprintf(&b, "  for a = %d, #ARGV - 1, %d do\n    local p = {", len(callArgs), len(purchaseArgs))
	b.WriteString(argsLua(purchaseArgs, "a + "))
	for i, k := range purchaseKeys { // in the constructor: a field added later grows the table
		fmt.Fprintf(&b, ", %s = KEYS[k + %d]", k.name, i+1)
	}
	fmt.Fprintf(&b, "}\n    k = k + %d\n    if p.mode ~= '' then\n", len(purchaseKeys))
	for i, k := range seatKeys {
		fmt.Fprintf(&b, "      p.%s = KEYS[k + %d]\n", k.name, i+1)
	}
	fmt.Fprintf(&b, "      k = k + %d\n    end\n", len(seatKeys))
	b.WriteString("    out[#out + 1] = p\n  end\n  return out\nend\n")
	return b.String()
}

// argsLua is the fields of a Lua table of args, each read as the script reads it from
// ARGV[<at>1], ARGV[<at>2] and on.
func argsLua(args []purchaseArg, at string) string {
	var b strings.Builder
	for i, a := range args {
		arg := fmt.Sprintf("ARGV[%s%d]", at, i+1)
		switch a.lua {
		case luaNumber:
			arg = "tonumber(" + arg + ")"
		case luaFlag:
			arg += " == '1'"
		}
		fmt.Fprintf(&b, "%s%s = %s", sep(i), a.name, arg)
	}
	return b.String()
}

func sep(i int) string {
	if i == 0 {
		return ""
	}
	return ", "
}

// reserveAll runs reserveScript once for calls, purchases of one bucket of a sale, and
// leaves each one's reply (or the call's error) in it.
func (s *Stock) reserveAll(ctx context.Context, calls []*reserveCall) {
	b := calls[0].b
	keys := make([]string, 0, len(callKeys)+(len(purchaseKeys)+len(seatKeys))*len(calls))
	args := make([]any, 0, len(callArgs)+len(purchaseArgs)*len(calls))
	for _, k := range callKeys {
		keys = append(keys, k.key(b))
	}
	for _, a := range callArgs {
		args = append(args, a.value(b))
	}
	for _, c := range calls {
		for _, k := range purchaseKeys {
			keys = append(keys, k.key(b, c.r))
		}
		if c.r.mode() != "" {
			for _, k := range seatKeys {
				keys = append(keys, k.key(b, c.r))
			}
		}
		for _, a := range purchaseArgs {
			args = append(args, a.value(c.r, c.fingerprint))
		}
	}
	var res []any
	err := whileMoving(ctx, s.rdb, func() (err error) {
		res, err = reply(reserveScript.Run(ctx, s.rdb, keys, args...).Result())
		return err
	})
	var terms saleTerms
	if err == nil {
		if len(res) != len(calls)+1 {
			err = fmt.Errorf("unexpected script reply %v for %d purchases", res, len(calls))
		} else {
			terms, err = decodeTerms(res[len(calls)])
		}
	}
	for i, c := range calls {
		if err != nil {
			c.err = err
			continue
		}
		c.terms = terms
		if c.reply, c.err = reply(res[i], nil); c.err != nil {
			c.err = fmt.Errorf("purchase %d of %d: %w", i+1, len(calls), c.err)
		}
	}
}

// saleTerms is what the reserve script answers once per call: the sale's terms that a
// purchase's answer carries.
type saleTerms struct {
	limit, cap int
	price      int64
	payWindow  time.Duration
	room       bool
}

func decodeTerms(v any) (saleTerms, error) {
	vs, err := reply(v, nil)
	if err != nil {
		return saleTerms{}, err
	}
	n, err := integers(vs)
	if err != nil || len(n) != 5 {
		return saleTerms{}, fmt.Errorf("unexpected sale terms %v in the script's reply", vs)
	}
	return saleTerms{limit: int(n[0]), price: n[1], payWindow: time.Duration(n[2]) * time.Second,
		cap: int(n[3]), room: n[4] == 1}, nil
}

package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/ratelimit"
)

// reserveScript takes units for purchases of one sale, atomically, each decided on its
// own and in the order given, as if each ran alone after the one before: one call
// carries the purchases of the sale that waited in one API process at the same moment
// (coalesce.go). In a group-buy sale a purchase is a seat: it opens a group (the first
// seat) or joins one, in the same step.
//
// All keys are of one bucket of the sale (bucket.go): the buyers' home bucket.
//
// KEYS[1] sale hash   KEYS[2] users hash   KEYS[3] queued hash   KEYS[4] queued-since sorted set
// KEYS[5] open groups sorted set   KEYS[6] open groups, fullest first
// then, for each purchase in turn, three keys (a plain purchase) or five (a seat):
// 1 the user's queued set  2 idempotency key  3 the user's attempts allowance (rateKey;
// also the field a<user> of the users hash, written instead when the attempt reserves)
// 4 group hash  5 group seats hash (a seat only)
// ARGV[1] idempotency key TTL (s)  ARGV[2] the sale's buckets as the caller believes (it
// chose the bucket by them); then thirteen arguments for each purchase i (0, 1, ...), at
// ARGV[2 + 13i + n]:
// n=1 now (unix ms)     n=2 user id           n=3 quantity
// n=4 order id          n=5 request fingerprint, "" without an Idempotency-Key
// n=6 user lock owner token  n=7 its TTL (ms)
// n=8 "" a purchase, "open" a new group, "join" a seat in a group
// n=9 the group's id ("" for a purchase)
// n=10 the allowance's interval between attempts (µs; 0: this attempt is not counted, no
// limit or a retry after the lock)  n=11 its tolerance (µs)
// n=12 "1": judge the sale's window and the pass by Redis' clock (TIME), else by n=1
// n=13 the expiry (unix ms) of the buyer's valid pass for this sale, "" for none
// What is the same for every purchase of a call is sent once, and its reply is short:
// each string sent or returned costs the server a little (the 13 fewer a purchase here
// saved about 1 µs of the reserve step's 18-20: docs/performance.md).
//
// Returns one reply per purchase, in order, then the sale's {limit, price, pay window,
// cap, room} (cap the sale's cap on participations, 0: none; room 1 for a waiting-room
// sale, else 0). A purchase's reply is one of
//
//	{0, available after}      reserved; the user lock is now held
//	{0, available after, members, size, expires, status}  a seat reserved; the group's
//	                          after this seat
//	                          (either also the answer when the order id is already queued:
//	                          a retry of a script that ran but whose reply was lost)
//	{1, order id}             the key already made this order with the same body (replay)
//	{-1}                      no such sale (or only a count of a lost one)
//	{-2}                      the user lock is held (an earlier purchase is in flight)
//	{-3} / {-4}               before the sale's start / at or after its end
//	{-5, available, room, limit}  fewer units left than asked for (room as above;
//	                          limit the per-user limit, for the sold-out flag)
//	{-6, held, limit}         the user would pass the limit
//	{-7, order id}            the key was used with another body
//	{-8, limit}               quantity alone is above the limit
//	{-9} / {-10}              a purchase in a group sale / a seat in a plain sale
//	{-11}                     no such group
//	{-12}                     the group failed, or its window has passed
//	{-13}                     the user holds a seat in the group
//	{-14}                     no seat is left: the group is complete
//	{-15, held, cap}          the user would pass the cap on participations
//	{-16, wait}               the user's attempts passed the allowance: the next is
//	                          allowed in wait µs
//	{-17}                     a waiting-room sale (room = 1) and no unexpired pass
//	{-18, buckets}            the sale has that many buckets, not ARGV[2]: nothing decided
//	{-19}                     the sale is closed while it is rebuilt (bucket.go)
//
// The user's lock is the field l<user> of the users hash, "<owner token> <expiry, unix ms
// by Redis' clock>", written with the user's units (userlock.go). Only a reservation
// takes the lock, and every check of the purchase comes after the
// lock check, so a second request of the same user sees the outcome of the first (in
// the same call too: it meets the lock the first took). The
// Idempotency-Key comes before it: the key is written in the same step as the
// reservation, so a key found is a purchase that was made, and its replay gets its
// order even while a lock outlives that purchase (its commit is slow, or the API died
// holding it). Each attempt that reaches the script counts against the user's
// allowance in this sale (GCRA on Redis' clock, the same for every API instance:
// internal/ratelimit describes the algorithm), before anything else is decided; the
// retry of an attempt that met the lock does not count again. The script may run twice
// for one purchase: a cluster client retries a command whose reply was lost (a timeout,
// a node failing over) and replays what its pipeline had not answered. The order id is
// new for each purchase, so finding it queued means this is such a retry, and it gets
// the answer of the run that reserved instead of meeting its own lock (busy) with its
// units taken. A user's participations (orders held, in a sale that caps them or sells
// in groups) are the field p<user> of the users hash. A command inside a script costs
// the server far more than its own work (docs/performance.md), so the users' fields
// (units, lock, allowance) and the order ids of a call are read with one HMGET each
// before its first purchase, and the users' fields, the orders, the sale's avail and
// qunits and the queued-since index are written with one command each after its last;
// in between, each purchase sees what the ones before it in the call changed (a call
// carries at most maxCoalesced purchases, so its unpacks stay far below Lua's bound). A
// purchase that fails with an error (not a reply) first has them written for the
// purchases before it, then fails the call, so those purchases stay whole, each for its
// roll-back to find. Redis' clock is read once per call. Counts computed in Lua
// are written with string.format('%d'): some Redis versions (7.2.0-7.2.4) turn a Lua
// number such as 900000000 into "9e+08", which HINCRBY then refuses.
var reserveScript = redis.NewScript(listGroupLua + `
local sale = redis.call('HMGET', KEYS[1], 'avail', 'limit', 'start', 'end', 'price', 'paywin', 'qunits',
  'kind', 'gsize', 'gwin', 'plimit', 'room', 'buckets', 'closed')
local now_us -- Redis' clock (µs), read once per call
local function clock_us()
  if not now_us then
    local t = redis.call('TIME')
    now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return now_us
end
local room = sale[12] == '1' and 1 or 0
-- shut is the answer of every purchase of the call when the sale takes none now, else nil
local shut
if not sale[1] or not sale[3] then shut = {-1}
elseif (sale[13] or '1') ~= ARGV[2] then shut = {-18, sale[13] or '1'}
elseif sale[14] then shut = {-19} end
-- The users hash's and the queued hash's fields as this call sees them: read with one
-- HMGET each before the first purchase (or an HGET for a field not read then), written
-- with one HSET each after the last (taken), each purchase seeing what the ones before
-- it wrote. h.v holds a field's value (false when absent), h.w the fields to write.
local users, queued = {key = KEYS[2], v = {}, w = {}}, {key = KEYS[3], v = {}, w = {}}
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
local since = {} -- score, order id of each reservation of this call, for one ZADD
if not shut and #ARGV > 2 then
  local f, ids = {}, {}
  for a = 3, #ARGV, 13 do
    f[#f + 1], f[#f + 2], f[#f + 3] = ARGV[a + 1], 'l' .. ARGV[a + 1], 'a' .. ARGV[a + 1]
    ids[#ids + 1] = ARGV[a + 3]
  end
  read(users, f)
  read(queued, ids)
end
local function reserved(avail, K, A)
  if A[8] == '' then return {0, avail} end
  local g = redis.call('HMGET', K[8], 'members', 'size', 'expires', 'status')
  return {0, avail, g[1], g[2], g[3], g[4]}
end
-- decides an attempt the allowance let through; allow is the user's allowance after it
-- (nil: not counted), written with the units when the purchase reserves
local function decide(K, A, allow)
  if A[5] ~= '' then
    local prior = redis.call('GET', K[5])
    if prior then
      local fp, id, mark = string.match(prior, '^(%S+) (%S+)( ?r?)$')
      if fp == A[5] then
        -- A replay while the order is still queued marks the key: the purchase that made
        -- it may yet fail its replicas' confirmation, and its roll-back must then leave
        -- the order standing for this answer (rollbackScript).
        if mark == '' and get(queued, id) then
          redis.call('SET', K[5], prior .. ' r', 'KEEPTTL')
        end
        return {1, id}
      end
      return {-7, id}
    end
  end
  local lock = get(users, 'l' .. A[2])
  if lock and tonumber(string.match(lock, ' (%d+)$')) > clock_us() / 1000 then return {-2} end
  local now = tonumber(A[1])
  local clock = now -- one clock for every API instance: Redis'
  if A[12] == '1' then clock = math.floor(clock_us() / 1000) end
  if clock < tonumber(sale[3]) then return {-3} end
  if clock >= tonumber(sale[4]) then return {-4} end
  if sale[12] == '1' and not (clock < (tonumber(A[13]) or 0)) then return {-17} end
  local group = sale[8] == 'group'
  if A[8] == '' and group then return {-9} end
  if A[8] ~= '' and not group then return {-10} end
  local g -- the seat's group: members, size, expires, status
  if A[8] == 'join' then
    g = redis.call('HMGET', K[8], 'members', 'size', 'expires', 'status')
    if not g[1] then return {-11} end
    if redis.call('HEXISTS', K[9], A[2]) == 1 then return {-13} end
    if g[4] == '1' or tonumber(g[1]) >= tonumber(g[2]) then return {-14} end
    if g[4] ~= '0' or now >= tonumber(g[3]) then return {-12} end
  end
  local qty, limit, avail = tonumber(A[3]), tonumber(sale[2]), tonumber(sale[1])
  if qty > limit then return {-8, limit} end
  if avail < qty then return {-5, avail, room, limit} end
  local held = tonumber(get(users, A[2]) or '0')
  if held + qty > limit then return {-6, held, limit} end
  local cap, pfield = tonumber(sale[11] or '0'), 'p' .. A[2]
  local parts = 0
  if cap > 0 or group then parts = tonumber(get(users, pfield) or '0') end
  if cap > 0 and parts >= cap then return {-15, parts, cap} end
  sale[1], sale[7] = string.format('%d', avail - qty), string.format('%d', tonumber(sale[7] or '0') + qty)
  put(users, A[2], string.format('%d', held + qty))
  put(users, 'l' .. A[2], A[6] .. ' ' .. string.format('%d', math.floor(clock_us() / 1000) + tonumber(A[7])))
  if allow then put(users, 'a' .. A[2], allow) end
  if sale[12] == '1' and held == 0 then redis.call('HINCRBY', K[1], 'rused', 1) end -- a pass's first use
  if cap > 0 or group then put(users, pfield, string.format('%d', parts + 1)) end
  local value = A[2] .. ' ' .. A[3] .. ' ' .. A[1] .. ' ' .. sale[2]
  if group then
    if A[8] == 'open' then
      g = {1, sale[9], string.format('%d', now + tonumber(sale[10]) * 1000), '0'}
      redis.call('HSET', K[8], 'members', g[1], 'size', g[2], 'expires', g[3], 'status', g[4])
    elseif redis.call('HINCRBY', K[8], 'members', 1) >= tonumber(g[2]) then
      redis.call('HSET', K[8], 'status', 1)
    end
    list_group(K[10], K[11], K[8], A[9])
    redis.call('HSET', K[9], A[2], A[4] .. ' ' .. A[3])
    value = value .. ' ' .. cap .. ' ' .. A[9] .. ' ' .. g[2] .. ' ' .. g[3]
  elseif cap > 0 then
    value = value .. ' ' .. cap .. ' - 0 0'
  end
  put(queued, A[4], value)
  redis.call('SADD', K[4], A[4])
  since[#since + 1], since[#since + 2] = A[1], A[4]
  if A[5] ~= '' then redis.call('SET', K[5], A[5] .. ' ' .. A[4], 'EX', ARGV[1]) end
  return reserved(avail - qty, K, A)
end
local function reserve(K, A)
  if shut then return shut end
  if get(queued, A[4]) then return reserved(tonumber(sale[1]), K, A) end
  if A[10] == '0' then return decide(K, A) end
  local t = clock_us()
  local nxt = math.max(tonumber(get(users, 'a' .. A[2]) or '0'), tonumber(redis.call('GET', K[6]) or '0'), t) + tonumber(A[10])
  local wait = nxt - tonumber(A[11]) - t
  if wait > 0 then return {-16, string.format('%d', wait)} end
  local allow = string.format('%d', nxt)
  local res = decide(K, A, allow)
  if res[1] ~= 0 then -- not reserved: the allowance goes to its own key, gone once full again
    redis.call('SET', K[6], allow, 'PX', string.format('%d', math.ceil((nxt - t) / 1000)))
  end
  return res
end
-- writes what the reservations so far changed: the users' and the orders' fields, the
-- sale's avail and qunits, and the since index
local function taken()
  for _, h in ipairs({users, queued}) do
    if #h.w > 0 then redis.call('HSET', h.key, unpack(h.w)) end
  end
  if #since > 0 then
    redis.call('HSET', KEYS[1], 'avail', sale[1], 'qunits', sale[7])
    redis.call('ZADD', KEYS[4], unpack(since))
  end
end
local out, k = {}, 6
for a = 2, #ARGV - 1, 13 do
  local A = {unpack(ARGV, a + 1, a + 13)}
  local K = {KEYS[1], KEYS[2], KEYS[3], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[4], nil, nil, KEYS[5], KEYS[6]}
  if A[8] == '' then
    k = k + 3
  else
    K[8], K[9], k = KEYS[k + 4], KEYS[k + 5], k + 5
  end
  local ok, res = pcall(reserve, K, A)
  if not ok then
    taken()
    error(res, 0)
  end
  out[#out + 1] = res
end
taken()
out[#out + 1] = {sale[2] or '0', sale[5] or '0', sale[6] or '0', sale[11] or '0', room}
return out
`)

// IdempotencyTTL is how long an Idempotency-Key is remembered.
const IdempotencyTTL = 24 * time.Hour

// Reservation asks for units of a sale for one user.
type Reservation struct {
	ActivityID int64
	UserID     int64
	Quantity   int
	// OrderID names the order if units are taken.
	OrderID string
	// IdempotencyKey is the client's key, "" for none.
	IdempotencyKey string
	Now            time.Time
	// LockToken and LockTTL take the user's lock (UserLockKey) with the units.
	LockToken string
	LockTTL   time.Duration
	// RedisClock judges the sale's window and the pass by Redis' clock, the same for
	// every API instance; false judges them by Now (tests inject it).
	RedisClock bool
	// PassExpires is when the buyer's pass for this sale expires (a waiting-room
	// sale); zero for none. The caller has verified the pass.
	PassExpires time.Time
	// Group is, in a group-buy sale, the group the seat is in: a new one when
	// OpenGroup, else one to join. "" for a plain purchase.
	Group     string
	OpenGroup bool
	// PerSecond is the user's allowance of attempts per second in this sale, with
	// bursts of ratelimit.Burst(PerSecond); 0 counts this attempt against none (no
	// limit, or the retry of an attempt that met the user's lock).
	PerSecond float64
}

// allowance is a purchase's arguments n=10 and n=11 of the reserve script: the interval
// between two attempts of the user's allowance and its tolerance (a burst's worth), in µs.
func (r Reservation) allowance() (interval, tolerance int64) {
	if r.PerSecond <= 0 {
		return 0, 0
	}
	interval = max(1, int64(1e6/r.PerSecond))
	return interval, interval * int64(ratelimit.Burst(r.PerSecond))
}

// mode is a purchase's argument n=8 of the reserve script: "" a purchase, "open" or "join" a seat (also
// before the group's id is minted: OpenGroup alone says "open").
func (r Reservation) mode() string {
	switch {
	case r.OpenGroup:
		return "open"
	case r.Group == "":
		return ""
	}
	return "join"
}

// Fingerprint is what an Idempotency-Key remembers of the request that used it (the
// quantity, and a seat's group), "" without a key: a replay must match it.
func (r Reservation) Fingerprint() string {
	if r.IdempotencyKey == "" {
		return ""
	}
	fingerprint := "q" + strconv.Itoa(r.Quantity)
	if m := r.mode(); m == "join" {
		fingerprint += ":join:" + r.Group
	} else if m == "open" {
		fingerprint += ":open"
	}
	return fingerprint
}

// clockArg and passArg are a purchase's arguments n=12 and n=13 of the reserve script.
func (r Reservation) clockArg() string {
	if r.RedisClock {
		return "1"
	}
	return ""
}

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
	// Replayed is true when the Idempotency-Key already made OrderID; nothing was taken
	// and no lock is held.
	Replayed bool
	// Available is what is left after this purchase.
	Available  int64
	Limit      int
	PriceCents int64
	PayWindow  time.Duration
	// Participations is the cap on the user's orders the purchase was checked
	// against (0: none).
	Participations int
	// Group is the seat's group after it was taken (a purchase in a group-buy sale).
	Group *Group
	// room: the sale has a waiting room (for the sold-out flag; also set beside
	// errNoneLeft, as Limit is).
	room bool
	// Bucket is the bucket the purchase went to (the buyer's home bucket), set on every
	// answer that came from Redis: Replicas.Confirm takes it.
	Bucket Bucket
}

// Reserve takes r.Quantity units for r.UserID and takes the user's lock, in one round
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
		if flag, recheck = s.soldOut.check(r.ActivityID, r.Now); flag != nil {
			if err := flaggedAnswer(flag, r); err != nil {
				return Reserved{}, err
			}
		}
	}
	epoch := s.soldOut.epoch()
	got, err := s.reserveRouted(ctx, r, fingerprint)
	switch {
	case err == errNoneLeft, err == nil && !got.Replayed && got.Available == 0 && got.Bucket.k <= 1:
		s.soldOut.set(r.ActivityID, epoch, &soldOutFlag{at: r.Now, room: got.room, group: r.mode() != "", limit: got.Limit})
	case recheck != nil:
		s.soldOut.dropRecheck(r.ActivityID, recheck)
	}
	return got, err
}

// errNoneLeft is sold out with no unit left: the answer that sets the sold-out flag.
// ErrSoldOutFlagged is the same answer given by the flag, without Redis: always this
// one value, so a caller may answer it with a body worked out once.
var (
	errNoneLeft       = &DetailError{ErrSoldOut, "no units are left"}
	ErrSoldOutFlagged = &DetailError{ErrSoldOut, "no units are left"}
	errFlaggedSoldOut = ErrSoldOutFlagged
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
// script before it looks at stock) goes to the script, which answers it as ever.
func flaggedAnswer(flag *soldOutFlag, r Reservation) error {
	switch {
	case flag.room && r.PassExpires.IsZero():
		return errFlaggedNotAdmitted
	case flag.group != (r.mode() != ""), r.Quantity > flag.limit:
		return nil
	}
	return errFlaggedSoldOut
}

// FlaggedSoldOut returns the answer Reserve would give purchase r without an
// Idempotency-Key from this process's sold-out flag, without Redis (sold out, or not
// admitted for a waiting-room sale's purchase without a pass), or nil when the flag does
// not answer it now (Reserve may then send it to the script). It reads r's ActivityID,
// Now, Quantity, PassExpires, Group and OpenGroup: a caller checks it before preparing a
// reservation it would not need.
func (s *Stock) FlaggedSoldOut(r Reservation) error {
	if flag := s.soldOut.answers(r.ActivityID, r.Now); flag != nil {
		return flaggedAnswer(flag, r)
	}
	return nil
}

// AnsweredInProcess reports whether Reserve gave err without asking Redis (the
// sold-out flag), so the caller can count the attempt against what this process
// allows (internal/ratelimit) rather than the script's allowance.
func AnsweredInProcess(err error) bool {
	return err == errFlaggedSoldOut || err == errFlaggedNotAdmitted
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
		b := home(r.ActivityID, r.UserID, s.knownBuckets(r.ActivityID))
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
		moved, empty, rerr := s.refill(ctx, b, int64(r.Quantity))
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
	return decodeReserved(r, c.reply, c.terms)
}

// appendReservation adds r's keys (in bucket b) and arguments to a call of
// reserveScript.
func appendReservation(keys []string, args []any, r Reservation, fingerprint string, b Bucket) ([]string, []any) {
	interval, tolerance := r.allowance()
	mode := r.mode()
	keys = append(keys, userQueuedKey(b, r.UserID), idempotencyKey(b, r.UserID, r.IdempotencyKey), rateKey(b, r.UserID))
	if mode != "" {
		keys = append(keys, groupKey(b, r.Group), groupSeatsKey(b, r.Group))
	}
	args = append(args, r.Now.UnixMilli(), r.UserID, r.Quantity, r.OrderID, fingerprint,
		r.LockToken, r.LockTTL.Milliseconds(), mode, r.Group, interval, tolerance, r.clockArg(), r.passArg())
	return keys, args
}

// reserveAll runs reserveScript once for calls, purchases of one bucket of a sale, and
// leaves each one's reply (or the call's error) in it.
func (s *Stock) reserveAll(ctx context.Context, calls []*reserveCall) {
	b := calls[0].b
	keys := make([]string, 0, 6+5*len(calls))
	keys = append(keys, saleKey(b), usersKey(b), queuedKey(b), queuedSinceKey(b), openGroupsKey(b), fillGroupsKey(b))
	args := make([]any, 0, 2+13*len(calls))
	args = append(args, int64(IdempotencyTTL/time.Second), max(1, b.k))
	for _, c := range calls {
		keys, args = appendReservation(keys, args, c.r, c.fingerprint, b)
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

// decodeReserved turns r's reply from reserveScript, with the sale's terms of its call,
// into its answer.
func decodeReserved(r Reservation, res []any, terms saleTerms) (Reserved, error) {
	code, err := integer(res[0])
	if err != nil {
		return Reserved{}, fmt.Errorf("reserve: %w", err)
	}
	switch code {
	case 1, -7:
		id, ok := res[len(res)-1].(string)
		if !ok || len(res) != 2 {
			break
		}
		if code == 1 {
			return Reserved{OrderID: id, Replayed: true}, nil
		}
		return Reserved{}, &KeyReusedError{OrderID: id}
	case -1:
		return Reserved{}, ErrNoSale
	case -2:
		return Reserved{}, ErrBusy
	case -3:
		return Reserved{}, ErrNotStarted
	case -4:
		return Reserved{}, ErrEnded
	case -9:
		return Reserved{}, ErrGroupSale
	case -10:
		return Reserved{}, ErrNotGroupSale
	case -11:
		return Reserved{}, ErrNoGroup
	case -12:
		return Reserved{}, ErrGroupClosed
	case -13:
		return Reserved{}, ErrAlreadyInGroup
	case -14:
		return Reserved{}, ErrGroupFull
	case -17:
		return Reserved{}, ErrNotAdmitted
	case -19:
		return Reserved{}, ErrClosed
	}
	n, err := integers(res[1:])
	if err != nil {
		return Reserved{}, fmt.Errorf("reserve: %w", err)
	}
	switch {
	case code == 0 && (len(n) == 1 || len(n) == 5):
		got := Reserved{OrderID: r.OrderID, Available: n[0], Limit: terms.limit,
			PriceCents: terms.price, PayWindow: terms.payWindow, Participations: terms.cap, room: terms.room}
		if r.Group != "" && len(n) == 5 {
			got.Group = &Group{ID: r.Group, ActivityID: r.ActivityID, Members: int(n[1]), Size: int(n[2]),
				ExpiresAt: time.UnixMilli(n[3]).UTC(), Status: GroupStatus(n[4])}
		}
		return got, nil
	case code == -5 && len(n) == 3:
		if n[0] == 0 {
			return Reserved{Limit: int(n[2]), room: n[1] == 1}, errNoneLeft
		}
		return Reserved{}, &DetailError{ErrSoldOut, fmt.Sprintf("only %d left", n[0])}
	case code == -6 && len(n) == 2:
		return Reserved{}, &DetailError{ErrLimitExceeded,
			fmt.Sprintf("you hold %d of at most %d units", n[0], n[1])}
	case code == -15 && len(n) == 2:
		return Reserved{}, &DetailError{ErrLimitExceeded,
			fmt.Sprintf("you take part %d times, at most %d are allowed", n[0], n[1])}
	case code == -16 && len(n) == 1:
		return Reserved{}, &RateLimitedError{Wait: time.Duration(n[0]) * time.Microsecond}
	case code == -18 && len(n) == 1:
		return Reserved{}, &wrongBucketsError{int(n[0])}
	case code == -8 && len(n) == 1:
		return Reserved{}, &DetailError{ErrQuantityOverLimit,
			fmt.Sprintf("quantity must be between 1 and %d", n[0])}
	}
	return Reserved{}, fmt.Errorf("reserve: unexpected script reply %v", res)
}

// KeyReusedError is ErrKeyReused with the order the key made first.
type KeyReusedError struct{ OrderID string }

func (e *KeyReusedError) Error() string { return ErrKeyReused.Error() }
func (e *KeyReusedError) Unwrap() error { return ErrKeyReused }

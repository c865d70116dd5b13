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

// reserveScript takes units for one purchase, atomically. In a group-buy sale the
// purchase is a seat: it opens a group (the first seat) or joins one, in the same step.
//
// KEYS[1] sale hash         KEYS[2] users hash        KEYS[3] queued hash
// KEYS[4] user's queued set KEYS[5] idempotency key   KEYS[6] user lock
// KEYS[7] queued-since sorted set
// KEYS[8] group hash        KEYS[9] group seats hash  KEYS[10] open groups sorted set
// KEYS[11] open groups, fullest first
// (8-11: any key of the sale's slot for a plain purchase; they are not touched)
// KEYS[12] the user's attempts allowance (rateKey)
// ARGV[1] now (unix ms)     ARGV[2] user id           ARGV[3] quantity
// ARGV[4] order id          ARGV[5] request fingerprint, "" without an Idempotency-Key
// ARGV[6] lock owner token  ARGV[7] lock TTL (ms)     ARGV[8] idempotency key TTL (s)
// ARGV[9] "" a purchase, "open" a new group, "join" a seat in a group
// ARGV[10] the group's id ("" for a purchase)
// ARGV[11] the allowance's interval between attempts (µs; 0: this attempt is not
//
//	counted, no limit or a retry after the lock)  ARGV[12] its tolerance (µs)
//
// ARGV[13] "1": judge the sale's window and the pass by Redis' clock (TIME), else by ARGV[1]
// ARGV[14] the expiry (unix ms) of the buyer's valid pass for this sale, "" for none
//
// Returns one of
//
//	{0, available after, limit, price, pay window, members, size, expires, status, cap}
//	                          reserved; the user lock is now held; members to status
//	                          are the group's after this seat (0 for a purchase); cap
//	                          the sale's cap on participations (0: none)
//	                          (also the answer when ARGV[4] is already queued: a retry of
//	                          a script that ran but whose reply was lost)
//	{1, order id}             the key already made this order with the same body (replay)
//	{-1}                      no such sale (or only a count of a lost one)
//	{-2}                      the user lock is held (an earlier purchase is in flight)
//	{-3} / {-4}               before the sale's start / at or after its end
//	{-5, available}           fewer units left than asked for
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
//
// Only a reservation takes the lock, and every check of the purchase comes after the
// lock check, so a second request of the same user sees the outcome of the first. The
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
// in groups) are the field p<user> of the users hash. Counts computed in Lua
// are written with string.format('%d'): some Redis versions (7.2.0-7.2.4) turn a Lua
// number such as 900000000 into "9e+08", which HINCRBY then refuses.
var reserveScript = redis.NewScript(listGroupLua + `
local sale = redis.call('HMGET', KEYS[1], 'avail', 'limit', 'start', 'end', 'price', 'paywin', 'qunits',
  'kind', 'gsize', 'gwin', 'plimit', 'room')
if not sale[1] or not sale[3] then return {-1} end
local function reserved(avail)
  local cap = sale[11] or '0'
  if ARGV[9] == '' then return {0, avail, sale[2], sale[5], sale[6], 0, 0, 0, 0, cap} end
  local g = redis.call('HMGET', KEYS[8], 'members', 'size', 'expires', 'status')
  return {0, avail, sale[2], sale[5], sale[6], g[1], g[2], g[3], g[4], cap}
end
if redis.call('HEXISTS', KEYS[3], ARGV[4]) == 1 then return reserved(tonumber(sale[1])) end
if ARGV[11] ~= '0' then
  local clock = redis.call('TIME')
  local t = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
  local nxt = math.max(tonumber(redis.call('GET', KEYS[12]) or '0'), t) + tonumber(ARGV[11])
  local wait = nxt - tonumber(ARGV[12]) - t
  if wait > 0 then return {-16, string.format('%d', wait)} end
  redis.call('SET', KEYS[12], string.format('%d', nxt), 'PX', string.format('%d', math.ceil((nxt - t) / 1000)))
end
if ARGV[5] ~= '' then
  local prior = redis.call('GET', KEYS[5])
  if prior then
    local fp, id, mark = string.match(prior, '^(%S+) (%S+)( ?r?)$')
    if fp == ARGV[5] then
      -- A replay while the order is still queued marks the key: the purchase that made
      -- it may yet fail its replicas' confirmation, and its roll-back must then leave
      -- the order standing for this answer (rollbackScript).
      if mark == '' and redis.call('HEXISTS', KEYS[3], id) == 1 then
        redis.call('SET', KEYS[5], prior .. ' r', 'KEEPTTL')
      end
      return {1, id}
    end
    return {-7, id}
  end
end
if redis.call('EXISTS', KEYS[6]) == 1 then return {-2} end
local now = tonumber(ARGV[1])
local clock = now -- one clock for every API instance: Redis'
if ARGV[13] == '1' then local t = redis.call('TIME'); clock = t[1] * 1000 + math.floor(t[2] / 1000) end
if clock < tonumber(sale[3]) then return {-3} end
if clock >= tonumber(sale[4]) then return {-4} end
if sale[12] == '1' and not (clock < (tonumber(ARGV[14]) or 0)) then return {-17} end
local group = sale[8] == 'group'
if ARGV[9] == '' and group then return {-9} end
if ARGV[9] ~= '' and not group then return {-10} end
local g -- the seat's group: members, size, expires, status
if ARGV[9] == 'join' then
  g = redis.call('HMGET', KEYS[8], 'members', 'size', 'expires', 'status')
  if not g[1] then return {-11} end
  if redis.call('HEXISTS', KEYS[9], ARGV[2]) == 1 then return {-13} end
  if g[4] == '1' or tonumber(g[1]) >= tonumber(g[2]) then return {-14} end
  if g[4] ~= '0' or now >= tonumber(g[3]) then return {-12} end
end
local qty, limit, avail = tonumber(ARGV[3]), tonumber(sale[2]), tonumber(sale[1])
if qty > limit then return {-8, limit} end
if avail < qty then return {-5, avail} end
local held = tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0')
if held + qty > limit then return {-6, held, limit} end
local cap, pfield = tonumber(sale[11] or '0'), 'p' .. ARGV[2]
if cap > 0 then
  local parts = tonumber(redis.call('HGET', KEYS[2], pfield) or '0')
  if parts >= cap then return {-15, parts, cap} end
end
redis.call('HSET', KEYS[1], 'avail', string.format('%d', avail - qty),
  'qunits', string.format('%d', tonumber(sale[7] or '0') + qty))
redis.call('HINCRBY', KEYS[2], ARGV[2], qty)
if sale[12] == '1' and held == 0 then redis.call('HINCRBY', KEYS[1], 'rused', 1) end -- a pass's first use
if cap > 0 or group then redis.call('HINCRBY', KEYS[2], pfield, 1) end
local value = ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[1] .. ' ' .. sale[2]
if group then
  if ARGV[9] == 'open' then
    g = {1, sale[9], string.format('%d', now + tonumber(sale[10]) * 1000), '0'}
    redis.call('HSET', KEYS[8], 'members', g[1], 'size', g[2], 'expires', g[3], 'status', g[4])
  elseif redis.call('HINCRBY', KEYS[8], 'members', 1) >= tonumber(g[2]) then
    redis.call('HSET', KEYS[8], 'status', 1)
  end
  list_group(KEYS[10], KEYS[11], KEYS[8], ARGV[10])
  redis.call('HSET', KEYS[9], ARGV[2], ARGV[4] .. ' ' .. ARGV[3])
  value = value .. ' ' .. cap .. ' ' .. ARGV[10] .. ' ' .. g[2] .. ' ' .. g[3]
elseif cap > 0 then
  value = value .. ' ' .. cap .. ' - 0 0'
end
redis.call('HSET', KEYS[3], ARGV[4], value)
redis.call('SADD', KEYS[4], ARGV[4])
redis.call('ZADD', KEYS[7], ARGV[1], ARGV[4])
if ARGV[5] ~= '' then redis.call('SET', KEYS[5], ARGV[5] .. ' ' .. ARGV[4], 'EX', ARGV[8]) end
redis.call('SET', KEYS[6], ARGV[6], 'PX', ARGV[7])
return reserved(avail - qty)
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

// allowance is the reserve script's ARGV[11] and ARGV[12]: the interval between two
// attempts of the user's allowance and its tolerance (a burst's worth), in µs.
func (r Reservation) allowance() (interval, tolerance int64) {
	if r.PerSecond <= 0 {
		return 0, 0
	}
	interval = max(1, int64(1e6/r.PerSecond))
	return interval, interval * int64(ratelimit.Burst(r.PerSecond))
}

// mode is the reserve script's ARGV[9].
func (r Reservation) mode() string {
	switch {
	case r.Group == "":
		return ""
	case r.OpenGroup:
		return "open"
	}
	return "join"
}

// clockArg and passArg are the reserve script's ARGV[13] and ARGV[14].
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
	fingerprint := ""
	var recheck *soldOutFlag
	if r.IdempotencyKey != "" {
		fingerprint = "q" + strconv.Itoa(r.Quantity) // a replay is answered even when sold out
		if m := r.mode(); m == "join" {
			fingerprint += ":join:" + r.Group
		} else if m == "open" {
			fingerprint += ":open"
		}
	} else {
		var soldOut bool
		if soldOut, recheck = s.soldOut.check(r.ActivityID, r.Now); soldOut {
			return Reserved{}, errFlaggedSoldOut
		}
	}
	epoch := s.soldOut.epoch()
	got, err := s.reserve(ctx, r, fingerprint)
	switch {
	case errors.Is(err, errNoneLeft), err == nil && !got.Replayed && got.Available == 0:
		s.soldOut.set(r.ActivityID, epoch, r.Now)
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
)

// FlaggedSoldOut returns the sold-out answer Reserve would give a purchase without an
// Idempotency-Key from this process's flag, without Redis, or nil when the flag does
// not answer for the sale now (Reserve may then send one purchase to re-check it). A
// caller checks it before preparing a reservation it would not need.
func (s *Stock) FlaggedSoldOut(activityID int64, now time.Time) error {
	if s.soldOut.answers(activityID, now) {
		return errFlaggedSoldOut
	}
	return nil
}

// AnsweredInProcess reports whether Reserve gave err without asking Redis (the
// sold-out flag), so the caller can count the attempt against what this process
// allows (internal/ratelimit) rather than the script's allowance.
func AnsweredInProcess(err error) bool { return errors.Is(err, errFlaggedSoldOut) }

func (s *Stock) reserve(ctx context.Context, r Reservation, fingerprint string) (Reserved, error) {
	keys := []string{saleKey(r.ActivityID), usersKey(r.ActivityID), queuedKey(r.ActivityID),
		userQueuedKey(r.ActivityID, r.UserID), idempotencyKey(r.ActivityID, r.UserID, r.IdempotencyKey),
		UserLockKey(r.ActivityID, r.UserID), queuedSinceKey(r.ActivityID),
		groupKey(r.ActivityID, r.Group), groupSeatsKey(r.ActivityID, r.Group), openGroupsKey(r.ActivityID),
		fillGroupsKey(r.ActivityID), rateKey(r.ActivityID, r.UserID)}
	interval, tolerance := r.allowance()
	var res []any
	err := whileMoving(ctx, s.rdb, func() (err error) {
		res, err = reply(reserveScript.Run(ctx, s.rdb, keys,
			r.Now.UnixMilli(), r.UserID, r.Quantity, r.OrderID, fingerprint,
			r.LockToken, r.LockTTL.Milliseconds(), int64(IdempotencyTTL/time.Second), r.mode(), r.Group,
			interval, tolerance, r.clockArg(), r.passArg()).Result())
		return err
	})
	if err != nil {
		return Reserved{}, fmt.Errorf("reserve: %w", err)
	}
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
	}
	n, err := integers(res[1:])
	if err != nil {
		return Reserved{}, fmt.Errorf("reserve: %w", err)
	}
	switch {
	case code == 0 && len(n) == 9:
		got := Reserved{OrderID: r.OrderID, Available: n[0], Limit: int(n[1]),
			PriceCents: n[2], PayWindow: time.Duration(n[3]) * time.Second, Participations: int(n[8])}
		if r.Group != "" {
			got.Group = &Group{ID: r.Group, ActivityID: r.ActivityID, Members: int(n[4]), Size: int(n[5]),
				ExpiresAt: time.UnixMilli(n[6]).UTC(), Status: GroupStatus(n[7])}
		}
		return got, nil
	case code == -5 && len(n) == 1:
		if n[0] == 0 {
			return Reserved{}, errNoneLeft
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

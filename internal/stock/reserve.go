package stock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/ratelimit"
)

// reserveScript takes units for the purchases of one sale's bucket, atomically, each
// decided on its own and in the order given, as if each ran alone after the one before
// (reserve.lua). Its KEYS and ARGV are laid out below (callKeys and the rest), which
// the script's generated section unpacks by name.
//
//go:embed reserve.lua
var reserveLua string
var reserveScript = redis.NewScript(reserveLua)

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
	switch {
	case err == errNoneLeft, err == nil && !got.Replayed && got.Available == 0 && got.Bucket.k <= 1:
		s.soldOut.set(r.ActivityID, r.Variant, epoch, &soldOutFlag{at: r.Now, room: got.room, group: r.mode() != "", limit: got.Limit})
	case recheck != nil:
		s.soldOut.dropRecheck(r.ActivityID, r.Variant, recheck)
	}
	return got, err
}

// errNoneLeft is sold out with no unit left: the answer that sets the sold-out flag.
// ErrSoldOutFlagged is the same answer given by the flag, without Redis: always this
// One value, so a caller may answer it with a body worked out once.
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
	return err == ErrSoldOutFlagged || err == errFlaggedNotAdmitted
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
		b := Home(r.ActivityID, r.Buyer, s.KnownBuckets(r.ActivityID))
		got, err := s.reserve(ctx, r, fingerprint, b)
		got.Bucket = b
		var wrong *wrongBucketsError
		switch {
		case errors.As(err, &wrong):
			if wrong.k == b.k || wrong.k < 1 || wrong.k > MaxBuckets {
				return got, fmt.Errorf("reserve: sale %d has %d buckets", r.ActivityID, wrong.k)
			}
			s.LearnBuckets(r.ActivityID, wrong.k)
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
	{"sale", SaleKey},              // the sale's hash
	{"users", UsersKey},            // per buyer: units, lock, allowance, participations
	{"queued", QueuedKey},          // order id -> queued value (queued.go)
	{"since", QueuedSinceKey},      // queued order ids by when they were taken
	{"open_groups", OpenGroupsKey}, // open groups by the end of their window
	{"fill_groups", FillGroupsKey}, // open groups, fullest first
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
	{"user_queued_key", func(b Bucket, r Reservation) string { return UserQueuedKey(b, r.Buyer) }},
	{"idempotency_key", func(b Bucket, r Reservation) string { return IdempotencyKey(b, r.Buyer, r.IdempotencyKey) }},
	{"allowance_key", func(b Bucket, r Reservation) string { return RateKey(b, r.Buyer) }},
}, []purchaseKey{
	{"group_key", func(b Bucket, r Reservation) string { return GroupKey(b, r.Group) }},
	{"seats_key", func(b Bucket, r Reservation) string { return GroupSeatsKey(b, r.Group) }},
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
// returns the purchases' tables in order: the section "layout" of reserve.lua.
func layoutLua() string {
	var b strings.Builder
	b.WriteString("local K = {")
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
	err := WhileMoving(ctx, s.rdb, func() (err error) {
		res, err = Reply(reserveScript.Run(ctx, s.rdb, keys, args...).Result())
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
		if c.reply, c.err = Reply(res[i], nil); c.err != nil {
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
	vs, err := Reply(v, nil)
	if err != nil {
		return saleTerms{}, err
	}
	n, err := Integers(vs)
	if err != nil || len(n) != 5 {
		return saleTerms{}, fmt.Errorf("unexpected sale terms %v in the script's reply", vs)
	}
	return saleTerms{limit: int(n[0]), price: n[1], payWindow: time.Duration(n[2]) * time.Second,
		cap: int(n[3]), room: n[4] == 1}, nil
}

// Package reserve is the purchase path in Redis: one atomic script per call
// (reserve.lua) takes the units of the purchases that waited in this process at the
// same moment (coalesce.go), in the buyers' home bucket, with their locks; a sale found
// sold out is answered from a flag in this process until units come back (soldout.go);
// the buyers' locks are released once the orders are enqueued (userlock.go). A bucket
// that runs short refills from the others (internal/stock/moves).
package reserve

//go:generate go test -run ^TestScripts$ -args -update

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/ratelimit"
	"seckill/internal/stock"
	"seckill/internal/stock/group"
	"seckill/internal/stock/moves"
)

// Reserver takes units for purchases: the purchase path of one process.
type Reserver struct {
	sk        *stock.Stock
	rdb       redis.UniversalClient
	soldOut   *soldOutFlags
	reserving *coalescer
	moves     *moves.Mover
}

// New returns the purchase path of this process on sk. Make one per process: it
// gathers the purchases that wait at the same moment into one script call, and keeps
// the sold-out flags, which sk's UnitsBack and Watch clear.
func New(sk *stock.Stock) *Reserver {
	r := &Reserver{sk: sk, rdb: sk.Redis(), soldOut: newSoldOutFlags(), moves: moves.New(sk)}
	r.reserving = newCoalescer(r.reserveAll)
	sk.OnUnitsBack(r.soldOut.clear)
	return r
}

// queued is the order reservation r queued, as the reserve script answered it (got);
// fingerprint is r.Fingerprint().
func (r Reservation) queued(got Reserved, fingerprint string) stock.QueuedOrder {
	q := stock.QueuedOrder{OrderID: r.OrderID, ActivityID: r.ActivityID, Buyer: r.Buyer, Quantity: r.Quantity,
		CreatedAt: r.Now, Limit: got.Limit, ParticipationCap: got.ParticipationCap,
		IdempotencyKey: r.IdempotencyKey, Fingerprint: fingerprint, Variant: r.Variant, EarlyAccess: got.EarlyAccess}
	if got.Group != nil {
		q.Group, q.GroupSize, q.GroupExpiresAt = got.Group.ID, got.Group.Size, got.Group.ExpiresAt
	}
	return q.Priced(stock.Sale{PriceCents: got.PriceCents, PayWindow: got.PayWindow})
}

// reserveScript takes units for the purchases of one sale's bucket, atomically, each
// decided on its own and in the order given, as if each ran alone after the one before
// (reserve.lua). Its KEYS and ARGV are laid out below (callKeys and the rest), which
// the script's generated section unpacks by name.
//
//go:embed reserve.lua
var reserveLua string

var reserveScript = stock.NewScript(reserveLua, nil)

// IdempotencyTTL is how long an Idempotency-Key is remembered.
const IdempotencyTTL = 24 * time.Hour

// Reservation asks for units of a sale for one purchase.
type Reservation struct {
	stock.Purchase
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
	// Timeout bounds Reserve's work in Redis from its start, as a deadline of its ctx
	// would (0: ctx's alone), without a timer of its own per purchase: the script call
	// that carries it ends at the earliest deadline of its purchases.
	Timeout time.Duration
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
	Order stock.QueuedOrder
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
	Group *group.Group
	// room: the sale has a waiting room (for the sold-out flag; also set beside
	// errNoneLeft, as Limit is).
	room bool
	// Bucket is the bucket the purchase went to (the buyer's home bucket), set on every
	// answer that came from Redis: Replicas.Confirm takes it.
	Bucket stock.Bucket
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
func (s *Reserver) Reserve(ctx context.Context, r Reservation) (Reserved, error) {
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
	noneLeft := err == errNoneLeft || err == nil && !got.Replayed && got.Available == 0 && got.Bucket.K() <= 1
	switch {
	case noneLeft && r.AccessCode == "":
		s.soldOut.set(r.ActivityID, r.Variant, epoch, &soldOutFlag{at: r.Now, room: got.room, group: r.Mode() != "", limit: got.Limit})
	case recheck != nil:
		s.soldOut.dropRecheck(r.ActivityID, r.Variant, recheck)
	}
	return got, err
}

// errNoneLeft is sold out with no unit left: the answer that sets the sold-out flag.
// ErrSoldOutFlagged is the same answer given by the flag, without Redis: always this
// One value, so a caller may answer it with a body worked out once.
var (
	errNoneLeft       = &stock.DetailError{Err: stock.ErrSoldOut, Detail: "no units are left"}
	ErrSoldOutFlagged = &stock.DetailError{Err: stock.ErrSoldOut, Detail: "no units are left"}
	// errNoneLeftNow is sold out in a sale of several buckets while units are on their
	// way between buckets: not the answer that sets the flag.
	errNoneLeftNow = &stock.DetailError{Err: stock.ErrSoldOut, Detail: "no units are left right now"}
	// errFlaggedNotAdmitted is the flag's answer to a purchase without a pass in a
	// waiting-room sale: the script would refuse it so before it looked at stock.
	errFlaggedNotAdmitted = &stock.DetailError{Err: stock.ErrNotAdmitted, Detail: "no pass came with the purchase"}
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
	case flag.group != (r.Mode() != ""), stock.QuantityOverLimit(r.Quantity, flag.limit):
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
func (s *Reserver) FlaggedSoldOut(r Reservation) error {
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
func (s *Reserver) reserveRouted(ctx context.Context, r Reservation, fingerprint string) (Reserved, error) {
	var deadline time.Time
	if r.Timeout > 0 {
		deadline = time.Now().Add(r.Timeout)
	}
	refills := 0
	for {
		b := stock.Home(r.ActivityID, r.Buyer, s.sk.KnownBuckets(r.ActivityID))
		got, err := s.reserve(ctx, deadline, r, fingerprint, b)
		got.Bucket = b
		var wrong *wrongBucketsError
		switch {
		case errors.As(err, &wrong):
			if wrong.k == b.K() || wrong.k < 1 || wrong.k > stock.MaxBuckets {
				return got, fmt.Errorf("reserve: sale %d has %d buckets", r.ActivityID, wrong.k)
			}
			s.sk.LearnBuckets(r.ActivityID, wrong.k)
			continue
		case b.K() <= 1 || !errors.Is(err, stock.ErrSoldOut):
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
		moved, empty, rerr := s.refill(ctx, deadline, b, r)
		switch {
		case rerr != nil: // a bucket closed for a rebuild or lost (ErrNoSale), or Redis failing
			return got, fmt.Errorf("move units to bucket %d: %w", b.N(), rerr)
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

// refill moves units into bucket b for purchase r (reserveRouted), by deadline (zero:
// ctx's alone).
func (s *Reserver) refill(ctx context.Context, deadline time.Time, b stock.Bucket, r Reservation) (moved int64, empty bool, err error) {
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	return s.moves.Refill(ctx, b, int64(r.Quantity), r.Variant)
}

func (s *Reserver) reserve(ctx context.Context, deadline time.Time, r Reservation, fingerprint string, b stock.Bucket) (Reserved, error) {
	c := &reserveCall{ctx: ctx, deadline: deadline, r: r, fingerprint: fingerprint, b: b, done: make(chan struct{})}
	s.reserving.do(c)
	if c.err != nil {
		return Reserved{}, fmt.Errorf("reserve: %w", c.err)
	}
	return decodeReserved(r, fingerprint, c.reply, c.terms)
}

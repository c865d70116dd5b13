package stock

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The reserve script's replies to one purchase: a code, then the values the code says.
// reserveReplies names each code for the script (whose Lua constants repliesLua writes
// from it) and gives a refusal's sentinel error; decodeReserved turns a reply into the
// purchase's answer.
const (
	replyReserved          = 0   // units left after it; a seat adds its group's members, size, expires, status
	replyReplayed          = 1   // the order the Idempotency-Key made with the same body
	replyNoSale            = -1  // no such sale (or only the counts of a lost one)
	replyBusy              = -2  // the user's lock is held: an earlier purchase is in flight
	replyNotStarted        = -3  // before the sale's start
	replyEnded             = -4  // at or after the sale's end
	replySoldOut           = -5  // units left (fewer than asked), room (1: a waiting room), the per-user limit
	replyOverLimit         = -6  // units held, the per-user limit: the purchase would pass it
	replyKeyReused         = -7  // the order the Idempotency-Key made with another body
	replyQuantityOverLimit = -8  // the per-user limit, which the quantity alone is above
	replyGroupSale         = -9  // a plain purchase in a group-buy sale
	replyNotGroupSale      = -10 // a seat in a plain sale
	replyNoGroup           = -11 // no such group
	replyGroupClosed       = -12 // the group failed, or its window has passed
	replyAlreadyInGroup    = -13 // the user holds a seat in the group
	replyGroupFull         = -14 // no seat is left: the group is complete
	replyOverCap           = -15 // participations held, the cap on them: the purchase would pass it
	replyRateLimited       = -16 // µs until the user's next attempt is allowed
	replyNotAdmitted       = -17 // a waiting-room sale and no unexpired pass
	replyWrongBuckets      = -18 // the sale's buckets, not those the caller sent: nothing decided
	replyClosed            = -19 // the sale is closed while it is rebuilt (bucket.go)
	replyNoVariant         = -20 // no variant of the sale named, or one named in a sale without variants
	replyOverVariantLimit  = -21 // units of the variant held, the per-variant limit: the purchase would pass it
	replyReservedEarly     = 2   // as replyReserved, in the sale's early window (with an access code)
	replyCodeInvalid       = -22 // before the start, an access code the sale does not have, or revoked
	replyCodeTaken         = -23 // before the start, an access code another buyer owns
)

// reserveReply is one of the reserve script's reply codes: its Lua constant's name, how
// many values follow the code (a seat's replyReserved has four more), and for a refusal
// its sentinel error (nil: an answer made of the values).
type reserveReply struct {
	code   int
	lua    string
	values int
	err    error
}

// reserveReplies are all the reserve script's reply codes.
var reserveReplies = []reserveReply{
	{replyReserved, "RESERVED", 1, nil},
	{replyReplayed, "REPLAYED", 1, nil},
	{replyNoSale, "NO_SALE", 0, ErrNoSale},
	{replyBusy, "BUSY", 0, ErrBusy},
	{replyNotStarted, "NOT_STARTED", 0, ErrNotStarted},
	{replyEnded, "ENDED", 0, ErrEnded},
	{replySoldOut, "SOLD_OUT", 3, ErrSoldOut},
	{replyOverLimit, "OVER_LIMIT", 2, ErrLimitExceeded},
	{replyKeyReused, "KEY_REUSED", 1, ErrKeyReused},
	{replyQuantityOverLimit, "QUANTITY_OVER_LIMIT", 1, ErrQuantityOverLimit},
	{replyGroupSale, "GROUP_SALE", 0, ErrGroupSale},
	{replyNotGroupSale, "NOT_GROUP_SALE", 0, ErrNotGroupSale},
	{replyNoGroup, "NO_GROUP", 0, ErrNoGroup},
	{replyGroupClosed, "GROUP_CLOSED", 0, ErrGroupClosed},
	{replyAlreadyInGroup, "ALREADY_IN_GROUP", 0, ErrAlreadyInGroup},
	{replyGroupFull, "GROUP_FULL", 0, ErrGroupFull},
	{replyOverCap, "OVER_CAP", 2, ErrLimitExceeded},
	{replyRateLimited, "RATE_LIMITED", 1, ErrRateLimited},
	{replyNotAdmitted, "NOT_ADMITTED", 0, ErrNotAdmitted},
	{replyWrongBuckets, "WRONG_BUCKETS", 1, nil},
	{replyClosed, "CLOSED", 0, ErrClosed},
	{replyNoVariant, "NO_VARIANT", 0, ErrNoVariant},
	{replyOverVariantLimit, "OVER_VARIANT_LIMIT", 2, ErrLimitExceeded},
	{replyReservedEarly, "RESERVED_EARLY", 1, nil},
	{replyCodeInvalid, "CODE_INVALID", 0, ErrCodeInvalid},
	{replyCodeTaken, "CODE_TAKEN", 0, ErrCodeTaken},
}

// repliesLua defines the reply codes as Lua constants, from reserveReplies.
func repliesLua() string {
	names, codes := make([]string, len(reserveReplies)), make([]string, len(reserveReplies))
	for i, r := range reserveReplies {
		names[i], codes[i] = r.lua, strconv.Itoa(r.code)
	}
	return "\nlocal " + strings.Join(names, ", ") + " = " + strings.Join(codes, ", ") + "\n"
}

// IsRefusal reports whether err is a purchase's refusal (one of Refusals, also when the
// sold-out flag answered it): nothing was taken, and it is the answer, not a failure.
// ErrBusy is one too, which a caller may wait out.
func IsRefusal(err error) bool {
	for _, r := range reserveReplies {
		if r.err != nil && errors.Is(err, r.err) {
			return true
		}
	}
	return false
}

// Refusals returns the sentinel errors of a purchase's refusals, for a caller that maps
// each one to an answer.
func Refusals() []error {
	var out []error
	for _, r := range reserveReplies {
		if r.err != nil && !slices.Contains(out, r.err) {
			out = append(out, r.err)
		}
	}
	return out
}

// decodeReserved turns r's reply from reserveScript, with the sale's terms of its call,
// into its answer: the reservation, or the refusal's error; fingerprint is r's
// (Reservation.Fingerprint), worked out once per purchase. A reply of an unknown code or
// of other values than its code's is an error.
func decodeReserved(r Reservation, fingerprint string, res []any, terms saleTerms) (Reserved, error) {
	code, err := integer(res[0])
	if err != nil {
		return Reserved{}, fmt.Errorf("reserve: %w", err)
	}
	i := slices.IndexFunc(reserveReplies, func(r reserveReply) bool { return int64(r.code) == code })
	reserved := code == replyReserved || code == replyReservedEarly
	seat := reserved && r.Group != "" && len(res) == 6
	if i < 0 || len(res)-1 != reserveReplies[i].values && !seat {
		return Reserved{}, fmt.Errorf("reserve: unexpected script reply %v", res)
	}
	if code == replyReplayed || code == replyKeyReused {
		id, ok := res[1].(string)
		switch {
		case !ok:
			return Reserved{}, fmt.Errorf("reserve: unexpected script reply %v", res)
		case code == replyReplayed:
			return Reserved{OrderID: id, Replayed: true}, nil
		}
		return Reserved{}, &KeyReusedError{OrderID: id}
	}
	n, err := integers(res[1:])
	if err != nil {
		return Reserved{}, fmt.Errorf("reserve: %w", err)
	}
	switch code {
	case replyReserved, replyReservedEarly:
		got := Reserved{OrderID: r.OrderID, Available: n[0], Limit: terms.limit, EarlyAccess: code == replyReservedEarly,
			PriceCents: terms.price, PayWindow: terms.payWindow, ParticipationCap: terms.cap, room: terms.room}
		if seat {
			got.Group = &Group{ID: r.Group, ActivityID: r.ActivityID, Members: int(n[1]), Size: int(n[2]),
				ExpiresAt: time.UnixMilli(n[3]).UTC(), Status: GroupStatus(n[4])}
		}
		got.Order = r.queued(got, fingerprint)
		return got, nil
	case replySoldOut:
		if n[0] == 0 {
			return Reserved{Limit: int(n[2]), room: n[1] == 1}, errNoneLeft
		}
		return Reserved{}, &DetailError{ErrSoldOut, fmt.Sprintf("only %d left", n[0])}
	case replyOverLimit:
		return Reserved{}, &DetailError{ErrLimitExceeded, fmt.Sprintf("you hold %d of at most %d units", n[0], n[1])}
	case replyOverVariantLimit:
		return Reserved{}, &DetailError{ErrLimitExceeded, fmt.Sprintf("you hold %d of at most %d units of this variant", n[0], n[1])}
	case replyOverCap:
		return Reserved{}, &DetailError{ErrLimitExceeded,
			fmt.Sprintf("you take part %d times, at most %d are allowed", n[0], n[1])}
	case replyQuantityOverLimit:
		return Reserved{}, &DetailError{ErrQuantityOverLimit, fmt.Sprintf("quantity must be between 1 and %d", n[0])}
	case replyRateLimited:
		return Reserved{}, &RateLimitedError{Wait: time.Duration(n[0]) * time.Microsecond}
	case replyWrongBuckets:
		return Reserved{}, &wrongBucketsError{int(n[0])}
	}
	return Reserved{}, reserveReplies[i].err
}

// KeyReusedError is ErrKeyReused with the order the key made first.
type KeyReusedError struct{ OrderID string }

func (e *KeyReusedError) Error() string { return ErrKeyReused.Error() }
func (e *KeyReusedError) Unwrap() error { return ErrKeyReused }

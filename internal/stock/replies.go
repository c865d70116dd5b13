package stock

import (
	"errors"
	"slices"
	"strconv"
	"strings"
)

// The reserve script's replies to one purchase: a code, then the values the code says.
// PurchaseReplies names each code for the script (whose Lua constants repliesLua writes
// from it) and gives a refusal's sentinel error; decodeReserved turns a reply into the
// purchase's answer.
const (
	ReplyReserved          = 0   // units left after it; a seat adds its group's members, size, expires, status
	ReplyReplayed          = 1   // the order the Idempotency-Key made with the same body
	ReplyNoSale            = -1  // no such sale (or only the counts of a lost one)
	ReplyBusy              = -2  // the user's lock is held: an earlier purchase is in flight
	ReplyNotStarted        = -3  // before the sale's start
	ReplyEnded             = -4  // at or after the sale's end
	ReplySoldOut           = -5  // units left (fewer than asked), room (1: a waiting room), the per-user limit
	ReplyOverLimit         = -6  // units held, the per-user limit: the purchase would pass it
	ReplyKeyReused         = -7  // the order the Idempotency-Key made with another body
	ReplyQuantityOverLimit = -8  // the per-user limit, which the quantity alone is above
	ReplyGroupSale         = -9  // a plain purchase in a group-buy sale
	ReplyNotGroupSale      = -10 // a seat in a plain sale
	ReplyNoGroup           = -11 // no such group
	ReplyGroupClosed       = -12 // the group failed, or its window has passed
	ReplyAlreadyInGroup    = -13 // the user holds a seat in the group
	ReplyGroupFull         = -14 // no seat is left: the group is complete
	ReplyOverCap           = -15 // participations held, the cap on them: the purchase would pass it
	ReplyRateLimited       = -16 // µs until the user's next attempt is allowed
	ReplyNotAdmitted       = -17 // a waiting-room sale and no unexpired pass
	ReplyWrongBuckets      = -18 // the sale's buckets, not those the caller sent: nothing decided
	ReplyClosed            = -19 // the sale is closed while it is rebuilt (bucket.go)
	ReplyNoVariant         = -20 // no variant of the sale named, or one named in a sale without variants
	ReplyOverVariantLimit  = -21 // units of the variant held, the per-variant limit: the purchase would pass it
	ReplyReservedEarly     = 2   // as ReplyReserved, in the sale's early window (with an access code)
	ReplyCodeInvalid       = -22 // before the start, an access code the sale does not have, or revoked
	ReplyCodeTaken         = -23 // before the start, an access code another buyer owns
)

// PurchaseReply is one of the reserve script's reply codes: its Lua constant's name, how
// many values follow the code (a seat's ReplyReserved has four more), and for a refusal
// its sentinel error (nil: an answer made of the values).
type PurchaseReply struct {
	Code   int
	Lua    string
	Values int
	Err    error
}

// PurchaseReplies are all the reserve script's reply codes.
var PurchaseReplies = []PurchaseReply{
	{ReplyReserved, "RESERVED", 1, nil},
	{ReplyReplayed, "REPLAYED", 1, nil},
	{ReplyNoSale, "NO_SALE", 0, ErrNoSale},
	{ReplyBusy, "BUSY", 0, ErrBusy},
	{ReplyNotStarted, "NOT_STARTED", 0, ErrNotStarted},
	{ReplyEnded, "ENDED", 0, ErrEnded},
	{ReplySoldOut, "SOLD_OUT", 3, ErrSoldOut},
	{ReplyOverLimit, "OVER_LIMIT", 2, ErrLimitExceeded},
	{ReplyKeyReused, "KEY_REUSED", 1, ErrKeyReused},
	{ReplyQuantityOverLimit, "QUANTITY_OVER_LIMIT", 1, ErrQuantityOverLimit},
	{ReplyGroupSale, "GROUP_SALE", 0, ErrGroupSale},
	{ReplyNotGroupSale, "NOT_GROUP_SALE", 0, ErrNotGroupSale},
	{ReplyNoGroup, "NO_GROUP", 0, ErrNoGroup},
	{ReplyGroupClosed, "GROUP_CLOSED", 0, ErrGroupClosed},
	{ReplyAlreadyInGroup, "ALREADY_IN_GROUP", 0, ErrAlreadyInGroup},
	{ReplyGroupFull, "GROUP_FULL", 0, ErrGroupFull},
	{ReplyOverCap, "OVER_CAP", 2, ErrLimitExceeded},
	{ReplyRateLimited, "RATE_LIMITED", 1, ErrRateLimited},
	{ReplyNotAdmitted, "NOT_ADMITTED", 0, ErrNotAdmitted},
	{ReplyWrongBuckets, "WRONG_BUCKETS", 1, nil},
	{ReplyClosed, "CLOSED", 0, ErrClosed},
	{ReplyNoVariant, "NO_VARIANT", 0, ErrNoVariant},
	{ReplyOverVariantLimit, "OVER_VARIANT_LIMIT", 2, ErrLimitExceeded},
	{ReplyReservedEarly, "RESERVED_EARLY", 1, nil},
	{ReplyCodeInvalid, "CODE_INVALID", 0, ErrCodeInvalid},
	{ReplyCodeTaken, "CODE_TAKEN", 0, ErrCodeTaken},
}

// repliesLua defines the reply codes as Lua constants, from PurchaseReplies: the section
// "codes" of replies.lua.
func repliesLua() string {
	names, codes := make([]string, len(PurchaseReplies)), make([]string, len(PurchaseReplies))
	for i, r := range PurchaseReplies {
		names[i], codes[i] = r.Lua, strconv.Itoa(r.Code)
	}
	return "local " + strings.Join(names, ", ") + " = " + strings.Join(codes, ", ") + "\n"
}

// IsRefusal reports whether err is a purchase's refusal (one of Refusals, also when the
// sold-out flag answered it): nothing was taken, and it is the answer, not a failure.
// ErrBusy is one too, which a caller may wait out.
func IsRefusal(err error) bool {
	for _, r := range PurchaseReplies {
		if r.Err != nil && errors.Is(err, r.Err) {
			return true
		}
	}
	return false
}

// Refusals returns the sentinel errors of a purchase's refusals, for a caller that maps
// each one to an answer.
func Refusals() []error {
	var out []error
	for _, r := range PurchaseReplies {
		if r.Err != nil && !slices.Contains(out, r.Err) {
			out = append(out, r.Err)
		}
	}
	return out
}

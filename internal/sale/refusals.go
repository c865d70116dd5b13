package sale

import (
	"errors"

	"seckill/internal/stock"
	"seckill/internal/stock/reserve"
	"seckill/internal/stock/settle"
)

// The refusals of a purchase, a seat and a waitlist join, as the service answers them:
// the Redis layer's sentinel errors (internal/stock and its packages), named here so that
// the handler maps them to the HTTP contract without reaching into that layer.
var (
	ErrNotStarted        = stock.ErrNotStarted
	ErrEnded             = stock.ErrEnded
	ErrSoldOut           = stock.ErrSoldOut
	ErrLimitExceeded     = stock.ErrLimitExceeded
	ErrQuantityOverLimit = stock.ErrQuantityOverLimit
	ErrNoVariant         = stock.ErrNoVariant
	ErrKeyReused         = stock.ErrKeyReused
	ErrBusy              = stock.ErrBusy
	ErrRateLimited       = stock.ErrRateLimited
	ErrNotAdmitted       = stock.ErrNotAdmitted
	ErrCodeInvalid       = stock.ErrCodeInvalid
	ErrCodeTaken         = stock.ErrCodeTaken
	ErrNoGroup           = stock.ErrNoGroup
	ErrGroupSale         = stock.ErrGroupSale
	ErrNotGroupSale      = stock.ErrNotGroupSale
	ErrGroupClosed       = stock.ErrGroupClosed
	ErrGroupFull         = stock.ErrGroupFull
	ErrAlreadyInGroup    = stock.ErrAlreadyInGroup
	ErrNotSoldOut        = settle.ErrNotSoldOut
	ErrNoWaitlist        = settle.ErrNoWaitlist

	// ErrSoldOutFlagged is the sold-out answer this process gives from its flag,
	// without Redis: always this one value, so it may be answered with a body worked
	// out once (a variant's is wrapped with the variant's name).
	ErrSoldOutFlagged = reserve.ErrSoldOutFlagged
)

// DetailError is a refusal with a sentence for the buyer (Detail) beside its sentinel
// (Err).
type DetailError = stock.DetailError

// AnsweredInProcess reports whether a purchase's err was answered by this process
// without Redis (the sold-out flag), so that the caller counts the attempt against
// what this process allows (internal/ratelimit) rather than the script's allowance.
func AnsweredInProcess(err error) bool { return reserve.AnsweredInProcess(err) }

// Refusals are the sentinel errors of a purchase's refusals that the service hands its
// caller, for a caller that maps each to an answer. stock.ErrNoSale is not one: the
// service answers it itself (MissingSale).
func Refusals() []error {
	var out []error
	for _, err := range stock.Refusals() {
		if !errors.Is(err, stock.ErrNoSale) {
			out = append(out, err)
		}
	}
	return out
}

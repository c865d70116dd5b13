package stock

import (
	"errors"
	"fmt"
	"time"
)

// ErrClosed means a sale of several buckets is closed for a rebuild: its purchases
// answer as for a missing sale (it is ErrNoSale too) until the rebuild reopens it.
var ErrClosed = fmt.Errorf("%w: closed while it is rebuilt", ErrNoSale)

// Errors of a seat in a group-buy sale. Handlers map them to the HTTP contract.
var (
	ErrGroupSale      = errors.New("this is a group-buy sale: open or join a group")
	ErrNotGroupSale   = errors.New("this sale is not a group-buy sale")
	ErrNoGroup        = errors.New("no such group")
	ErrGroupClosed    = errors.New("the group is no longer open")
	ErrAlreadyInGroup = errors.New("you already hold a seat in this group")
	ErrGroupFull      = errors.New("no seat is left in this group")
)

// KeyReusedError is ErrKeyReused with the order the key made first.
type KeyReusedError struct{ OrderID string }

func (e *KeyReusedError) Error() string { return ErrKeyReused.Error() }

func (e *KeyReusedError) Unwrap() error { return ErrKeyReused }

// ErrNotAdmitted is a purchase of a waiting-room sale without a valid pass.
var ErrNotAdmitted = errors.New("this sale admits buyers through its waiting room: join the line and buy with your pass")

// Errors of an access code presented before the start (early access).
var (
	ErrCodeInvalid = errors.New("the access code is not one of this sale's, or it was revoked")
	ErrCodeTaken   = errors.New("the access code is another buyer's: it serves the first buyer who presented it")
)

// Errors of a purchase. Handlers map them to the HTTP contract.
var (
	ErrNoSale            = errors.New("no such sale in Redis")
	ErrBusy              = errors.New("the same user's previous purchase is still in progress")
	ErrNotStarted        = errors.New("the sale has not started yet")
	ErrEnded             = errors.New("the sale has ended")
	ErrSoldOut           = errors.New("the sale is sold out")
	ErrLimitExceeded     = errors.New("the purchase would exceed the per-user limit")
	ErrQuantityOverLimit = errors.New("quantity is above the per-user limit")
	ErrKeyReused         = errors.New("the Idempotency-Key was used with a different body")
	ErrRateLimited       = errors.New("too many purchase attempts; slow down")
	// ErrNoVariant is a purchase that names no variant of a sale of variants, or names
	// one in a sale without.
	ErrNoVariant = errors.New("variant must name one of the sale's variants")
)

// DetailError is a purchase error with a sentence for the buyer.
type DetailError struct {
	Err    error
	Detail string
}

func (e *DetailError) Error() string { return e.Err.Error() + ": " + e.Detail }

func (e *DetailError) Unwrap() error { return e.Err }

// RateLimitedError is ErrRateLimited with the time until the user's next attempt would
// be allowed.
type RateLimitedError struct{ Wait time.Duration }

func (e *RateLimitedError) Error() string { return ErrRateLimited.Error() }

func (e *RateLimitedError) Unwrap() error { return ErrRateLimited }

// RetryAfter is how long the buyer should wait.
func (e *RateLimitedError) RetryAfter() time.Duration { return e.Wait }

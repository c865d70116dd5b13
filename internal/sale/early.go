package sale

import (
	"context"

	"seckill/internal/accesscode"
)

// CodeKeeper keeps the sales' access codes (internal/accesscode): the service's rebuilds
// write a sale's codes back to Redis before it reopens (internal/upkeep), and the stats
// count them.
type CodeKeeper interface {
	Restore(ctx context.Context, activityID int64) error
	Counts(ctx context.Context, activityID int64) (accesscode.Counts, error)
}

var _ CodeKeeper = (*accesscode.Codes)(nil)

// SetCodes gives the service, and its rebuilds, the sales' access codes.
func (s *Service) SetCodes(c CodeKeeper) {
	s.base.codes = c
	s.base.rebuild.Codes = c
}

// MaxEarlyAccess bounds a sale's early window: a week, in seconds.
const MaxEarlyAccess = 604800

// checkEarlyAccess checks a sale's early window of seconds before its start, for a
// sale of buckets stock buckets, or returns a *FieldError. A sale of several buckets
// has none: a code is owned in one Redis slot (internal/stock/codes), while each
// buyer of such a sale buys in a slot of their own.
func checkEarlyAccess(seconds, buckets int) error {
	switch {
	case seconds < 0 || seconds > MaxEarlyAccess:
		return &FieldError{"early_access_seconds", "must be between 0 and 604800"}
	case seconds > 0 && buckets > 1:
		return &FieldError{"early_access_seconds", "must be 0 for a sale of several stock buckets " +
			"(an access code is kept in one Redis slot)"}
	}
	return nil
}

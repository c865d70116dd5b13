package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	// ErrNotObtained means the lock is held by someone else and the retry
	// strategy gave up. When the context ended first, the error also matches
	// ctx.Err() (context.DeadlineExceeded or context.Canceled), so a timeout
	// can be told apart from a busy lock.
	ErrNotObtained = errors.New("lock: not obtained")

	// ErrNotHeld means Redis does not hold the lock under our token: it
	// expired, was released already, or belongs to someone else. Release and
	// Extend return it; they never touch a lock that is not ours.
	ErrNotHeld = errors.New("lock: not held")

	// ErrLost means a lock we held is known to be gone: a renewal was refused,
	// the key vanished, or the lease deadline passed before a renewal got
	// through. It is the cause of a lost lock's Context and what Extend
	// returns afterwards.
	ErrLost = errors.New("lock: lost")

	// ErrNoOwner means a reentrant lock was asked for with a context that
	// carries no owner; see WithOwner.
	ErrNoOwner = errors.New("lock: no owner in context")

	errClosed = errors.New("lock: client closed")
)

// Script replies: a script returns a non-negative integer value, or one of
// these codes, which scriptResult turns into a sentinel error.
const (
	replyBusy    = -1 // the key is held by another owner
	replyNotHeld = -2 // the key does not hold our token
)

// scriptResult runs a script and returns its integer reply, ErrNotObtained or
// ErrNotHeld for the reply codes above, or an error for anything else.
func scriptResult(ctx context.Context, rdb redis.Scripter, s *redis.Script, keys []string, args ...any) (int64, error) {
	v, err := s.Run(ctx, rdb, keys, args...).Result()
	if err != nil {
		return 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("lock: unexpected script reply %T %v", v, v)
	}
	if err := replyErr(n); err != nil {
		return 0, err
	}
	return n, nil
}

// replyErr is the error of a script's reply code: ErrNotObtained, ErrNotHeld, an
// error for another negative code, nil for a success.
func replyErr(n int64) error {
	switch {
	case n == replyBusy:
		return ErrNotObtained
	case n == replyNotHeld:
		return ErrNotHeld
	case n < 0:
		return fmt.Errorf("lock: unexpected script reply %d", n)
	}
	return nil
}

package stock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"seckill/internal/buyer"
	"seckill/lock"
)

// A buyer's lock in a sale is the buyer's lock field (buyerfields.go) of the users hash
// of the buyer's home bucket, "<owner token> <expiry, unix ms by Redis' clock>": the reserve script takes it
// with the units, in the same HSET as the user's units, and the commit releases the locks
// of its purchases with one script per bucket (ReleaseUserLocks). A field, not a key of its
// own: a key made and deleted per purchase costs the master more than a field written in
// the HSET the purchase makes anyway. A lock is held
// while its field is there and its expiry has not passed; a field left by a process that
// died is taken over by the user's next purchase. Waiting is seckill/lock's: a purchase
// that meets the lock waits with lock.Client.WaitRelease on the name UserLockKey gives it
// (no key has that name; the lock package keeps its waiters list and release channel
// beside it), and a release publishes on that channel only when someone is listed there.

// ErrLockNotHeld is a release of a user lock that no longer holds its owner's token: it
// expired (and may have been taken by another purchase), or was released before.
var ErrLockNotHeld = errors.New("user lock not held")

// releaseLocksScript releases user locks of one bucket (release_locks.lua).
//
//go:embed release_locks.lua
var releaseLocksLua string
var releaseLocksScript = NewScript(releaseLocksLua, releaseCodes)

// releaseCodes are releaseLocksScript's answers per lock: released, or not held
// (ErrLockNotHeld).
var releaseCodes = []Code{{"RELEASED", 1, nil}, {"NOT_HELD", -2, ErrLockNotHeld}}

// maxReleased bounds the locks of one releaseLocksScript call.
const maxReleased = 500

// ReleaseUserLocks releases the user locks the reserve script took for rs (their
// ActivityID, Buyer and LockToken), with one script per bucket (per maxReleased locks).
// A lock that no longer holds its token is left as it is: its error, joined with the
// others, matches ErrLockNotHeld.
func (s *Stock) ReleaseUserLocks(ctx context.Context, rs ...Reservation) error {
	byBucket := map[Bucket][]Reservation{}
	var order []Bucket
	for _, r := range rs {
		b := Home(r.ActivityID, r.Buyer, s.KnownBuckets(r.ActivityID))
		if _, ok := byBucket[b]; !ok {
			order = append(order, b)
		}
		byBucket[b] = append(byBucket[b], r)
	}
	var errs []error
	for _, b := range order {
		for all := byBucket[b]; len(all) > 0; {
			batch := all[:min(len(all), maxReleased)]
			all = all[len(batch):]
			errs = append(errs, s.releaseUserLocks(ctx, b, batch))
		}
	}
	return errors.Join(errs...)
}

func (s *Stock) releaseUserLocks(ctx context.Context, b Bucket, rs []Reservation) error {
	keys := make([]string, 1, 1+len(rs))
	keys[0] = UsersKey(b)
	args := make([]any, 0, 3*len(rs))
	for _, r := range rs {
		name := UserLockKey(b, r.Buyer)
		keys = append(keys, lock.WaitersKey(name))
		args = append(args, r.Buyer.Key(), r.LockToken, lock.ReleaseChannel(name))
	}
	released, err := releaseLocksScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err == nil && len(released) != len(rs) {
		err = fmt.Errorf("%d answers for %d locks", len(released), len(rs))
	}
	if err != nil {
		return fmt.Errorf("release %d user locks of sale %d: %w", len(rs), b.act, err)
	}
	var errs []error
	for i, n := range released {
		if err := AnswerOf(releaseCodes, n); err != nil {
			errs = append(errs, fmt.Errorf("release the lock of buyer %q in sale %d: %w", rs[i].Buyer, b.act, err))
		}
	}
	return errors.Join(errs...)
}

// holdLockScript takes a user lock without units (hold_lock.lua).
//
//go:embed hold_lock.lua
var holdLockLua string
var holdLockScript = NewScript(holdLockLua, holdCodes)

// holdCodes are holdLockScript's answers: the lock taken, or held (ErrBusy).
var holdCodes = []Code{{"LOCK_TAKEN", 1, nil}, {"LOCK_BUSY", 0, ErrBusy}}

// HoldUserLock takes the buyer's lock in a sale with token for ttl, as a purchase does
// but without units, or returns ErrBusy while it is held: for tests and tools that make
// a buyer's purchases wait. ReleaseUserLocks with the same token releases it.
func (s *Stock) HoldUserLock(ctx context.Context, activityID int64, who buyer.ID, token string, ttl time.Duration) error {
	b := Home(activityID, who, s.KnownBuckets(activityID))
	n, err := holdLockScript.Run(ctx, s.rdb, []string{UsersKey(b)}, who.Key(), token, ttl.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("hold the lock of buyer %q in sale %d: %w", who, activityID, err)
	}
	return AnswerOf(holdCodes, n)
}

// UserLocks returns the owner tokens of the live buyer locks of a sale, by buyer. It
// reads every bucket's users hash whole: for tests and tools, not for the purchase path.
func (s *Stock) UserLocks(ctx context.Context, activityID int64) (map[buyer.ID]string, error) {
	sale, err := s.SaleOf(ctx, activityID)
	if err != nil {
		return nil, fmt.Errorf("user locks: %w", err)
	}
	now, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("user locks: %w", err)
	}
	out := map[buyer.ID]string{}
	for _, b := range sale.All() {
		users, err := s.rdb.HGetAll(ctx, UsersKey(b)).Result()
		if err != nil {
			return nil, fmt.Errorf("user locks: %w", err)
		}
		for k, v := range users {
			kind, who, err1 := buyerField(k)
			if kind != lockKind {
				continue
			}
			token, expiry, ok := strings.Cut(v, " ")
			ms, err2 := strconv.ParseInt(expiry, 10, 64)
			if err1 != nil || !ok || err2 != nil {
				return nil, fmt.Errorf("user locks: malformed field %q=%q", k, v)
			}
			if ms > now.UnixMilli() {
				out[who] = token
			}
		}
	}
	return out, nil
}

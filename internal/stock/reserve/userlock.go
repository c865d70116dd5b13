package reserve

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/lock"
)

// UserLockKey names the per-buyer lock of a sale, in the buyer's home bucket, for
// lock.Client.WaitRelease (no key of that name is written: userlock.go). The sale's K
// is the one this process learnt with the buyer's purchase (Reserve): the lock is only
// of interest after one.
func (s *Reserver) UserLockKey(activityID int64, who buyer.ID) string {
	return stock.UserLockKey(stock.Home(activityID, who, s.sk.KnownBuckets(activityID)), who)
}

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

var releaseLocksScript = stock.NewScript(releaseLocksLua, releaseCodes)

// releaseCodes are releaseLocksScript's answers per lock: released, or not held
// (ErrLockNotHeld).
var releaseCodes = []stock.Code{{Lua: "RELEASED", Value: 1}, {Lua: "NOT_HELD", Value: -2, Err: ErrLockNotHeld}}

// maxReleased bounds the locks of one releaseLocksScript call.
const maxReleased = 500

// ReleaseUserLocks releases the user locks the reserve script took for rs (their
// ActivityID, Buyer and LockToken), with one script per bucket (per maxReleased locks).
// A lock that no longer holds its token is left as it is: its error, joined with the
// others, matches ErrLockNotHeld.
func (s *Reserver) ReleaseUserLocks(ctx context.Context, rs ...Reservation) error {
	byBucket := map[stock.Bucket][]Reservation{}
	var order []stock.Bucket
	for _, r := range rs {
		b := stock.Home(r.ActivityID, r.Buyer, s.sk.KnownBuckets(r.ActivityID))
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

func (s *Reserver) releaseUserLocks(ctx context.Context, b stock.Bucket, rs []Reservation) error {
	keys := make([]string, 1, 1+len(rs))
	keys[0] = stock.UsersKey(b)
	args := make([]any, 0, 3*len(rs))
	for _, r := range rs {
		name := stock.UserLockKey(b, r.Buyer)
		keys = append(keys, lock.WaitersKey(name))
		args = append(args, r.Buyer.Key(), r.LockToken, lock.ReleaseChannel(name))
	}
	released, err := releaseLocksScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err == nil && len(released) != len(rs) {
		err = fmt.Errorf("%d answers for %d locks", len(released), len(rs))
	}
	if err != nil {
		return fmt.Errorf("release %d user locks of sale %d: %w", len(rs), b.Activity(), err)
	}
	var errs []error
	for i, n := range released {
		if err := stock.AnswerOf(releaseCodes, n); err != nil {
			errs = append(errs, fmt.Errorf("release the lock of buyer %q in sale %d: %w", rs[i].Buyer, b.Activity(), err))
		}
	}
	return errors.Join(errs...)
}

// holdLockScript takes a user lock without units (hold_lock.lua).
//
//go:embed hold_lock.lua
var holdLockLua string

var holdLockScript = stock.NewScript(holdLockLua, holdCodes)

// holdCodes are holdLockScript's answers: the lock taken, or held (ErrBusy).
var holdCodes = []stock.Code{{Lua: "LOCK_TAKEN", Value: 1}, {Lua: "LOCK_BUSY", Value: 0, Err: stock.ErrBusy}}

// HoldUserLock takes the buyer's lock in a sale with token for ttl, as a purchase does
// but without units, or returns ErrBusy while it is held: for tests and tools that make
// a buyer's purchases wait. ReleaseUserLocks with the same token releases it.
func (s *Reserver) HoldUserLock(ctx context.Context, activityID int64, who buyer.ID, token string, ttl time.Duration) error {
	b := stock.Home(activityID, who, s.sk.KnownBuckets(activityID))
	n, err := holdLockScript.Run(ctx, s.rdb, []string{stock.UsersKey(b)}, who.Key(), token, ttl.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("hold the lock of buyer %q in sale %d: %w", who, activityID, err)
	}
	return stock.AnswerOf(holdCodes, n)
}

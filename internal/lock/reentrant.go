package lock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

type ownerKey struct{}

// WithOwner returns a context that carries a new owner for reentrant locks.
// Go has no thread ids, so the owner travels with the context: every call
// given this context, or one derived from it, is the same owner and may take
// a reentrant lock it already holds. Give a goroutine that must not share the
// holds its own WithOwner context.
func WithOwner(ctx context.Context) context.Context {
	return context.WithValue(ctx, ownerKey{}, NewToken())
}

// Owner returns the reentrant-lock owner ctx carries, if any.
func Owner(ctx context.Context) (string, bool) {
	owner, ok := ctx.Value(ownerKey{}).(string)
	return owner, ok
}

// reentrant keeps reentrant locks in a hash of owner -> hold count. The hash
// has one field at a time: the owner that holds the lock.
type reentrant struct{ c *Client }

// ObtainReentrant takes the reentrant lock named key for the owner ctx
// carries (see WithOwner), retrying as opts.Retry says while another owner
// holds it. When the owner already holds it, ObtainReentrant counts one more
// hold at once, keeps the fencing token, and refreshes the TTL to ttl (never
// shortening it). Each Lock it returns is one hold: the key goes when the last
// hold is released.
//
// A reentrant lock is a Redis hash; do not use the same key with Obtain.
// Without an owner in ctx it returns ErrNoOwner.
func (c *Client) ObtainReentrant(ctx context.Context, key string, ttl time.Duration, opts *Options) (*Lock, error) {
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	owner, ok := Owner(ctx)
	if !ok {
		return nil, ErrNoOwner
	}
	store := reentrant{c}
	keys := []string{key, fenceKey(key), waitersKey(key)}
	try := func(ctx context.Context, as listing) (*Lock, error) {
		start := time.Now()
		args := append([]any{owner, ttl.Milliseconds()}, as.args()...)
		fence, err := scriptResult(ctx, c.rdb, reentrantObtainScript, keys, args...)
		if err != nil {
			return nil, err
		}
		return newLock(ctx, store, key, owner, fence, ttl, start), nil
	}
	return obtain(ctx, c.lines, key, opts, false, try)
}

// Holds returns how many holds the owner ctx carries has on the reentrant
// lock named key: 0 when it holds none or carries no owner.
func (c *Client) Holds(ctx context.Context, key string) (int, error) {
	owner, ok := Owner(ctx)
	if !ok {
		return 0, nil
	}
	n, err := c.rdb.HGet(ctx, key, owner).Int()
	if err == redis.Nil {
		return 0, nil
	}
	return n, err
}

// reentrantObtainScript takes a free reentrant lock, or counts one more hold
// for its owner; it lists or delists the waiting Client (see waitersLua).
//
//	KEYS[1] lock hash (owner -> holds)   ARGV[1] owner
//	KEYS[2] fence counter                ARGV[2] TTL in milliseconds
//	KEYS[3] waiters                      ARGV[3] waiting Client id, or ""
//	                                     ARGV[4] listing lifetime in milliseconds
//	                                     ARGV[5] "1" to stay listed after taking the lock
//
// Returns the fencing token: a new one for a first hold, the current one for
// another hold by the same owner; or -1 when another owner holds the lock.
var reentrantObtainScript = redis.NewScript(waitersLua + `
local fence
if redis.call("EXISTS", KEYS[1]) == 0 then
	redis.call("HSET", KEYS[1], ARGV[1], 1)
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
	fence = redis.call("INCR", KEYS[2])
elseif redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
	redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
	if redis.call("PTTL", KEYS[1]) < tonumber(ARGV[2]) then
		redis.call("PEXPIRE", KEYS[1], ARGV[2])
	end
	fence = tonumber(redis.call("GET", KEYS[2]) or "0")
else
	enlist(KEYS[3], ARGV[3], ARGV[4])
	return -1
end
if ARGV[5] == "1" then
	enlist(KEYS[3], ARGV[3], ARGV[4])
else
	delist(KEYS[3], ARGV[3])
end
return fence
`)

// reentrantReleaseScript gives up one hold, and after the last one deletes
// the lock and, when a waiter is listed, tells the waiters, naming the one to
// try first (see waitersLua and releaseLua).
//
//	KEYS[1] lock hash   ARGV[1] owner
//	KEYS[2] waiters     ARGV[2] release channel
//	                    ARGV[3] the releasing Client's id
//
// Returns the holds left (0 when the lock is gone), or -2 when the owner
// holds none.
var reentrantReleaseScript = redis.NewScript(waitersLua + `
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
	return -2
end
local left = redis.call("HINCRBY", KEYS[1], ARGV[1], -1)
if left > 0 then
	return left
end
redis.call("DEL", KEYS[1])
local picked = pick(KEYS[2])
if picked ~= "" then
	redis.call("PUBLISH", ARGV[2], ARGV[3] .. " " .. picked)
end
return 0
`)

func (r reentrant) release(ctx context.Context, key, owner string) error {
	left, err := scriptResult(ctx, r.c.rdb, reentrantReleaseScript, []string{key, waitersKey(key)},
		owner, ReleaseChannel(key), r.c.id)
	if err == nil && left == 0 {
		r.c.hub.wake(ReleaseChannel(key), true)
	}
	return err
}

// reentrantExtendScript sets a new TTL on the lock if the owner holds it.
//
//	KEYS[1] lock hash   ARGV[1] owner   ARGV[2] TTL in milliseconds
//
// Returns 1 when extended, -2 when the owner holds none.
var reentrantExtendScript = redis.NewScript(`
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
	return 1
end
return -2
`)

func (r reentrant) extend(ctx context.Context, key, owner string, ttl time.Duration, _ time.Time) error {
	_, err := scriptResult(ctx, r.c.rdb, reentrantExtendScript, []string{key}, owner, ttl.Milliseconds())
	return err
}

package lock

import (
	"context"
	_ "embed"
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
	return obtain(ctx, c.waiters, key, opts, false, try)
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

// reentrantObtainScript takes a free reentrant lock, or counts one more hold for
// its owner (reentrant_obtain.lua).
//
//go:embed reentrant_obtain.lua
var reentrantObtainLua string
var reentrantObtainScript = redis.NewScript(reentrantObtainLua)

// reentrantReleaseScript gives up one hold, and deletes the lock with the last
// (reentrant_release.lua).
//
//go:embed reentrant_release.lua
var reentrantReleaseLua string
var reentrantReleaseScript = redis.NewScript(reentrantReleaseLua)

func (r reentrant) release(ctx context.Context, key, owner string) error {
	left, err := scriptResult(ctx, r.c.rdb, reentrantReleaseScript, []string{key, waitersKey(key)},
		owner, ReleaseChannel(key), r.c.id)
	if err == nil && left == 0 {
		r.c.hub.wake(ReleaseChannel(key), true)
	}
	return err
}

// reentrantExtendScript sets a new TTL on the lock if the owner holds it
// (reentrant_extend.lua).
//
//go:embed reentrant_extend.lua
var reentrantExtendLua string
var reentrantExtendScript = redis.NewScript(reentrantExtendLua)

func (r reentrant) extend(ctx context.Context, key, owner string, ttl time.Duration, _ time.Time) error {
	_, err := scriptResult(ctx, r.c.rdb, reentrantExtendScript, []string{key}, owner, ttl.Milliseconds())
	return err
}

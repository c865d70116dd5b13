package lock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options tune Obtain. The zero value, or nil, makes one attempt with a fresh
// token.
type Options struct {
	// Retry decides how long to wait between attempts while the lock is busy.
	// Nil makes one attempt.
	Retry RetryStrategy

	// Token is the owner token to store under the key. Empty means NewToken().
	// Reentrant locks ignore it: their owner comes from the context.
	Token string

	// Watchdog, when true, renews the lock every TTL/3 until it is released
	// or lost, so a holder may work for longer than the TTL while a crashed
	// holder still loses the lock within one TTL. Watch Lock.Context: it ends
	// as soon as the lock is known lost.
	Watchdog bool
}

func (o *Options) watchdog() bool { return o != nil && o.Watchdog }

func (o *Options) retry() RetryStrategy {
	if o == nil {
		return nil
	}
	return o.Retry
}

func (o *Options) freshToken() bool { return o == nil || o.Token == "" }

func (o *Options) token() string {
	if o == nil || o.Token == "" {
		return NewToken()
	}
	return o.Token
}

// obtainScript takes a free lock, or refreshes one that already holds our token,
// and numbers the acquisition (obtain.lua).
//
//go:embed obtain.lua
var obtainLua string
var obtainScript = redis.NewScript(obtainLua)

// Obtain takes the lock named key for ttl, retrying as opts.Retry says while
// another owner holds it. The key then holds exactly the owner token, with a
// PX TTL. Waiters wake when the lock is released, and otherwise after their
// backoff.
//
// When the lock stays busy, Obtain returns ErrNotObtained; when ctx ends
// first, an error that matches both ErrNotObtained and ctx.Err().
func (c *Client) Obtain(ctx context.Context, key string, ttl time.Duration, opts *Options) (*Lock, error) {
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	token := opts.token()
	keys := []string{key, fenceKey(key), waitersKey(key)}
	try := func(ctx context.Context, as listing) (*Lock, error) {
		start := time.Now()
		args := append([]any{token, ttl.Milliseconds()}, as.args()...)
		fence, err := scriptResult(ctx, c.rdb, obtainScript, keys, args...)
		if err != nil {
			return nil, err
		}
		return newLock(ctx, c, key, token, fence, ttl, start), nil
	}
	return obtain(ctx, c.waiters, key, opts, opts.freshToken(), try)
}

// obtain acquires a lock with try and the options, and starts its watchdog.
// With skipFirst, a caller makes no attempt of its own while other waiters of
// this Client queue for the key; skip it only when the caller cannot hold the
// lock already (a fresh token), or it would queue behind waiters for itself.
func obtain(ctx context.Context, q *waiters, key string, opts *Options, skipFirst bool,
	try func(context.Context, listing) (*Lock, error)) (*Lock, error) {
	l, err := q.acquire(ctx, key, opts.retry(), skipFirst, try)
	if err != nil {
		return nil, fmt.Errorf("obtain lock %s: %w", key, err)
	}
	if opts.watchdog() {
		l.startWatchdog()
	}
	return l, nil
}

// Adopt returns a Lock for a key that a script of your own took with
// SET key token NX PX ttl. The Lock releases and extends it like one from
// Obtain. It has no fencing token (Fence returns 0) and no watchdog, and its
// lease is counted from the call to Adopt, so call it as soon as the script
// returned.
func (c *Client) Adopt(key, token string, ttl time.Duration) *Lock {
	return newLock(context.Background(), c, key, token, 0, ttl, time.Now())
}

// releaseScript releases one lock if it holds our token (release.lua).
//
//go:embed release.lua
var releaseLua string
var releaseScript = redis.NewScript(releaseLua)

// releaseAllScript releases n locks of one hash slot (release_all.lua).
//
//go:embed release_all.lua
var releaseAllLua string
var releaseAllScript = redis.NewScript(releaseAllLua)

func (c *Client) release(ctx context.Context, key, token string) error {
	_, err := scriptResult(ctx, c.rdb, releaseScript, []string{key, waitersKey(key)}, token, ReleaseChannel(key), c.id)
	if err == nil {
		c.hub.wake(ReleaseChannel(key), true)
	}
	return err
}

// ReleaseAll releases locks as Release does, with one script per hash slot
// instead of one per lock: the locks of many holders that share a hash tag go
// in one round trip. Locks of another Client, a Redlock or a reentrant lock
// are released one by one. The error joins those of the locks that failed;
// errors.Is(err, ErrNotHeld) tells that one of them was not held.
func (c *Client) ReleaseAll(ctx context.Context, locks ...*Lock) error {
	var errs []error
	var slots []string
	bySlot := map[string][]*Lock{}
	for _, l := range locks {
		if l.store != backend(c) {
			errs = append(errs, l.Release(ctx))
			continue
		}
		if err := l.giveUp(); err != nil {
			errs = append(errs, err)
			continue
		}
		slot := hashSlotOf(l.key)
		if _, ok := bySlot[slot]; !ok {
			slots = append(slots, slot)
		}
		bySlot[slot] = append(bySlot[slot], l)
	}
	for _, slot := range slots {
		errs = append(errs, c.releaseSlot(ctx, bySlot[slot]))
	}
	return errors.Join(errs...)
}

// releaseSlot runs releaseAllScript on locks of one hash slot.
func (c *Client) releaseSlot(ctx context.Context, locks []*Lock) error {
	keys := make([]string, 0, 2*len(locks))
	channels := make([]string, len(locks))
	args := make([]any, 1, 1+2*len(locks))
	args[0] = c.id
	for i, l := range locks {
		channels[i] = ReleaseChannel(l.key)
		keys = append(keys, l.key, waitersKey(l.key))
		args = append(args, l.token, channels[i])
	}
	v, err := releaseAllScript.Run(ctx, c.rdb, keys, args...).Int64Slice()
	if err == nil && len(v) != len(locks) {
		err = fmt.Errorf("lock: %d replies to a release of %d locks", len(v), len(locks))
	}
	if err != nil { // one error for the batch, not a copy per lock
		return fmt.Errorf("release %d locks (%s, ...): %w", len(locks), locks[0].key, err)
	}
	var errs []error
	for i, l := range locks {
		if err := replyErr(v[i]); err != nil {
			errs = append(errs, fmt.Errorf("release lock %s: %w", l.key, err))
			continue
		}
		c.hub.wake(channels[i], true)
	}
	return errors.Join(errs...)
}

// extendScript sets a new TTL on the lock if it holds our token (extend.lua).
//
//go:embed extend.lua
var extendLua string
var extendScript = redis.NewScript(extendLua)

func (c *Client) extend(ctx context.Context, key, token string, ttl time.Duration, _ time.Time) error {
	_, err := scriptResult(ctx, c.rdb, extendScript, []string{key}, token, ttl.Milliseconds())
	return err
}

// notObtained joins err with ErrNotObtained and ctx.Err() once ctx has ended,
// so that a timeout and a busy lock can be told apart.
func notObtained(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() == nil {
		return err
	}
	errs := []error{ErrNotObtained, ctx.Err()}
	if !errors.Is(err, ErrNotObtained) && !errors.Is(err, ctx.Err()) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

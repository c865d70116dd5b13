package lock

import (
	"context"
	"crypto/rand"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client takes locks on one Redis server (or one Redis Cluster). It holds the
// go-redis client it was given and one pub/sub connection, opened on first
// use, on which every waiter of the Client learns about releases. Its waiters
// for one key queue in the process, and only the first of them waits in
// Redis. A Client is safe for concurrent use; make one per process.
type Client struct {
	rdb     redis.UniversalClient
	id      string // the message of our releases, so our hub can skip them
	hub     *releaseHub
	waiters *waiters
	now     func() time.Time // the wall clock of RunOnce; tests set it
}

// New returns a Client that takes locks on rdb. Close it to close its pub/sub
// connection; rdb stays open and belongs to the caller.
func New(rdb redis.UniversalClient) *Client {
	id := NewToken()
	hub := newReleaseHub(rdb, id)
	return &Client{rdb: rdb, id: id, hub: hub, waiters: newWaiters(id, []*releaseHub{hub}), now: time.Now}
}

// Close closes the Client's pub/sub connection and wakes its waiters. It does
// not close the go-redis client, nor release locks.
func (c *Client) Close() error { return c.hub.close() }

// NewToken returns a random owner token: 26 base32 characters carrying 130
// bits from crypto/rand.
func NewToken() string { return rand.Text() }

// WaitRelease waits until a release of key is published, then returns nil,
// or until ctx ends, then returns ctx.Err(). It is for code that takes a lock
// in a script of its own (see Adopt): after the script found the key taken,
// wait, then run the script again.
//
// It first lists a waiter beside the key (anyWaiter, until ctx's deadline), so
// that a release publishes (releasing.lua), then subscribes. A release published
// before the subscription is active is not seen, nor one published while the
// pub/sub connection is down, so always give ctx a deadline: it is the
// backstop, as a backoff is for Obtain. The wait shares the Client's one
// pub/sub connection. After Close, WaitRelease fails at once.
func (c *Client) WaitRelease(ctx context.Context, key string) error {
	lifetime := defaultListing
	if d, ok := ctx.Deadline(); ok {
		lifetime = time.Until(d)
	}
	// A failed listing costs a wake-up, not the wait: the deadline remains.
	_ = listScript.Run(ctx, c.rdb, []string{waitersKey(key)}, anyWaiter,
		max(lifetime+listingSlack, time.Millisecond).Milliseconds()).Err()
	w, err := watchRelease([]*releaseHub{c.hub}, key, true)
	defer w.close()
	if err != nil {
		return fmt.Errorf("wait for release of %s: %w", key, err)
	}
	return w.wait(ctx, 0)
}

// anyWaiter is the listing of WaitRelease: a release that picks it wakes
// every waiter of the key, in every Client. defaultListing is how long it
// lasts when the wait has no deadline.
const (
	anyWaiter      = "*"
	defaultListing = 10 * time.Second
)

// listScript lists a waiter beside a lock (list.lua).
//
//go:embed list.lua
var listLua string
var listScript = redis.NewScript(listLua)

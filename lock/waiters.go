package lock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// waiters queues the waiting goroutines of one Client per key. Only the first
// of a key's waiters tries Redis again; the others wait their turn in the
// process, so that many goroutines waiting for one lock cost Redis no more
// than one waiter does, and the lock goes to them in turn rather than to
// whoever polls at the right moment. A release made by the same Client wakes
// the first at once (see releaseHub.wake), without waiting for the pub/sub
// message.
type waiters struct {
	id   string // the Client's id, how its waiters are listed in Redis
	hubs []*releaseHub

	mu sync.Mutex
	m  map[string]*keyWaiters
}

// keyWaiters are the waiters of one key, who take turns. Its watch is
// subscribed to the key's release channel for as long as it has members, and
// is shared by the waiters whose turn it is.
type keyWaiters struct {
	members int
	turn    chan struct{} // holds the token while it is no member's turn
	watch   *releaseWatch
	fresh   bool // no member has waited on the watch yet
}

func newWaiters(id string, hubs []*releaseHub) *waiters {
	return &waiters{id: id, hubs: hubs, m: make(map[string]*keyWaiters)}
}

// busy reports whether waiters of this Client queue for key.
func (q *waiters) busy(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.m[key] != nil
}

// enter joins the waiters of key, starting them (and subscribing) when there
// are none.
func (q *waiters) enter(key string) (*keyWaiters, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	kw := q.m[key]
	if kw == nil {
		w, err := watchRelease(q.hubs, key, false)
		if err != nil {
			w.close()
			return nil, err
		}
		kw = &keyWaiters{turn: make(chan struct{}, 1), watch: w, fresh: true}
		kw.turn <- struct{}{}
		q.m[key] = kw
	}
	kw.members++
	return kw, nil
}

// listing returns how the waiter whose turn it is lists the Client in Redis,
// when its backoff is the given one.
func (q *waiters) listing(kw *keyWaiters, backoff time.Duration) listing {
	q.mu.Lock()
	defer q.mu.Unlock()
	return listing{id: q.id, lifetime: 2*backoff + listingSlack, stay: kw.members > 1}
}

// marks returns what each hub knows of key's release channel now.
func (q *waiters) marks(key string) []releaseMark {
	marks := make([]releaseMark, len(q.hubs))
	for i, h := range q.hubs {
		marks[i] = h.mark(ReleaseChannel(key))
	}
	return marks
}

// quietSince reports whether every hub stayed subscribed to key's release
// channel since the marks, and saw no release.
func (q *waiters) quietSince(key string, marks []releaseMark) bool {
	for i, h := range q.hubs {
		if !h.quietSince(ReleaseChannel(key), marks[i]) {
			return false
		}
	}
	return true
}

// leave quits the waiters of key, and unsubscribes with their last member.
func (q *waiters) leave(key string, kw *keyWaiters) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if kw.members--; kw.members == 0 {
		delete(q.m, key)
		kw.watch.close()
	}
}

// acquire calls try until it takes the lock, fails with an error other than
// ErrNotObtained, retry gives up, or ctx ends. The first attempt is made at
// once, unless skipFirst and waiters of this Client already queue for the
// key: then the lock is busy, and the caller queues behind them. After that,
// the caller waits its turn among the key's waiters, then, in its turn, waits
// for a release (or its backoff) before each attempt.
func (q *waiters) acquire(ctx context.Context, key string, retry RetryStrategy, skipFirst bool,
	try func(context.Context, listing) (*Lock, error)) (*Lock, error) {
	if retry != nil {
		if _, ok := retry.NextBackoff(1, 0); !ok {
			retry = nil
		}
	}
	// Note what the hubs know before the first attempt: when they are
	// subscribed already, the first turn need not try again unless a release
	// came since.
	var marks []releaseMark
	if retry != nil {
		marks = q.marks(key)
	}
	var err error = ErrNotObtained
	var backoff time.Duration
	if retry != nil {
		backoff, _ = retry.NextBackoff(1, 0)
	}
	if retry == nil || !skipFirst || !q.busy(key) {
		// A caller that will wait is listed by its first failed attempt already: a
		// release tells only listed waiters (releasing.lua).
		as := listing{}
		if retry != nil {
			as = listing{id: q.id, lifetime: 2*backoff + listingSlack}
		}
		var l *Lock
		if l, err = try(ctx, as); err == nil || !isBusy(err) || retry == nil {
			return l, notObtained(ctx, err)
		}
	}
	first := time.Now()
	failed := 1
	kw, enterErr := q.enter(key)
	if enterErr != nil {
		return nil, enterErr
	}
	defer q.leave(key, kw)

	// Wait for our turn, counting backoffs as attempts, so that a bounded
	// strategy bounds the time in the queue too.
	timer := time.NewTimer(backoff)
	defer timer.Stop()
	for waiting := true; waiting; {
		select {
		case <-kw.turn:
			waiting = false
		case <-ctx.Done():
			return nil, notObtained(ctx, ctx.Err())
		case <-timer.C:
			failed++
			var ok bool
			if backoff, ok = retry.NextBackoff(failed, time.Since(first)); !ok {
				return nil, notObtained(ctx, err)
			}
			timer.Reset(backoff)
		}
	}
	defer func() { kw.turn <- struct{}{} }()

	w := kw.watch
	if kw.fresh {
		kw.fresh = false
		// The first turn: a release may have come between the first attempt
		// and the watch. Unless it is known that none did, try again once
		// the subscription is active.
		if !q.quietSince(key, marks) {
			w.awaitReady(ctx, backoff)
			w.notify()
		}
	}
	for {
		if err := w.wait(ctx, backoff); err != nil {
			return nil, notObtained(ctx, err)
		}
		failed++
		w.reset()
		l, err := try(ctx, q.listing(kw, backoff))
		if err == nil || !isBusy(err) {
			w.reset()
			return l, notObtained(ctx, err)
		}
		var ok bool
		if backoff, ok = retry.NextBackoff(failed, time.Since(first)); !ok {
			return nil, notObtained(ctx, err)
		}
	}
}

func isBusy(err error) bool { return errors.Is(err, ErrNotObtained) }

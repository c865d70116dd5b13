package lock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// lines queues the waiters of one Client per key. Only the head of a line
// tries Redis again; the others wait their turn in the process, so that many
// goroutines waiting for one lock cost Redis no more than one waiter does,
// and the lock goes to them in turn rather than to whoever polls at the right
// moment. A release made by the same Client wakes the head at once (see
// releaseHub.wake), without waiting for the pub/sub message.
type lines struct {
	id   string // the Client's id, how its waiters are listed in Redis
	hubs []*releaseHub

	mu sync.Mutex
	m  map[string]*line
}

// line is the queue of one key. Its watch is subscribed to the key's release
// channel for as long as the line has members, and is shared by its heads.
type line struct {
	members int
	turn    chan struct{} // holds the token while no member is the head
	watch   *releaseWatch
	fresh   bool // no head has waited on the watch yet
}

func newLines(id string, hubs []*releaseHub) *lines {
	return &lines{id: id, hubs: hubs, m: make(map[string]*line)}
}

// busy reports whether waiters of this Client queue for key.
func (q *lines) busy(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.m[key] != nil
}

// enter joins the line of key, starting it (and subscribing) when there is
// none.
func (q *lines) enter(key string) (*line, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	ln := q.m[key]
	if ln == nil {
		w, err := watchRelease(q.hubs, key, false)
		if err != nil {
			w.close()
			return nil, err
		}
		ln = &line{turn: make(chan struct{}, 1), watch: w, fresh: true}
		ln.turn <- struct{}{}
		q.m[key] = ln
	}
	ln.members++
	return ln, nil
}

// listing returns how the head of a line lists the Client in Redis, when
// its backoff is the given one.
func (q *lines) listing(ln *line, backoff time.Duration) listing {
	q.mu.Lock()
	defer q.mu.Unlock()
	return listing{id: q.id, lifetime: 2*backoff + listingSlack, stay: ln.members > 1}
}

// marks returns what each hub knows of key's release channel now.
func (q *lines) marks(key string) []releaseMark {
	marks := make([]releaseMark, len(q.hubs))
	for i, h := range q.hubs {
		marks[i] = h.mark(ReleaseChannel(key))
	}
	return marks
}

// quietSince reports whether every hub stayed subscribed to key's release
// channel since the marks, and saw no release.
func (q *lines) quietSince(key string, marks []releaseMark) bool {
	for i, h := range q.hubs {
		if !h.quietSince(ReleaseChannel(key), marks[i]) {
			return false
		}
	}
	return true
}

// leave quits the line, and unsubscribes with its last member.
func (q *lines) leave(key string, ln *line) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if ln.members--; ln.members == 0 {
		delete(q.m, key)
		ln.watch.close()
	}
}

// acquire calls try until it takes the lock, fails with an error other than
// ErrNotObtained, retry gives up, or ctx ends. The first attempt is made at
// once, unless skipFirst and waiters of this Client already queue for the
// key: then the lock is busy, and the caller queues behind them. After that,
// the caller waits its turn in the key's line, then, as its head, waits for a
// release (or its backoff) before each attempt.
func (q *lines) acquire(ctx context.Context, key string, retry RetryStrategy, skipFirst bool,
	try func(context.Context, listing) (*Lock, error)) (*Lock, error) {
	if retry != nil {
		if _, ok := retry.NextBackoff(1, 0); !ok {
			retry = nil
		}
	}
	// Note what the hubs know before the first attempt: when they are
	// subscribed already, the first head need not try again unless a release
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
		// release tells only listed waiters (releaseLua).
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
	ln, lineErr := q.enter(key)
	if lineErr != nil {
		return nil, lineErr
	}
	defer q.leave(key, ln)

	// Wait for our turn at the head, counting backoffs as attempts, so that
	// a bounded strategy bounds the time in the line too.
	timer := time.NewTimer(backoff)
	defer timer.Stop()
	for waiting := true; waiting; {
		select {
		case <-ln.turn:
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
	defer func() { ln.turn <- struct{}{} }()

	w := ln.watch
	if ln.fresh {
		ln.fresh = false
		// The first head: a release may have come between the first attempt
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
		l, err := try(ctx, q.listing(ln, backoff))
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

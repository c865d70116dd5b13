package lock

import "time"

// While a lock is busy, the Clients that wait for it are listed beside it in
// Redis, in a sorted set (the waiters key) of Client ids scored by when the
// listing lapses. A release picks one listed Client and names it in its
// message; only that Client's waiters try again, so that a release costs one
// attempt rather than one per waiting replica. A Client is listed by its
// failed attempts (each one renews the listing) and delisted when picked or
// when it takes the lock; a Client that died stays listed only until its
// listing lapses; an Obtain that will wait is listed by its first attempt.
// WaitRelease lists anyWaiter ("*"): a release that picks it wakes every
// waiter. A release publishes only when someone is listed, so a lock that
// nobody waits for costs no message; every waiter keeps its backoff as the
// backstop.
//
// The release message is "<releasing Client id> <picked Client id>" (this
// package's releases send none when nobody is listed). A message from a script
// of your own may be empty: it wakes everyone.

// The scripts share the Lua functions that keep the listing: listing.lua.

// listing is how an attempt lists its Client among the waiters of a lock.
type listing struct {
	id       string        // the Client's id; "" for an attempt outside the queue of waiters
	lifetime time.Duration // how long the listing lasts without another attempt
	stay     bool          // more waiters of the Client remain: stay listed after taking the lock
}

// args returns the listing as the three script arguments the obtain scripts
// take after their own: id, lifetime in milliseconds, and "1" to stay.
func (l listing) args() []any {
	stay := "0"
	if l.stay {
		stay = "1"
	}
	return []any{l.id, max(l.lifetime.Milliseconds(), 1), stay}
}

// listingSlack is added to a waiter's backoff to make its listing's lifetime:
// the time between its attempts, and some for the round trips.
const listingSlack = 100 * time.Millisecond

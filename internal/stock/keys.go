package stock

import (
	"strconv"

	"seckill/internal/buyer"
)

// Every key of one sale's bucket carries the bucket's hash tag ({act:<id>} for bucket
// 0, the whole of a one-bucket sale; see bucket.go for the others), so one script's keys
// always live in one Redis Cluster slot.
func Prefix(b Bucket) string { return "seckill:{" + b.tag() + "}:" }

// SaleKey is a hash of the sale's state: avail, total, limit, start and end (unix ms),
// price (cents), paywin (seconds), and qunits (units of its queued orders).
func SaleKey(b Bucket) string { return Prefix(b) + "sale" }

// UsersKey is a hash of the buyers' fields (buyerfields.go): the units each buyer holds
// in queued, created and paid orders, their participations where the sale counts them,
// their lock (reserve's userlock.go), and their attempts allowance as their last reservation left
// it (see RateKey), dropped with the units when they all come back and the allowance is
// full again.
func UsersKey(b Bucket) string { return Prefix(b) + "users" }

// QueuedKey is a hash of order id -> its queued value (queued.go) for orders taken from
// stock and not yet settled by the worker.
func QueuedKey(b Bucket) string { return Prefix(b) + "queued" }

// QueuedSinceKey is a sorted set of queued order ids by the time they were taken (unix
// ms), so the worker's repair pass finds the old ones without reading them all. A
// member is one or more order ids separated by single spaces: a reserve call writes one
// member of all its reservations, scored by the earliest, and the waitlist's offer one
// of a single order. Nothing removes an id when its order leaves the queue: the repair
// pass (settle's stale.lua) drops a member once none of its orders is queued.
func QueuedSinceKey(b Bucket) string { return Prefix(b) + "queued:since" }

// Keys of one buyer end with the buyer's key (buyer.ID.Key), which holds no space.
// UserQueuedKey is the set of one buyer's queued order ids that the release before this
// one kept, where the buyer's queued ids field of the users hash (buyerfields.go) keeps
// them now. Nothing writes it: Sales.UserQueued reads it for the orders that APIs of the
// release before queued during a rolling deploy (a settled id left in it reads as not
// queued), and Rebuilds.Remove deletes it with the sale.
func UserQueuedKey(b Bucket, who buyer.ID) string {
	return Prefix(b) + "queued:user:" + who.Key()
}

// ClaimedKey is the set of queued order ids a worker has begun to persist; the API no
// longer gives those back when the reply of their reserve script was lost.
func ClaimedKey(b Bucket) string { return Prefix(b) + "claimed" }

// IdempotencyKey holds "<fingerprint> <order id>" for a buyer's Idempotency-Key (which
// holds no ':', so the last one ends the buyer's key).
func IdempotencyKey(b Bucket, who buyer.ID, key string) string {
	return Prefix(b) + "idem:" + who.Key() + ":" + key
}

// UserLockKey names the per-buyer lock of a sale's bucket. No key of that name is written:
// the lock is the buyer's lock field of the users hash (reserve's userlock.go), which the reserve script
// takes in the same step that takes the units and the caller releases
// (reserve.Reserver.ReleaseUserLocks) once the order is enqueued (after the purchase was answered).
// seckill/lock keeps the lock's waiters list and release channel beside the name
// (lock.Client.WaitRelease). reserve.Reserver.UserLockKey names it for callers.
func UserLockKey(b Bucket, who buyer.ID) string {
	return Prefix(b) + "lock:" + who.Key()
}

// RateKey holds the theoretical arrival time (unix µs) of the buyer's next purchase
// attempt in the sale: the allowance the reserve script keeps (GCRA), as an attempt that
// reserved nothing left it. It expires once the allowance is full again, so it exists
// only for buyers who attempted lately. An attempt that reserves writes the allowance as
// the buyer's allowance field of the users hash instead, in the command that writes the
// buyer's units and lock (a key of its own per purchase costs the server more than a
// field), and the script reads the later of the two.
func RateKey(b Bucket, who buyer.ID) string {
	return Prefix(b) + "rate:" + who.Key()
}

// ReturnedChannel carries the id of a sale whose units came back to stock, or whose
// settings changed (limit, end, waiting room: what a sold-out flag remembers), so every API
// process clears its sold-out flag for it.
const ReturnedChannel = "seckill:stock-returned"

// ReturnedKey is the sorted set of cancelled order ids whose units went back to stock,
// so each order's units come back once: scored +inf until MySQL records the return
// (Forget), then by Redis' clock, and trimmed ReturnedRetention later (settle.go).
func ReturnedKey(b Bucket) string { return Prefix(b) + "returns" }

// BarrierKey is a counter the replication barrier increments: a write in the sale's
// slot, so that WAIT on the same connection covers the sale's reservations before it.
func BarrierKey(b Bucket) string { return Prefix(b) + "barrier" }

// GroupKey is a hash of one group of a group-buy sale: size, members (seats taken),
// expires (the end of its window in force, unix ms), status (see GroupStatus), and,
// once a MySQL outage extended the window (ExtendGroup), window: the end it opened with.
func GroupKey(b Bucket, groupID string) string {
	return Prefix(b) + "group:" + groupID
}

// GroupSeatsKey is a hash of buyer key -> "<order id> <quantity>", the seats of a group.
func GroupSeatsKey(b Bucket, groupID string) string {
	return Prefix(b) + "group:" + groupID + ":seats"
}

// OpenGroupsKey is a sorted set of a sale's open groups by the time their window ends
// (unix ms): the buyers' list, and the groups the worker fails once it has passed.
func OpenGroupsKey(b Bucket) string { return Prefix(b) + "groups:open" }

// FillGroupsKey is a sorted set of the same open groups, fullest first: the score is
// members * 10^13 - expires (unix ms), so among groups with as many members the one
// that closes soonest comes first. The buyers' list reads the top of it.
func FillGroupsKey(b Bucket) string { return Prefix(b) + "groups:fill" }

// FailingKey is the set of groups that failed in Redis (their units are back) and whose
// orders MySQL has not yet cancelled.
func FailingKey(b Bucket) string { return Prefix(b) + "groups:failing" }

// GivenBackKey is the set of order ids whose reservation the API gave back (their buyer
// got 503): a task that still names one must not bring it back (see Adopt).
func GivenBackKey(b Bucket) string { return Prefix(b) + "givenback" }

// MovesKey is a hash, in the bucket units are moved from (the reserve's, bucket 0, or
// another), of move id -> "<to bucket> <units> <taken unix ms> <rebuild stamp>": the
// moves taken here and not yet known to be applied at their destination (internal/stock/moves).
func MovesKey(b Bucket) string { return Prefix(b) + "moves" }

// AppliedKey is a sorted set, in a bucket units were moved to, of the move ids applied
// there, by the time they were (unix ms): a move is applied once, however often it is
// tried. Trimmed after MoveRetention.
func AppliedKey(b Bucket) string { return Prefix(b) + "moves:applied" }

// WaitlistEntriesKey is the hash of the sale's waitlist entries by buyer key (the
// entry's format: settle's entry.lua).
func WaitlistEntriesKey(b Bucket) string { return Prefix(b) + "waitlist:entries" }

// WaitlistKey is the sorted set of the buyers waiting for units of variant v (none: of
// the sale), by join sequence.
func WaitlistKey(b Bucket, v Variant) string {
	if i, ok := v.Index(); ok {
		return WaitlistPrefix(b) + strconv.Itoa(i)
	}
	return WaitlistPrefix(b) + "-"
}

// WaitlistPrefix is the prefix of a sale's waiting sets (WaitlistKey without its
// variant), which the waitlist's scripts complete with an entry's variant.
func WaitlistPrefix(b Bucket) string { return Prefix(b) + "waitlist:" }

// CodesKey is a hash of the sale's access codes (early access; code.lua says its
// values), in bucket 0 (a sale of several buckets has no early access).
func CodesKey(b Bucket) string { return Prefix(b) + "codes" }

// CodeClaimsKey is a sorted set of the codes buyers came to own, by when (unix ms),
// until MySQL has recorded their owners (internal/stock/codes).
func CodeClaimsKey(b Bucket) string { return Prefix(b) + "codes:claims" }

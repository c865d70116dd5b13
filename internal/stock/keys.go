package stock

import "strconv"

// Every key of one sale carries the hash tag {act:<id>}, so one script's keys always
// live in one Redis Cluster slot.
func prefix(activityID int64) string {
	return "seckill:{act:" + strconv.FormatInt(activityID, 10) + "}:"
}

// saleKey is a hash of the sale's state: avail, total, limit, start and end (unix ms),
// price (cents), paywin (seconds), and qunits (units of its queued orders).
func saleKey(activityID int64) string { return prefix(activityID) + "sale" }

// usersKey is a hash of user id -> units the user holds in queued, created and paid orders.
func usersKey(activityID int64) string { return prefix(activityID) + "users" }

// queuedKey is a hash of order id -> "user quantity created_ms limit" for orders taken
// from stock and not yet settled by the worker.
func queuedKey(activityID int64) string { return prefix(activityID) + "queued" }

// queuedSinceKey is a sorted set of the queued order ids by the time they were taken
// (unix ms), so the worker's repair pass finds the old ones without reading them all.
func queuedSinceKey(activityID int64) string { return prefix(activityID) + "queued:since" }

// userQueuedKey is the set of one user's queued order ids.
func userQueuedKey(activityID, userID int64) string {
	return prefix(activityID) + "queued:user:" + strconv.FormatInt(userID, 10)
}

// claimedKey is the set of queued order ids a worker has begun to persist; the API no
// longer gives those back when the reply of their reserve script was lost.
func claimedKey(activityID int64) string { return prefix(activityID) + "claimed" }

// idempotencyKey holds "<fingerprint> <order id>" for a user's Idempotency-Key.
func idempotencyKey(activityID, userID int64, key string) string {
	return prefix(activityID) + "idem:" + strconv.FormatInt(userID, 10) + ":" + key
}

// UserLockKey is the per-user lock of a sale. The reserve script takes it (value: the
// owner token, with a TTL) in the same step that takes the units; the caller releases it
// with internal/lock once the order is enqueued (after the purchase was answered).
func UserLockKey(activityID, userID int64) string {
	return prefix(activityID) + "lock:" + strconv.FormatInt(userID, 10)
}

// rateKey holds the theoretical arrival time (unix µs) of the user's next purchase
// attempt in the sale: the allowance the reserve script keeps (GCRA). It expires once
// the allowance is full again, so it exists only for users who attempted lately.
func rateKey(activityID, userID int64) string {
	return prefix(activityID) + "rate:" + strconv.FormatInt(userID, 10)
}

// ReturnedChannel carries the id of a sale whose units came back to stock, or whose
// settings changed (limit, end, waiting room: what a sold-out flag remembers), so every API
// process clears its sold-out flag for it.
const ReturnedChannel = "seckill:stock-returned"

// returnedKey is the sorted set of cancelled order ids whose units went back to stock,
// so each order's units come back once: scored +inf until MySQL records the return
// (Forget), then by Redis' clock, and trimmed ReturnedRetention later (settle.go).
func returnedKey(activityID int64) string { return prefix(activityID) + "returns" }

// barrierKey is a counter the replication barrier increments: a write in the sale's
// slot, so that WAIT on the same connection covers the sale's reservations before it.
func barrierKey(activityID int64) string { return prefix(activityID) + "barrier" }

// groupKey is a hash of one group of a group-buy sale: size, members (seats taken),
// expires (unix ms) and status (see GroupStatus).
func groupKey(activityID int64, groupID string) string {
	return prefix(activityID) + "group:" + groupID
}

// groupSeatsKey is a hash of user id -> "<order id> <quantity>", the seats of a group.
func groupSeatsKey(activityID int64, groupID string) string {
	return prefix(activityID) + "group:" + groupID + ":seats"
}

// openGroupsKey is a sorted set of a sale's open groups by the time their window ends
// (unix ms): the buyers' list, and the groups the worker fails once it has passed.
func openGroupsKey(activityID int64) string { return prefix(activityID) + "groups:open" }

// fillGroupsKey is a sorted set of the same open groups, fullest first: the score is
// members * 10^13 - expires (unix ms), so among groups with as many members the one
// that closes soonest comes first. The buyers' list reads the top of it.
func fillGroupsKey(activityID int64) string { return prefix(activityID) + "groups:fill" }

// failingKey is the set of groups that failed in Redis (their units are back) and whose
// orders MySQL has not yet cancelled.
func failingKey(activityID int64) string { return prefix(activityID) + "groups:failing" }

// participationsField is the field of the users hash that counts a user's orders
// (participations) in a sale that caps them; the user's own field counts units.
func participationsField(userID int64) string { return "p" + strconv.FormatInt(userID, 10) }

// givenBackKey is the set of order ids whose reservation the API gave back (their buyer
// got 503): a task that still names one must not bring it back (see Adopt).
func givenBackKey(activityID int64) string { return prefix(activityID) + "givenback" }

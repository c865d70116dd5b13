package waitingroom

import "seckill/internal/stock"

// A line's keys carry its sale's hash tag ({act:<id>}, stock.Prefix), so every
// script of the line runs in one slot with the sale's own keys.
func prefix(activityID int64) string { return stock.Prefix(stock.One(activityID)) + "line:" }

// waitKey is a sorted set of the waiting buyers' keys (buyer.ID.Key) by their place: a buyer who joined
// before the start has a uniformly random score below lateBase (the lottery), a later
// one lateBase plus the count of later joins so far (arrival order). The admission pops
// its lowest scores.
func waitKey(activityID int64) string { return prefix(activityID) + "wait" }

// ticketsKey is a hash of buyer key -> "<admitted, ms after the line's epoch> <position>
// <pass expiry, ms after the admission>" for the buyers the line admitted: offsets, not
// unix ms, to keep an admitted ticket small (the epoch is the first admission's instant,
// in the meta hash).
func ticketsKey(activityID int64) string { return prefix(activityID) + "tickets" }

// passesKey is a sorted set of the admitted buyers' keys by their pass's expiry (unix ms):
// the passes outstanding, dropped by the admission once expired.
func passesKey(activityID int64) string { return prefix(activityID) + "passes" }

// joinedKey is a hash of buyer key -> when the buyer joined (unix ms), for the waiting
// buyers who joined after the start, or with a code in the early window: their wait
// counts from then (the others' from the start, or from the early window's opening for
// a code holder). The admission removes a buyer's entry.
func joinedKey(activityID int64) string { return prefix(activityID) + "joined" }

// waitsKey is a hash of wait (ms, from the later of the join and the opening of the
// buyer's admission to the admission) -> buyers admitted after that wait: every admitted buyer counted once,
// exactly, for the funnel's distribution (Funnel).
func waitsKey(activityID int64) string { return prefix(activityID) + "waits" }

// metaKey is a hash of the line's counters: joined, early (joins before the start), seq
// (joins after the start), mseq (code holders' joins in the early window), admitted,
// next (the next admission's slot, unix ms), epoch (the first admission's instant, unix
// ms), expired (passes that expired unused), usedexp (passes that expired after their
// holder bought).
func metaKey(activityID int64) string { return prefix(activityID) + "meta" }

// Keys are the line's keys of a sale whose names it fixes, for the sale's archive
// (a solution's key, powKey, expires with its challenge).
func Keys(activityID int64) []string {
	return []string{waitKey(activityID), ticketsKey(activityID), passesKey(activityID), metaKey(activityID),
		joinedKey(activityID), waitsKey(activityID)}
}

// powKey marks a proof-of-work solution as accepted (until its challenge expires), so
// each solution joins once.
func powKey(activityID int64, challenge string) string {
	return prefix(activityID) + "pow:" + challenge
}

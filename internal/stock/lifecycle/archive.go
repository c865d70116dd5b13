package lifecycle

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"seckill/internal/buyer"
	"seckill/internal/stock"
)

// A sale that is over leaves Redis (internal/upkeep/archive.go): its archive closes it as
// a rebuild does (Close: purchases and moves are refused), checks that Redis holds no
// order of it as queued (RebuildPoint), has MySQL mark it archived, then marks it here
// (MarkArchived: the field archived of every bucket's sale hash) and removes its keys
// (Remove), each bucket's sale hash last and bucket 0's very last.
//
// From the mark on, nothing writes to the sale's keys again, so a key removed stays
// removed: the scripts that write only on a sale Redis holds as queued or open (the
// reserve, claim, settle and roll-back scripts; the sale is closed and holds no queued
// order) find nothing to do; those that could write to a sale without one (a return of
// units, a group's failure or extension, a move's apply, the replication barrier, the
// line's join and admission) first ask sale_live, and write nothing on a sale that is
// lost or archived; and a rebuild, whose Close the mark refuses, cannot take the sale
// (MySQL refuses its epoch too, once the hash is gone).
// ErrArchived means the sale is archived: its Redis state is being removed or is gone,
// and MySQL answers for it.
var ErrArchived = errors.New("the sale is archived")

// markScript marks a bucket of a sale archived, while the archive's Close holds it
// (mark.lua).
//
//go:embed mark.lua
var markLua string

var markScript = stock.NewScript(markLua, markCodes)

// markCodes are markScript's answers: marked, not in Redis, or the closing lost
// (ErrRebuilding).
var markCodes = []stock.Code{{Lua: "MARKED", Value: 1}, {Lua: "NOT_IN_REDIS", Value: 0}, {Lua: "LEASE_LOST", Value: -1, Err: ErrRebuilding}}

// MarkArchived marks every bucket of a sale of buckets buckets archived, the sale being
// closed by closing (Close). A bucket Redis does not have stays missing. ErrRebuilding
// when the closing is no longer the archive's (its lease ran out and a rebuild took the
// sale): nothing more is marked, and the archive tries again later.
func (s *Rebuilds) MarkArchived(ctx context.Context, activityID int64, buckets int, closing Closing) error {
	for _, b := range stock.Whole(activityID, buckets).All() {
		n, err := markScript.Run(ctx, s.rdb, []string{stock.SaleKey(b)}, closing.token).Int64()
		if err == nil {
			err = stock.AnswerOf(markCodes, n)
		}
		if err != nil {
			return fmt.Errorf("mark sale %d archived: %w", activityID, err)
		}
	}
	return nil
}

// Names are the keys of a sale that MySQL names (its buyers, their Idempotency-Keys,
// its groups) and those other packages keep in the sale's slot (Extra: the line's), for
// Remove.
type Names struct {
	Buyers []buyer.ID
	Keys   []KeptKey // only Buyer and Key are read
	Groups []string
	// Extra are keys in bucket 0's slot that other packages own (internal/waitingroom).
	Extra []string
}

// unlinkChunk bounds the keys of one UNLINK, and unlinkCalls the UNLINKs of one round
// trip: UNLINK takes a key out of the keyspace at once and frees its memory on another
// thread, so each command holds the server a fraction of a millisecond however large
// its keys (a users hash of a million buyers included).
const (
	unlinkChunk = 500
	unlinkCalls = 20
)

// Remove removes every key of an archived sale of buckets buckets (MarkArchived first):
// in each bucket, from the last to bucket 0, the keys of its buyers (queued set, rate,
// Idempotency-Keys), its groups, the waitlist, n.Extra and the sale's own keys, then its
// sale hash; bucket 0's sale hash goes last. Every command is an UNLINK of at most
// unlinkChunk keys of one slot, so it runs on a Redis Cluster as on one server and
// never holds Redis long. It may be run again after a failure: a key gone is skipped.
func (s *Rebuilds) Remove(ctx context.Context, activityID int64, buckets int, n Names) (int64, error) {
	all := stock.Whole(activityID, buckets).All()
	byBucket := make([][]string, len(all))
	for _, who := range n.Buyers {
		b := stock.Home(activityID, who, len(all))
		byBucket[b.N()] = append(byBucket[b.N()], stock.UserQueuedKey(b, who), stock.RateKey(b, who))
	}
	for _, k := range n.Keys {
		b := stock.Home(activityID, k.Buyer, len(all))
		byBucket[b.N()] = append(byBucket[b.N()], stock.IdempotencyKey(b, k.Buyer, k.Key))
	}
	zero := all[0]
	for _, g := range n.Groups {
		byBucket[0] = append(byBucket[0], stock.GroupKey(zero, g), stock.GroupSeatsKey(zero, g))
	}
	byBucket[0] = append(byBucket[0], stock.WaitlistEntriesKey(zero), stock.WaitlistKey(zero, 0))
	for i := range stock.MaxVariants { // the waiting sets a sale may have, one per variant
		byBucket[0] = append(byBucket[0], stock.WaitlistKey(zero, stock.VariantAt(i)))
	}
	byBucket[0] = append(byBucket[0], stock.CodesKey(zero), stock.CodeClaimsKey(zero))
	byBucket[0] = append(byBucket[0], n.Extra...)
	var removed int64
	for i := len(all) - 1; i >= 0; i-- {
		b := all[i]
		keys := append(byBucket[i], stock.UsersKey(b), stock.QueuedKey(b), stock.QueuedSinceKey(b), stock.ClaimedKey(b), stock.ReturnedKey(b),
			stock.BarrierKey(b), stock.GivenBackKey(b), stock.MovesKey(b), stock.AppliedKey(b), stock.OpenGroupsKey(b), stock.FillGroupsKey(b), stock.FailingKey(b))
		n, err := unlink(ctx, s.rdb, keys)
		removed += n
		if err != nil {
			return removed, fmt.Errorf("remove sale %d: %w", activityID, err)
		}
	}
	for i := len(all) - 1; i >= 0; i-- { // the sale hashes, bucket 0's last: the mark goes with them
		n, err := unlink(ctx, s.rdb, []string{stock.SaleKey(all[i])})
		removed += n
		if err != nil {
			return removed, fmt.Errorf("remove sale %d: %w", activityID, err)
		}
	}
	s.sk.ForgetSale(activityID)
	return removed, nil
}

// unlink removes keys of one slot, in UNLINKs of at most unlinkChunk keys, unlinkCalls
// of them per round trip, and returns how many existed.
func unlink(ctx context.Context, rdb redis.UniversalClient, keys []string) (int64, error) {
	var removed int64
	for len(keys) > 0 {
		cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for c := 0; c < unlinkCalls && len(keys) > 0; c++ {
				chunk := keys[:min(unlinkChunk, len(keys))]
				keys = keys[len(chunk):]
				p.Unlink(ctx, chunk...)
			}
			return nil
		})
		if err != nil {
			return removed, err
		}
		for _, c := range cmds {
			removed += c.(*redis.IntCmd).Val()
		}
	}
	return removed, nil
}

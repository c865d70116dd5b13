package waitingroom

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Counts are what a sale's line tells its funnel (internal/funnel), exact.
type Counts struct {
	// Joined counts the buyers who joined; JoinedBeforeStart those of them who joined
	// before the start (the lottery).
	Joined, JoinedBeforeStart int64
	// Admitted counts the buyers admitted; PassesExpired those whose pass expired
	// before they bought; AdmittedThrough is the highest place admitted (the status').
	Admitted, PassesExpired, AdmittedThrough int64
	// Waits maps a wait in milliseconds (from the later of the join and the start, to
	// the admission) to the buyers admitted after it: each admitted buyer once.
	Waits map[int64]int64
}

// Counts reads a sale's line counts and its buyers' waits in one round trip.
func (r *Rooms) Counts(ctx context.Context, activityID int64) (Counts, error) {
	var meta *redis.SliceCmd
	var waits *redis.MapStringStringCmd
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		meta = p.HMGet(ctx, metaKey(activityID), "joined", "early", "admitted", "expired", "through")
		waits = p.HGetAll(ctx, waitsKey(activityID))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Counts{}, fmt.Errorf("read line counts: %w", err)
	}
	n := make([]int64, 5)
	for i, v := range meta.Val() {
		if v != nil {
			n[i], _ = strconv.ParseInt(fmt.Sprint(v), 10, 64)
		}
	}
	c := Counts{Joined: n[0], JoinedBeforeStart: n[1], Admitted: n[2], PassesExpired: n[3], AdmittedThrough: n[4],
		Waits: map[int64]int64{}}
	for k, v := range waits.Val() {
		ms, err1 := strconv.ParseInt(k, 10, 64)
		count, err2 := strconv.ParseInt(v, 10, 64)
		if err1 != nil || err2 != nil {
			return Counts{}, fmt.Errorf("%w: wait %q -> %q", errUnexpectedReply, k, v)
		}
		c.Waits[ms] = count
	}
	return c, nil
}

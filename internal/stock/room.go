package stock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotAdmitted is a purchase of a waiting-room sale without a valid pass.
var ErrNotAdmitted = errors.New("this sale admits buyers through its waiting room: join the line and buy with your pass")

// Room is a sale's waiting room as its sale hash holds it. The reserve script reads
// only the flag (room); internal/line reads the rest and owns the line itself.
type Room struct {
	On             bool
	AdmitPerSecond int
	PassTTL        time.Duration
	Prequeue       time.Duration
	// Challenge asks a proof-of-work of joiners; ChallengeCost is its maxnumber.
	Challenge     bool
	ChallengeCost int
}

// fields are the room's fields of the sale hash: room (1 on, 0 off), admit (per
// second), pttl and preq (seconds), chal (1 on) and cost (the challenge's maxnumber).
func (r Room) fields() []any {
	return []any{"room", flag(r.On), "admit", r.AdmitPerSecond, "pttl", int64(r.PassTTL / time.Second),
		"preq", int64(r.Prequeue / time.Second), "chal", flag(r.Challenge), "cost", r.ChallengeCost}
}

func flag(on bool) int {
	if on {
		return 1
	}
	return 0
}

// SetRoom changes a sale's waiting room; every API instance and the line see it at
// their next script, and every API process drops its sold-out flag of the sale
// (ReturnedChannel), which remembers whether the sale had a room.
func (s *Stock) SetRoom(ctx context.Context, activityID int64, r Room) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, SaleKey(One(activityID)), r.fields()...)
		p.Publish(ctx, ReturnedChannel, activityID)
		return nil
	})
	if err != nil {
		return fmt.Errorf("set waiting room of sale %d: %w", activityID, err)
	}
	return nil
}

// PassesUsed reads, on c (a pipeline), how many buyers of a sale made their first
// purchase with a pass (sale_state's passes_used).
func PassesUsed(ctx context.Context, c redis.Cmdable, activityID int64) *redis.StringCmd {
	return c.HGet(ctx, SaleKey(One(activityID)), "rused")
}

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
		p.HSet(ctx, saleKey(one(activityID)), r.fields()...)
		p.Publish(ctx, ReturnedChannel, activityID)
		return nil
	})
	if err != nil {
		return fmt.Errorf("set waiting room of sale %d: %w", activityID, err)
	}
	return nil
}

// SaleKey is the hash of a sale's state (see saleKey), for internal/line's scripts,
// which read a sale's window, units left and room settings in the same slot
// (SaleStateLua).
func SaleKey(activityID int64) string { return saleKey(one(activityID)) }

// UsersKey is the hash of what each buyer holds in a sale (see usersKey), for
// internal/line, which tells a pass that was used from one that was not (SaleStateLua).
func UsersKey(activityID int64) string { return usersKey(one(activityID)) }

// SaleStateLua defines the reads of a sale's state that internal/line's scripts make in
// the sale's slot, so that only this package knows the fields of its hashes:
//
//	sale_state(sale_key): nil for no sale (or one being archived), else a table of its
//	  avail (units left),
//	  starts and ends (unix ms), room (true: a waiting room), admit (admissions a
//	  second), pass_ttl and prequeue (s), challenge (true: on), cost (the challenge's
//	  maxnumber), passes_used (buyers whose first purchase came with a pass) and early
//	  (unix ms: when the early window opens to the holders of the sale's access codes;
//	  starts for none)
//	holds_any(users_key, user): whether the buyer of key user holds anything in the sale
//	  (holdings.go)
//	code_refused: as CodeLua says (codes.go)
const SaleStateLua = holdingsLua + CodeLua + `
local function sale_state(key)
  local v = redis.call('HMGET', key, 'avail', 'start', 'end', 'room', 'admit', 'pttl', 'preq', 'chal', 'cost', 'rused',
    'archived', 'early')
  if not v[1] or not v[2] or v[11] then return nil end
  local starts = tonumber(v[2])
  return {avail = tonumber(v[1]), starts = starts, ends = tonumber(v[3]), room = v[4] == '1',
    admit = tonumber(v[5] or '0'), pass_ttl = tonumber(v[6] or '300'), prequeue = tonumber(v[7] or '0'),
    challenge = v[8] == '1', cost = tonumber(v[9] or '0'), passes_used = tonumber(v[10] or '0'),
    early = math.min(tonumber(v[12] or starts), starts)}
end
`

// PassesUsed reads, on c (a pipeline), how many buyers of a sale made their first
// purchase with a pass (sale_state's passes_used).
func PassesUsed(ctx context.Context, c redis.Cmdable, activityID int64) *redis.StringCmd {
	return c.HGet(ctx, SaleKey(activityID), "rused")
}

// KeyPrefix is the prefix of every key of a sale, with its hash tag, so a package
// that keeps its own keys of a sale (internal/line) puts them in the sale's slot.
func KeyPrefix(activityID int64) string { return prefix(one(activityID)) }

package stock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// rebuildScript writes the state of a sale that Redis lost, once: it does nothing when
// the sale's hash exists, so two processes that notice the loss at once rebuild it once.
//
// KEYS[1] sale hash  KEYS[2] users hash
// ARGV[1..7] avail, total, limit, start (unix ms), end (unix ms), price, pay window (s)
// ARGV[8] activity id  ARGV[9] the returned-units channel
// ARGV[10..] user id, units, user id, units, ...
// Returns 1 rebuilt, 0 the sale was there.
var rebuildScript = redis.NewScript(unitsLua + `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'avail', ARGV[1], 'total', ARGV[2], 'limit', ARGV[3], 'start', ARGV[4],
  'end', ARGV[5], 'price', ARGV[6], 'paywin', ARGV[7], 'qunits', '0')
redis.call('DEL', KEYS[2])
local users = {}
for i = 10, #ARGV do users[#users + 1] = ARGV[i] end
if #users > 0 then each('HSET', KEYS[2], users) end
redis.call('PUBLISH', ARGV[9], ARGV[8])
return 1
`)

// Rebuild writes a sale's state from its record (MySQL) when Redis has lost it: sale
// holds the settings and the units available, users the units each user holds. It
// returns false, changing nothing, when Redis has the sale (it is then the newer).
// Every API process's sold-out flag of the sale is cleared.
func (s *Stock) Rebuild(ctx context.Context, sale Sale, users map[int64]int64) (bool, error) {
	args := []any{sale.Available, sale.Total, sale.Limit, sale.StartsAt.UnixMilli(), sale.EndsAt.UnixMilli(),
		sale.PriceCents, int64(sale.PayWindow / time.Second), sale.ActivityID, ReturnedChannel}
	for u, n := range users {
		if n > 0 {
			args = append(args, strconv.FormatInt(u, 10), n)
		}
	}
	n, err := rebuildScript.Run(ctx, s.rdb, []string{saleKey(sale.ActivityID), usersKey(sale.ActivityID)}, args...).Int64()
	if err != nil {
		return false, fmt.Errorf("rebuild sale %d: %w", sale.ActivityID, err)
	}
	if n == 1 {
		s.soldOut.clear(sale.ActivityID)
	}
	return n == 1, nil
}

package stock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// SaleLiveLua defines sale_live(sale_key) for the scripts of other packages that write
// beside a sale in its slot (internal/funnel): whether the sale's hash (SaleKey) holds a
// sale that is not being archived, so nothing is written to the keys of a sale that is
// lost or archived.
const SaleLiveLua = saleLiveLua

// QueuedOrders returns the orders of a sale still queued in Redis (not yet in MySQL), of
// every bucket, for the funnel. It reads each bucket's whole queued hash: a few
// thousand entries in a crowd, none once the worker has caught up.
func (s *Stock) QueuedOrders(ctx context.Context, activityID int64) ([]QueuedOrder, error) {
	sale, err := s.saleOf(ctx, activityID)
	if err != nil {
		return nil, err
	}
	all := sale.all()
	cmds := make([]*redis.MapStringStringCmd, len(all))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range all {
			cmds[i] = p.HGetAll(ctx, queuedKey(b))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read queued orders: %w", err)
	}
	var out []QueuedOrder
	for _, c := range cmds {
		for id, v := range c.Val() {
			q, err := parseQueued(activityID, id, v)
			if err != nil {
				return nil, err
			}
			out = append(out, q)
		}
	}
	return out, nil
}

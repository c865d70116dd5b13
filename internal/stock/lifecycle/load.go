// Package lifecycle keeps a sale's state in Redis from its start to its end: a sale is
// loaded and patched (load.go), read whole or in part (read.go), closed and rebuilt
// from MySQL when Redis lost it or holds it stale, its orphaned orders adopted
// (rebuild.go), and, once over, marked archived and removed (archive.go).
package lifecycle

//go:generate go test -run ^TestScripts$ -args -update

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/stock"
	"seckill/internal/stock/moves"
	"seckill/internal/stock/settle"
)

// Sales load, change and read every sale's state in Redis, on a stock.Stock;
// Rebuilds close, rebuild and archive it.
type Sales struct {
	sk     *stock.Stock
	rdb    redis.UniversalClient
	moves  *moves.Mover
	settle *settle.Settler
}

// New returns the Sales of sk.
func New(sk *stock.Stock) *Sales {
	return &Sales{sk: sk, rdb: sk.Redis(), moves: moves.New(sk), settle: settle.New(sk)}
}

// SetRoom changes a sale's waiting room; every API instance and the line see it at
// their next script, and every API process drops its sold-out flag of the sale
// (ReturnedChannel), which remembers whether the sale had a room.
func (s *Sales) SetRoom(ctx context.Context, activityID int64, r stock.Room) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, stock.SaleKey(stock.One(activityID)), r.Fields()...)
		p.Publish(ctx, stock.ReturnedChannel, activityID)
		return nil
	})
	if err != nil {
		return fmt.Errorf("set waiting room of sale %d: %w", activityID, err)
	}
	return nil
}

// SetEarlyAccess moves the opening of a sale's early window to at (the sale's start for
// none: the hash's field early); every API instance and the line see it at their next
// script.
func (s *Sales) SetEarlyAccess(ctx context.Context, activityID int64, at time.Time) error {
	if err := s.rdb.HSet(ctx, stock.SaleKey(stock.One(activityID)), "early", at.UnixMilli()).Err(); err != nil {
		return fmt.Errorf("set early access of sale %d: %w", activityID, err)
	}
	return nil
}

// Load writes a new sale's state. The sale can be bought from when Load returns. A sale
// of several buckets gets its units spread evenly over them; bucket 0 is written last,
// so a sale Redis has is a sale whole.
func (s *Sales) Load(ctx context.Context, sale stock.Sale) error {
	all := stock.Whole(sale.ActivityID, sale.Buckets).All()
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := len(all) - 1; i >= 0; i-- {
			fields := []any{"avail", stock.Share(sale.Available, i, len(all))}
			if len(sale.Variants) > 0 { // each variant spread; the bucket's avail their sum
				var sum int64
				for j, v := range sale.Variants {
					n := stock.Share(v.Available, i, len(all))
					fields, sum = append(fields, stock.VariantField("avail", stock.VariantAt(j)), n), sum+n
				}
				fields[1] = sum
			}
			fields = append(fields, sale.Fields()...)
			if len(all) > 1 && i == 0 {
				fields = append(fields, "reserve", 0)
			}
			p.HSet(ctx, stock.SaleKey(all[i]), fields...)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load sale %d: %w", sale.ActivityID, err)
	}
	s.sk.LearnBuckets(sale.ActivityID, len(all))
	return nil
}

// Patch changes a sale: a new limit and end time when not nil, and addStock more units,
// or, in a sale of variants, addVariants' units more of each variant by index (in the
// reserve of a sale of several buckets, which hands them to the buckets that run
// short). Every API process drops its sold-out flag of the sale (ReturnedChannel). A
// sale of one bucket changes in one transaction; a sale of several, bucket by bucket,
// its units last (a failure between leaves fewer units to sell, never more: the ledger
// shows it, and a rebuild from MySQL mends it).
func (s *Sales) Patch(ctx context.Context, activityID int64, limit *int, endsAt *time.Time, addStock int64, addVariants map[int]int64) error {
	sale, err := s.sk.SaleOf(ctx, activityID)
	if err != nil {
		return err
	}
	for _, n := range addVariants {
		addStock += n
	}
	settings := func(p redis.Pipeliner) {
		for _, b := range sale.All() {
			key := stock.SaleKey(b)
			if limit != nil {
				p.HSet(ctx, key, "limit", *limit)
			}
			if endsAt != nil {
				p.HSet(ctx, key, "end", endsAt.UnixMilli())
			}
			if addStock > 0 {
				p.HIncrBy(ctx, key, "total", addStock)
			}
			for i, n := range addVariants {
				p.HIncrBy(ctx, key, stock.VariantField("total", stock.VariantAt(i)), n)
			}
		}
	}
	units := func(p redis.Pipeliner) {
		field := "avail"
		if sale.K() > 1 {
			field = "reserve"
		}
		if addStock > 0 {
			p.HIncrBy(ctx, stock.SaleKey(stock.One(activityID)), field, addStock)
		}
		for i, n := range addVariants {
			p.HIncrBy(ctx, stock.SaleKey(stock.One(activityID)), stock.VariantField(field, stock.VariantAt(i)), n)
		}
		p.Publish(ctx, stock.ReturnedChannel, activityID)
	}
	if sale.K() <= 1 {
		_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { settings(p); units(p); return nil })
	} else if _, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { settings(p); return nil }); err == nil {
		_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { units(p); return nil })
	}
	if err != nil {
		return fmt.Errorf("patch sale %d: %w", activityID, err)
	}
	s.sk.UnitsBack(activityID) // this process at once; the others by the message
	return nil
}

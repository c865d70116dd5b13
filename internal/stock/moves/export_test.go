package moves

import (
	"context"

	"seckill/internal/stock"
)

// Take and Apply are the two halves of a move, for the tests that leave one undone (the
// mover's process dying between them).
func Take(ctx context.Context, s *Mover, from stock.Bucket, field string, want int64, divisor int, id string, to int) (Move, error) {
	m := Move{id: id, from: from, to: to}
	var err error
	m.Units, _, m.stamp, err = s.take(ctx, from, field, want, divisor, id, to, 0)
	return m, err
}

func Apply(ctx context.Context, s *Mover, m Move) error { return s.apply(ctx, m) }

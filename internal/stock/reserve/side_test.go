package reserve

import (
	"github.com/redis/go-redis/v9"

	"seckill/internal/stock"
	"seckill/internal/stock/lifecycle"
)

// side is what this package's own tests run purchases on: the core, this package's
// purchase path and the sales' lifecycle, on one stock.Stock (the package's other
// tests use internal/stock/stocktest).
type side struct {
	*stock.Stock
	*Reserver
	*lifecycle.Sales
}

func newSide(rdb redis.UniversalClient) *side {
	sk := stock.New(rdb)
	return &side{Stock: sk, Reserver: New(sk), Sales: lifecycle.New(sk)}
}

package reserve

import (
	"github.com/redis/go-redis/v9"

	"seckill/internal/stock"
	"seckill/internal/stock/lifecycle"
	"seckill/internal/stock/settle"
)

// side is what this package's own tests run purchases on: the core, this package's
// purchase path, the sales' lifecycle and the settling of orders, on one stock.Stock (the package's other
// tests use internal/stock/stocktest).
type side struct {
	*stock.Stock
	*Reserver
	*lifecycle.Sales
	*lifecycle.Rebuilds
	*settle.Settler
}

func newSide(rdb redis.UniversalClient) *side {
	sk := stock.New(rdb)
	return &side{Stock: sk, Reserver: New(sk), Sales: lifecycle.New(sk), Rebuilds: lifecycle.NewRebuilds(sk),
		Settler: settle.New(sk)}
}

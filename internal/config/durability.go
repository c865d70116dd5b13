package config

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The values of SECKILL_REDIS_DURABILITY.
const (
	// DurabilityRequired starts the API, outside dev mode, only on a Redis that keeps a
	// 202 through a crash.
	DurabilityRequired = "required"
	// DurabilityNone starts it on any Redis, and says so.
	DurabilityNone = "none"
)

// ErrNotDurable is a Redis on which an acknowledged purchase may not survive a crash.
var ErrNotDurable = errors.New("a Redis crash can lose acknowledged orders")

// CheckDurability says whether a purchase answered 202 survives a crash of the Redis
// it was taken on: it does when SECKILL_REDIS_MIN_REPLICAS >= 1 (a replica holds it
// before the answer) or when every master the client talks to has AOF on (INFO
// persistence, aof_enabled: the API is built for appendfsync always, which INFO does
// not show). The masters are the one server, the master the Sentinels name now, or
// every master of the Cluster. With SECKILL_REDIS_DURABILITY=none it asks nothing and
// answers false. A master without AOF is an error wrapping ErrNotDurable that names the
// variables and the master; a master that does not answer is an error wrapping
// errUnreachable (IsUnreachable), for the caller to ask again once Redis answers.
func (c Config) CheckDurability(ctx context.Context, rdb redis.UniversalClient) (bool, error) {
	switch {
	case c.RedisDurability == DurabilityNone:
		return false, nil
	case c.MinReplicas >= 1:
		return true, nil
	}
	check := func(ctx context.Context, node *redis.Client) error {
		info, err := node.Info(ctx, "persistence").Result()
		if err != nil {
			return fmt.Errorf("redis %s: INFO persistence: %w: %w", node.Options().Addr, errUnreachable, err)
		}
		if !strings.Contains(info, "aof_enabled:1") {
			return fmt.Errorf("SECKILL_REDIS_DURABILITY: the Redis master %s keeps no AOF (appendonly no) and SECKILL_REDIS_MIN_REPLICAS is 0, so %w: turn AOF on (appendonly yes, appendfsync always), or set SECKILL_REDIS_MIN_REPLICAS=1 with a replica, or SECKILL_REDIS_DURABILITY=none to start anyway",
				node.Options().Addr, ErrNotDurable)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var err error
	switch r := rdb.(type) {
	case *redis.ClusterClient:
		err = r.ForEachMaster(ctx, check)
	case *redis.Client: // one server, or the master the Sentinels name
		err = check(ctx, r)
	default:
		err = fmt.Errorf("redis durability: a client of type %T", rdb)
	}
	return err == nil, err
}

// IsUnreachable reports an error of a Redis that could not be reached, rather than one
// that answered wrong.
func IsUnreachable(err error) bool { return errors.Is(err, errUnreachable) }

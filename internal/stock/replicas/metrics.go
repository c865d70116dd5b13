package replicas

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

var (
	replicasDesc = prometheus.NewDesc("seckill_redis_connected_replicas",
		"Replicas connected to a Redis master (INFO replication), by master address (\"\" for one server or Sentinel's master).",
		[]string{"master"}, nil)
	minReplicasDesc = prometheus.NewDesc("seckill_redis_min_replicas",
		"SECKILL_REDIS_MIN_REPLICAS: replicas that must hold a reservation before its purchase is answered 202.", nil, nil)
)

// Collector returns the metrics of the replicas purchases wait for, read at each
// scrape: how many replicas each master has connected, and how many a purchase needs.
// A master with fewer than that refuses every purchase of its sales 503. A master
// that does not answer INFO (down, or an ACL without it) shows no figure; an ACL that
// refuses INFO is logged once, as a warning.
func (r *Replicas) Collector() prometheus.Collector { return replicasCollector{r} }

type replicasCollector struct{ r *Replicas }

func (c replicasCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- replicasDesc
	ch <- minReplicasDesc
}

func (c replicasCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(minReplicasDesc, prometheus.GaugeValue, float64(c.r.n))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.r.eachMaster(ctx, func(addr string, connected int, err error) error {
		if err == nil {
			ch <- prometheus.MustNewConstMetric(replicasDesc, prometheus.GaugeValue, float64(connected), addr)
		}
		return nil
	})
}

// errInfoRefused is an ACL that refuses INFO: the replicas cannot be counted, which
// is logged once and is not a fault of Redis.
var errInfoRefused = errors.New("INFO refused")

// eachMaster calls fn with each master's address ("" for one server or Sentinel's
// master) and the replicas connected to it (INFO replication), or the error of asking
// it, and returns the first error fn returns.
func (r *Replicas) eachMaster(ctx context.Context, fn func(addr string, connected int, err error) error) error {
	ask := func(ctx context.Context, node *redis.Client, addr string) error {
		info, err := node.Info(ctx, "replication").Result()
		if err != nil {
			if strings.HasPrefix(err.Error(), "NOPERM") {
				r.infoRefused.Do(func() {
					slog.Warn("redis refuses INFO to this user: seckill_redis_connected_replicas stays empty and /readyz does not count replicas "+
						"(WAIT still guards every purchase); add +info to its ACL rule", "err", err)
				})
				err = fmt.Errorf("%w: %v", errInfoRefused, err)
			}
			return fn(addr, 0, err)
		}
		n, ok := connectedReplicas(info)
		if !ok {
			return fn(addr, 0, fmt.Errorf("no connected_slaves in INFO replication of %q", addr))
		}
		return fn(addr, n, nil)
	}
	switch rdb := r.rdb.(type) {
	case *redis.ClusterClient:
		return rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return ask(ctx, node, node.Options().Addr)
		})
	case *redis.Client:
		return ask(ctx, rdb, "")
	}
	return fmt.Errorf("replicas: unsupported client %T", r.rdb)
}

// connectedReplicas reads connected_slaves from INFO replication's text.
func connectedReplicas(info string) (int, bool) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			n, err := strconv.Atoi(v)
			return n, err == nil
		}
	}
	return 0, false
}

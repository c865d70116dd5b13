package presence

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	instancesDesc = prometheus.NewDesc("seckill_instances",
		"Processes alive by their heartbeats in Redis, by kind (api, worker).", []string{"kind"}, nil)
	clockDesc = prometheus.NewDesc("seckill_clock_offset_seconds",
		"This process's clock minus Redis' clock (TIME), measured at the scrape; the round trip's half is the error bound.", nil, nil)
)

// collector reads the live processes and this process's clock offset at each scrape.
type collector struct {
	r   *Registry
	now func() time.Time
}

// Collector returns the metrics read from Redis at each scrape: the processes alive by
// kind, and how far now, this process's clock, is from Redis' clock, which judges
// every sale window and pass. A scrape while Redis does not answer shows neither.
func (r *Registry) Collector(now func() time.Time) prometheus.Collector {
	return collector{r: r, now: now}
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- instancesDesc
	ch <- clockDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if list, err := c.r.List(ctx); err == nil {
		kinds := map[string]int{"api": 0, "worker": 0}
		for _, in := range list {
			kinds[in.Kind]++
		}
		for k, n := range kinds {
			ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(n), k)
		}
	}
	sent := c.now()
	redisNow, err := c.r.rdb.Time(ctx).Result()
	if err != nil {
		return
	}
	back := c.now()
	// Redis read its clock somewhere in the round trip: take the middle.
	local := sent.Add(back.Sub(sent) / 2)
	ch <- prometheus.MustNewConstMetric(clockDesc, prometheus.GaugeValue, local.Sub(redisNow).Seconds())
}

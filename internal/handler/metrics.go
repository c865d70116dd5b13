package handler

import (
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the API's request counters and latency histograms.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_http_requests_total",
			Help: "HTTP requests by route, status and error code (\"\" for successes).",
		}, []string{"route", "status", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "seckill_http_request_duration_seconds",
			Help:    "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

func (m *metrics) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, strconv.Itoa(c.Writer.Status()), c.GetString(errorCodeKey)).Inc()
	m.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
}

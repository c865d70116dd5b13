package handler

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"seckill/internal/funnel"
	"seckill/internal/presence"
	"seckill/internal/sale"
)

// metrics are the API's request counters and latency histograms, and the purchase
// answers per sale for the heartbeat.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	shed     prometheus.Counter
	answers  *presence.Answers // nil: not counted
	refusals *funnel.Refusals  // nil: not counted
}

func newMetrics(reg prometheus.Registerer, answers *presence.Answers, refusals *funnel.Refusals) *metrics {
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
		shed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seckill_purchases_shed_total",
			Help: "Purchases and seats refused 503 at once because this process had its bound in flight.",
		}),
		answers: answers, refusals: refusals,
	}
	reg.MustRegister(m.requests, m.latency, m.shed)
	return m
}

// The routes whose answers are counted per sale: a purchase, and in a group-buy sale a
// seat (a group opened or joined).
const (
	purchaseRoute  = "/api/v1/activities/:id/orders"
	openGroupRoute = "/api/v1/activities/:id/groups"
	joinGroupRoute = "/api/v1/groups/:gid/join"
)

// saleOfPurchase returns the sale a purchase or a seat is for; false for any other
// request (or a path naming no sale).
func saleOfPurchase(c *gin.Context, route string) (int64, bool) {
	if c.Request.Method != http.MethodPost {
		return 0, false
	}
	switch route {
	case purchaseRoute, openGroupRoute:
		return pathID(c, "id")
	case joinGroupRoute:
		return sale.ActivityOf(c.Param("gid"))
	}
	return 0, false
}

func (m *metrics) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	status, code := c.Writer.Status(), c.GetString(errorCodeKey)
	m.requests.WithLabelValues(route, strconv.Itoa(status), code).Inc()
	m.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
	// Per sale, outside Prometheus: a label per sale would grow /metrics with every sale.
	if m.answers == nil && m.refusals == nil {
		return
	}
	id, ok := saleOfPurchase(c, route)
	if !ok {
		return
	}
	if o, ok := purchaseOutcome(status, code); ok && m.answers != nil {
		m.answers.Count(id, o)
	}
	// The funnel's, flushed to Redis in batches; a 404 names no sale to count it for.
	if m.refusals != nil && status >= 400 && status < 500 && code != "" && status != http.StatusNotFound {
		m.refusals.Count(id, code)
	}
}

// purchaseOutcome is the outcome of a purchase answered status with the error code
// code; false for answers not counted per sale (a replay's 200, a 400, a 404, a 500).
func purchaseOutcome(status int, code string) (presence.Outcome, bool) {
	switch status {
	case http.StatusAccepted:
		return presence.Accepted, true
	case http.StatusConflict:
		switch code {
		case "sold_out":
			return presence.SoldOut, true
		case "limit_exceeded":
			return presence.LimitExceeded, true
		}
		return presence.Refused, true
	case http.StatusTooManyRequests:
		return presence.RateLimited, true
	case http.StatusServiceUnavailable:
		return presence.Unavailable, true
	}
	return 0, false
}

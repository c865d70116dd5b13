// Package handler is the HTTP API documented in api/openapi.yaml, on Gin: routes, authentication, rate limits, body limits, and the
// one place where errors become statuses (errors.go).
package handler

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	apidoc "seckill/api"
	"seckill/internal/admission"
	"seckill/internal/altcha"
	"seckill/internal/auth"
	"seckill/internal/health"
	"seckill/internal/line"
	"seckill/internal/presence"
	"seckill/internal/ratelimit"
	"seckill/internal/sale"
	"seckill/internal/stock"
	"seckill/web"
)

// Service is what the handlers need from internal/sale.
type Service interface {
	CreateActivity(ctx context.Context, n sale.NewActivity) (sale.Activity, error)
	ListActivities(ctx context.Context) ([]sale.Activity, error)
	GetActivity(ctx context.Context, id int64) (sale.Activity, error)
	PatchActivity(ctx context.Context, id int64, p sale.ActivityPatch) (sale.Activity, error)
	Stats(ctx context.Context, id int64) (sale.Stats, error)
	Ledger(ctx context.Context, id int64) (sale.Ledger, error)
	Rebuild(ctx context.Context, id int64) (sale.Stats, error)
	Buy(ctx context.Context, r sale.BuyRequest) (sale.Order, bool, error)
	Variant(ctx context.Context, activityID int64, name string) (stock.Variant, error)
	GetOrder(ctx context.Context, id string, c sale.Caller) (sale.Order, error)
	ListOrders(ctx context.Context, c sale.Caller) ([]sale.Order, error)
	Pay(ctx context.Context, id string, c sale.Caller) (sale.Order, error)
	Cancel(ctx context.Context, id string, c sale.Caller) (sale.Order, error)
	Seat(ctx context.Context, r sale.BuyRequest) (sale.Group, sale.Order, bool, error)
	GetGroup(ctx context.Context, id string) (sale.Group, error)
	OpenGroups(ctx context.Context, activityID int64, limit int) ([]sale.Group, error)
	AllGroups(ctx context.Context, activityID int64, limit int) ([]sale.Group, error)
	MissingSale(ctx context.Context, activityID int64) error
}

var _ Service = (*sale.Service)(nil)

// InstanceLister lists the processes alive now, by their heartbeats.
type InstanceLister interface {
	List(ctx context.Context) ([]presence.Instance, error)
}

var _ InstanceLister = (*presence.Registry)(nil)

// Options configure the handlers.
type Options struct {
	// JWTSecret signs and checks bearer tokens.
	JWTSecret string
	// IdP, when set, is a shop's identity provider whose RS256 and ES256 tokens are
	// accepted beside the HS256 ones.
	IdP *auth.IdP
	// RateUser and RateIP are requests per second per user and per client IP over all
	// the API instances; 0 is no limit. This process allows its share of them
	// (internal/ratelimit); purchases that reach Redis are limited by the reserve
	// script instead (sale.Service.UserRate).
	RateUser, RateIP float64
	// InFlight and SaleInFlight bound the purchases (and seats) this process has in
	// flight, in all and of one sale; past either the answer is 429 rate_limited with
	// Retry-After at once (internal/admission). 0 is no bound.
	InFlight, SaleInFlight int
	// APIs counts the live API instances that share the limits (presence.Peers); nil
	// means this one alone.
	APIs func() int
	// TrustedProxies are the CIDRs (or addresses) whose X-Forwarded-For names the
	// client IP; none by default, so the client IP is the peer's.
	TrustedProxies []string
	// CORSOrigins are the origins (scheme://host[:port]) whose pages may call /api/v1
	// from a browser (cors.go); none by default.
	CORSOrigins []string
	// Instances lists the live API and worker processes for the admin (presence);
	// nil answers an empty list.
	Instances InstanceLister
	// Registry receives the HTTP metrics; /metrics serves it.
	Registry *prometheus.Registry
	// Answers, when set, counts purchase answers per sale for the heartbeat.
	Answers *presence.Answers
	// Webhooks are the shop's endpoints that receive the events (internal/outbox);
	// nil answers their routes with none.
	Webhooks Webhooks
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// Line runs the sales' waiting rooms (internal/line); Passes checks the sale
	// passes it hands out, in this process. Both are needed by the line's routes and
	// by purchases of a waiting-room sale.
	Line   Line
	Passes *auth.Passes
	// Ready answers /readyz (health.Probe: Redis needed, MySQL reported); nil answers
	// ready with nothing checked, for tests of the routes alone.
	Ready *health.Probe
}

// Handler serves the API.
type Handler struct {
	svc     Service
	tokens  *auth.Verifier
	perUser *ratelimit.Limiter
	perIP   *ratelimit.Limiter
	gate    *admission.Gate
	metrics *metrics
	reg     *prometheus.Registry
	now     func() time.Time
	proxies []string
	cors    *cors
	live    InstanceLister
	line    Line
	passes  *auth.Passes
	hooks   Webhooks
	ready   *health.Probe
}

// New returns a Handler over svc.
func New(svc Service, o Options) *Handler {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.Ready == nil {
		o.Ready = health.NewProbe(nil)
	}
	if o.APIs != nil {
		o.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seckill_api_instances",
			Help: "Live API instances, by the heartbeats, that this one shares the rate limits with.",
		}, func() float64 { return float64(o.APIs()) }))
	}
	gate := admission.New(o.InFlight, o.SaleInFlight)
	o.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "seckill_purchases_in_flight",
		Help: "Purchases and seats this process is answering now (bound: SECKILL_PURCHASES_IN_FLIGHT).",
	}, func() float64 { return float64(gate.InFlight()) }))
	return &Handler{svc: svc, tokens: auth.NewVerifier(o.JWTSecret, o.IdP), gate: gate,
		perUser: ratelimit.New(o.RateUser, o.APIs), perIP: ratelimit.New(o.RateIP, o.APIs),
		metrics: newMetrics(o.Registry, o.Answers), reg: o.Registry, now: o.Now, proxies: o.TrustedProxies,
		cors: newCORS(o.CORSOrigins), live: o.Instances, line: o.Line, passes: o.Passes, hooks: o.Webhooks, ready: o.Ready}
}

// Routes returns the API's http.Handler.
func (h *Handler) Routes() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	// The client IP is the peer's, or, from a trusted proxy only, the last address of
	// X-Forwarded-For that is not itself a trusted proxy. config.Load checked the CIDRs;
	// one gin still refuses is said in the log (gin then trusts the entries before it).
	r.TrustedPlatform = "" // no platform header (CF-Connecting-IP and the like) is believed
	r.RemoteIPHeaders = []string{"X-Forwarded-For"}
	if err := r.SetTrustedProxies(h.proxies); err != nil {
		slog.Error("trusted proxies: an entry is refused", "proxies", h.proxies, "err", err)
	}
	r.Use(h.recover, h.metrics.observe)
	if h.cors != nil { // before every other check, so their refusals carry its headers
		r.Use(h.cors.headers)
	}
	r.Use(limitBody)
	web.Register(r) // the buyer's page at /, the admin's at /admin
	r.NoRoute(func(c *gin.Context) { respondError(c, errNoRoute) })
	r.NoMethod(func(c *gin.Context) {
		if !h.cors.preflight(c) { // a preflight: gin found the path, and no OPTIONS route
			respondError(c, errMethod)
		}
	})

	r.GET("/healthz", gin.WrapF(health.Live))
	r.GET("/readyz", gin.WrapH(h.ready))
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(h.reg, promhttp.HandlerOpts{})))

	api := r.Group("/api/v1", h.limitIP)
	api.GET("/activities", h.listActivities)
	api.GET("/activities/:id", byActivity(h.svc.GetActivity))
	api.GET("/activities/:id/groups", h.listGroups(false))
	api.GET("/groups/:gid", h.getGroup)
	api.GET("/openapi.yaml", openAPI) // the reference at /docs renders it
	api.GET("/activities/:id/line/challenge", byActivity(func(ctx context.Context, id int64) (altcha.Challenge, error) {
		ch, err := h.line.Challenge(ctx, id)
		return ch, h.lineError(ctx, id, err)
	}))

	// Purchases are limited where they are answered: by the reserve script when they
	// reach Redis, here when the process answers them itself (purchaseError). Past the
	// bound of purchases in flight they are refused before anything else is done.
	buying := r.Group("/api/v1", h.admit, h.limitIP, h.authenticate)
	buying.POST("/activities/:id/orders", h.requireBuyer, h.buy)
	buying.POST("/activities/:id/groups", h.requireBuyer, h.seat(true))
	buying.POST("/groups/:gid/join", h.requireBuyer, h.seat(false))
	buyer := api.Group("", h.authenticate, h.limitUser)
	buyer.POST("/activities/:id/line", h.requireBuyer, h.joinLine)
	buyer.GET("/activities/:id/line", h.requireBuyer, h.ticket)
	buyer.GET("/orders", h.listOrders)
	buyer.GET("/orders/:id", byOrder(h.svc.GetOrder))
	buyer.POST("/orders/:id/pay", byOrder(h.svc.Pay))
	buyer.POST("/orders/:id/cancel", byOrder(h.svc.Cancel))

	admin := api.Group("/admin", h.authenticate, h.requireAdmin)
	admin.POST("/activities", h.createActivity)
	admin.GET("/activities", h.listActivities)
	admin.PATCH("/activities/:id", h.patchActivity)
	admin.GET("/activities/:id/stats", byActivity(h.svc.Stats))
	admin.GET("/activities/:id/ledger", byActivity(h.svc.Ledger))
	admin.POST("/activities/:id/rebuild", byActivity(h.svc.Rebuild))
	admin.GET("/activities/:id/groups", h.listGroups(true))
	admin.GET("/activities/:id/line", byActivity(func(ctx context.Context, id int64) (line.Figures, error) {
		return h.line.Figures(ctx, id)
	}))
	admin.GET("/instances", h.instances)
	admin.POST("/webhooks", h.createWebhook)
	admin.GET("/webhooks", h.listWebhooks)
	admin.DELETE("/webhooks/:id", h.deleteWebhook)
	admin.GET("/webhooks/:id/deliveries", h.webhookDeliveries)
	return r
}

// openAPI answers the API's own OpenAPI document, the bytes committed in api/openapi.yaml.
func openAPI(c *gin.Context) {
	c.Header("Cache-Control", "no-cache")
	c.Data(http.StatusOK, "application/yaml; charset=utf-8", apidoc.OpenAPI)
}

// instances lists the live processes: APIs first, then workers, the oldest first.
func (h *Handler) instances(c *gin.Context) {
	out := []presence.Instance{}
	if h.live != nil {
		list, err := h.live.List(c.Request.Context())
		if err != nil {
			respondError(c, fmt.Errorf("%w: %w", sale.ErrUnavailable, err))
			return
		}
		out = append(out, list...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].StartedAt.Before(out[j].StartedAt.Time)
	})
	c.JSON(http.StatusOK, gin.H{"instances": out})
}

// recover turns a panic into 500 internal, with the details in the log only.
func (h *Handler) recover(c *gin.Context) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			respondError(c, fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
		}
	}()
	c.Next()
}

// limitBody refuses bodies over 64 KiB on every route, whether it reads its body or
// not: at once when Content-Length says so; a body of unknown length (chunked) is read
// here, up to one byte past the limit.
func limitBody(c *gin.Context) {
	if c.Request.ContentLength > maxBody {
		respondError(c, errTooLarge)
		return
	}
	if c.Request.ContentLength < 0 {
		b, err := io.ReadAll(io.LimitReader(c.Request.Body, maxBody+1))
		switch {
		case err != nil:
			respondError(c, errUnreadableBody)
			return
		case len(b) > maxBody:
			respondError(c, errTooLarge)
			return
		}
		c.Request.Body, c.Request.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxBody)
	c.Next()
}

const identityKey = "identity"

// authenticate checks the bearer token and stores the caller.
func (h *Handler) authenticate(c *gin.Context) {
	header := c.GetHeader("Authorization")
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || token == "" {
		respondError(c, errUnauthorized)
		return
	}
	id, err := h.tokens.Verify(token, h.now())
	if err != nil {
		respondError(c, errUnauthorized)
		return
	}
	c.Set(identityKey, id)
	c.Next()
}

func caller(c *gin.Context) sale.Caller {
	id := c.MustGet(identityKey).(auth.Identity)
	return sale.Caller{Buyer: id.Buyer, Admin: id.Admin, Service: id.Service}
}

func (h *Handler) requireAdmin(c *gin.Context) {
	if !caller(c).Admin {
		respondError(c, errForbidden)
		return
	}
	c.Next()
}

// admit counts a purchase in flight while it is answered; past the process's or the
// sale's bound it is refused at once, before its token is checked or its body read.
func (h *Handler) admit(c *gin.Context) {
	id, _ := saleOfPurchase(c, c.FullPath()) // 0 for a path naming no sale: answered 404 soon
	if !h.gate.Enter(id) {
		h.metrics.shed.Inc()
		respondError(c, errOverloaded)
		return
	}
	defer h.gate.Leave(id)
	c.Next()
}

// requireBuyer refuses a shop's back end (role service) the routes that buy.
func (h *Handler) requireBuyer(c *gin.Context) {
	if caller(c).Service {
		respondError(c, errNotBuyer)
		return
	}
	c.Next()
}

// limitIP limits requests per client IP. A shop's back end confirms the payments of a
// whole crowd from one address, so a request the limit refuses still passes when it
// carries a valid service token (the check costs a verification only for requests
// over the limit, and verified tokens are cached).
func (h *Handler) limitIP(c *gin.Context) {
	if !h.perIP.On() {
		c.Next()
		return
	}
	if ok, wait := h.perIP.Allow(c.ClientIP(), h.now()); !ok && !h.fromService(c) {
		respondError(c, &limited{wait})
		return
	}
	c.Next()
}

// limitUser limits requests per user; a shop's back end (role service) is not a user.
func (h *Handler) limitUser(c *gin.Context) {
	if caller(c).Service || h.allow(c, h.perUser, userKey(c)) {
		c.Next()
	}
}

func userKey(c *gin.Context) string { return string(caller(c).Buyer) }

// allow counts a request of key against l; past the limit it answers 429 with
// Retry-After and returns false.
func (h *Handler) allow(c *gin.Context, l *ratelimit.Limiter, key string) bool {
	if ok, wait := l.Allow(key, h.now()); !ok {
		respondError(c, &limited{wait})
		return false
	}
	return true
}

// fromService reports whether the request carries a valid token of role service.
func (h *Handler) fromService(c *gin.Context) bool {
	token, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	if !ok || token == "" {
		return false
	}
	id, err := h.tokens.Verify(token, h.now())
	return err == nil && id.Service
}

// limited is errRateLimited with the wait until the next request is allowed.
type limited struct{ wait time.Duration }

func (e *limited) Error() string             { return errRateLimited.Error() }
func (e *limited) Unwrap() error             { return errRateLimited }
func (e *limited) RetryAfter() time.Duration { return e.wait }

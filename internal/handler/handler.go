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

	apidoc "seckill/api"
	"seckill/internal/admission"
	"seckill/internal/altcha"
	"seckill/internal/auth"
	"seckill/internal/buyer"
	"seckill/internal/funnel"
	"seckill/internal/health"
	"seckill/internal/presence"
	"seckill/internal/ratelimit"
	"seckill/internal/sale"
	"seckill/internal/waitingroom"
	"seckill/web"
)

// Service is what the handlers need from internal/sale.
type Service interface {
	CreateActivity(ctx context.Context, n sale.NewActivity) (sale.Activity, error)
	ListActivities(ctx context.Context, p sale.Page) ([]sale.Activity, int64, error)
	PublicActivities(ctx context.Context, p sale.Page) ([]sale.Activity, int64, error)
	PublicActivity(ctx context.Context, id int64) (sale.Activity, error)
	GetActivity(ctx context.Context, id int64) (sale.Activity, error)
	PatchActivity(ctx context.Context, id int64, p sale.ActivityPatch) (sale.Activity, error)
	Stats(ctx context.Context, id int64) (sale.Stats, error)
	Ledger(ctx context.Context, id int64) (sale.Ledger, error)
	Rebuild(ctx context.Context, id int64) (sale.Stats, error)
	Buy(ctx context.Context, r sale.BuyRequest) (sale.Order, bool, error)
	JoinWaitlist(ctx context.Context, activityID int64, who buyer.ID, quantity int, variant *string, ticket bool) (sale.WaitlistEntry, bool, error)
	Waitlist(ctx context.Context, activityID int64, who buyer.ID) (sale.WaitlistEntry, error)
	LeaveWaitlist(ctx context.Context, activityID int64, who buyer.ID) error
	GetOrder(ctx context.Context, id string, c sale.Caller) (sale.Order, error)
	ListOrders(ctx context.Context, c sale.Caller) ([]sale.Order, error)
	SaleOrders(ctx context.Context, c sale.Caller, p sale.OrderPage) ([]sale.Order, error)
	Pay(ctx context.Context, id string, c sale.Caller) (sale.Order, error)
	Cancel(ctx context.Context, id string, c sale.Caller) (sale.Order, error)
	Refund(ctx context.Context, id string, c sale.Caller, restock bool) (sale.Order, error)
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
	// Retry-After at once (internal/admission). 0 is no bound. A purchase takes its
	// place only once its token is verified and its body has arrived (arrived).
	InFlight, SaleInFlight int
	// BodyTimeout bounds the arrival of a request's whole body (SECKILL_BODY_TIMEOUT):
	// past it the answer is 408 request_timeout and the connection is closed. 0 means
	// DefaultBodyTimeout.
	BodyTimeout time.Duration
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
	// Registry receives the HTTP metrics; the operations port's /metrics serves it
	// (health.Operations), never these routes.
	Registry *prometheus.Registry
	// Answers, when set, counts purchase answers per sale for the heartbeat.
	Answers *presence.Answers
	// Webhooks are the shop's endpoints that receive the events (internal/outbox);
	// nil answers their routes with none.
	Webhooks Webhooks
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// Rooms runs the sales' waiting rooms (internal/waitingroom); Passes checks the sale
	// passes they hand out, in this process. Both are needed by the rooms' routes and
	// by purchases of a waiting-room sale.
	Rooms  Rooms
	Passes *auth.Passes
	// Funnel answers the sales' funnels; nil answers their route 404. Refusals, when
	// set, counts the purchases refused (4xx) per sale and error code for them.
	Funnel   Funnel
	Refusals *funnel.Refusals
	// Trace, when set, starts the server span of each request (telemetry.Tracing.Gin):
	// the first middleware, so the span covers the whole answer.
	Trace gin.HandlerFunc
	// Ready answers /readyz (health.Probe: Redis needed, MySQL reported); nil answers
	// ready with nothing checked, for tests of the routes alone.
	Ready *health.Probe
	// Codes are the sales' access codes (internal/accesscode); nil answers their
	// routes 404.
	Codes AccessCodes
}

// Handler serves the API.
type Handler struct {
	svc     Service
	tokens  *auth.Verifier
	perUser *ratelimit.Limiter
	perIP   *ratelimit.Limiter
	gate    *admission.Gate
	metrics *metrics
	now     func() time.Time
	proxies []string
	cors    *cors
	live    InstanceLister
	rooms   Rooms
	passes  *auth.Passes
	cursors *auth.Cursors
	hooks   Webhooks
	ready   *health.Probe
	trace   gin.HandlerFunc
	funnels Funnel
	codes   AccessCodes
	// statuses are the lines' public statuses as last encoded (shared.go).
	statuses answers[waitingroom.Status]

	bodyTimeout time.Duration
}

// DefaultBodyTimeout is SECKILL_BODY_TIMEOUT's default, for handlers built without one.
const DefaultBodyTimeout = 2 * time.Second

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
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
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
		metrics: newMetrics(o.Registry, o.Answers, o.Refusals), now: o.Now, proxies: o.TrustedProxies,
		cors: newCORS(o.CORSOrigins), live: o.Instances, rooms: o.Rooms, passes: o.Passes, hooks: o.Webhooks, ready: o.Ready, trace: o.Trace, funnels: o.Funnel,
		codes: o.Codes, cursors: auth.NewCursors(o.JWTSecret), bodyTimeout: o.BodyTimeout}
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
	if h.trace != nil {
		r.Use(h.trace)
	}
	r.Use(h.recover, h.metrics.observe)
	if h.cors != nil { // before every other check, so their refusals carry its headers
		r.Use(h.cors.headers)
	}
	r.Use(h.limitBody, noStore)
	// A body of unknown length is read whole (wholeBody) before a route without a token
	// answers, and after the token of one with a token is verified: an upload by someone
	// the API does not know is never waited for on a route that needs a token.
	open := r.Group("", h.wholeBody)
	web.Register(open) // the buyer's page at /, the admin's at /admin
	r.NoRoute(h.wholeBody, func(c *gin.Context) { respondError(c, errNoRoute) })
	r.NoMethod(h.wholeBody, func(c *gin.Context) {
		if !h.cors.preflight(c) { // a preflight: gin found the path, and no OPTIONS route
			respondError(c, errMethod)
		}
	})

	open.GET("/healthz", gin.WrapF(health.Live))
	open.GET("/readyz", gin.WrapH(h.ready))
	// /metrics is not here: it is on the operations port (health.Operations).

	api := r.Group("/api/v1", h.wholeBody, h.limitIP)
	// The public reads a crowd repeats, which a shared cache may keep (shared.go).
	api.GET("/activities", listActivities(h.svc.PublicActivities, answerShared))
	api.GET("/activities/:id", sharedByActivity(h.svc.PublicActivity))
	api.GET("/activities/:id/line/status", h.lineStatus)
	api.GET("/activities/:id/groups", h.listGroups(false))
	api.GET("/groups/:gid", h.getGroup)
	api.GET("/openapi.yaml", openAPI) // the reference at /docs renders it
	api.GET("/activities/:id/line/challenge", byActivity(func(ctx context.Context, id int64) (altcha.Challenge, error) {
		ch, err := h.rooms.Challenge(ctx, id)
		return ch, h.lineError(ctx, id, err)
	}))

	// Purchases are limited where they are answered: by the reserve script when they
	// reach Redis, here when the process answers them itself (purchaseError). They
	// count toward the per-IP limit and the bound of purchases in flight only once they
	// have arrived whole (arrived).
	buying := r.Group("/api/v1")
	buying.POST("/activities/:id/orders", h.arrived(h.buy))
	buying.POST("/activities/:id/groups", h.arrived(h.seat(true)))
	buying.POST("/groups/:gid/join", h.arrived(h.seat(false)))
	signedIn := r.Group("/api/v1", h.limitIP)
	buyer := signedIn.Group("", h.authenticate, h.wholeBody, h.limitUser)
	buyer.POST("/activities/:id/line", h.requireBuyer, h.joinLine)
	buyer.GET("/activities/:id/line", h.requireBuyer, h.ticket)
	buyer.POST("/activities/:id/waitlist", h.requireBuyer, h.joinWaitlist)
	buyer.GET("/activities/:id/waitlist", h.requireBuyer, h.waitlistEntry)
	buyer.DELETE("/activities/:id/waitlist", h.requireBuyer, h.leaveWaitlist)
	buyer.GET("/orders", h.listOrders)
	buyer.GET("/orders/:id", byOrder(h.svc.GetOrder))
	buyer.POST("/orders/:id/pay", byOrder(h.svc.Pay))
	buyer.POST("/orders/:id/cancel", byOrder(h.svc.Cancel))
	buyer.POST("/orders/:id/refund", h.requireShop, h.refund)

	admin := signedIn.Group("/admin", h.authenticate, h.wholeBody, h.requireAdmin)
	admin.POST("/activities", h.createActivity)
	admin.GET("/activities", listActivities(h.svc.ListActivities, func(c *gin.Context, v any) { c.JSON(http.StatusOK, v) }))
	admin.PATCH("/activities/:id", h.patchActivity)
	admin.GET("/activities/:id/stats", byActivity(h.svc.Stats))
	admin.GET("/activities/:id/ledger", byActivity(h.svc.Ledger))
	admin.POST("/activities/:id/rebuild", byActivity(h.svc.Rebuild))
	admin.GET("/activities/:id/groups", h.listGroups(true))
	admin.GET("/activities/:id/line", byActivity(func(ctx context.Context, id int64) (waitingroom.Figures, error) {
		return h.rooms.Figures(ctx, id)
	}))
	admin.GET("/instances", h.instances)
	// The shop's back end reads a drop's funnel too.
	api.GET("/admin/activities/:id/funnel", h.authenticate, h.requireShop, h.funnel)
	admin.POST("/webhooks", h.createWebhook)
	admin.GET("/webhooks", h.listWebhooks)
	admin.DELETE("/webhooks/:id", h.deleteWebhook)
	admin.GET("/webhooks/:id/deliveries", h.webhookDeliveries)
	// The shop's back end keeps a sale's access codes too.
	shop := signedIn.Group("", h.authenticate, h.requireShop, h.wholeBody, h.haveCodes)
	shop.POST(strings.TrimPrefix(codesPath, "/api/v1"), h.addCodes)
	shop.GET(strings.TrimPrefix(codesPath, "/api/v1"), h.listCodes)
	shop.DELETE(strings.TrimPrefix(codesPath, "/api/v1")+"/*code", h.revokeCode)
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
// not: at once when Content-Length says so; a body of unknown length (chunked) once
// read past 64 KiB, by wholeBody or by the route. An import of access codes may carry
// up to maxCodesBody, read once the caller is known to be the shop's.
func (h *Handler) limitBody(c *gin.Context) {
	if c.Request.Method == http.MethodPost && c.FullPath() == codesPath {
		if c.Request.ContentLength > maxCodesBody {
			respondError(c, errCodesTooLarge)
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxCodesBody)
		c.Next()
		return
	}
	if c.Request.ContentLength > maxBody {
		respondError(c, errTooLarge)
		return
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxBody)
	c.Next()
}

// wholeBody reads a body of unknown length (chunked) whole, within the body timeout
// (readBody), so that a route that reads no body refuses one over 64 KiB too; a body
// of known length is left to the route.
func (h *Handler) wholeBody(c *gin.Context) {
	if c.Request.ContentLength < 0 {
		b, err := h.readBody(c)
		if err == errTooLarge && c.FullPath() == codesPath {
			err = errCodesTooLarge
		}
		if err != nil {
			respondError(c, err)
			return
		}
		c.Request.Body, c.Request.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	}
	c.Next()
}

const identityKey = "identity"

// authenticate checks the bearer token and stores the caller. A request refused here
// has had its body, if any, left unread: the connection closes after the answer, so
// that the server does not wait for it either.
func (h *Handler) authenticate(c *gin.Context) {
	if err := h.identify(c); err != nil {
		if c.Request.ContentLength != 0 {
			c.Header("Connection", "close")
		}
		respondError(c, err)
		return
	}
	c.Next()
}

// bearer is the request's bearer token, "" for none.
func bearer(c *gin.Context) string {
	token, _ := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	return token
}

// identify checks the bearer token and stores the caller; errUnauthorized when there
// is no valid one.
func (h *Handler) identify(c *gin.Context) error {
	token, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	if !ok || token == "" {
		return errUnauthorized
	}
	id, err := h.tokens.Verify(token, h.now())
	if err != nil {
		return errUnauthorized
	}
	c.Set(identityKey, id)
	return nil
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

// requireShop lets through the shop's back end (role service) and admins only: the
// routes of the shop's money (a refund).
func (h *Handler) requireShop(c *gin.Context) {
	if id := caller(c); !id.Service && !id.Admin {
		respondError(c, errNotShop)
		return
	}
	c.Next()
}

// arrived runs a purchase or a seat (next, given its body) once it has arrived whole:
// its token verified, then its body read within the body timeout. Only then does it
// count toward the per-IP limit and take a place in flight, so an upload that is slow
// or stalled, with a token or without, holds no place and counts toward no bound. The
// place is taken last and held while next answers: past the process's or the sale's
// bound the purchase is refused 429 at once. A purchase whose token is refused counts
// toward its address's limit, and past the limit an address's purchases are refused
// before a token not verified already (Verified) costs a check: a flood of forged
// tokens from one address costs a signature check each only up to the limit.
func (h *Handler) arrived(next func(c *gin.Context, body []byte)) gin.HandlerFunc {
	return func(c *gin.Context) {
		ip := h.ipKey(c)
		if ok, wait := h.perIP.Admits(ip, h.now()); !ok && !h.tokens.Verified(bearer(c), h.now()) {
			c.Header("Connection", "close") // its body is not waited for
			respondError(c, &limited{wait})
			return
		}
		if err := h.identify(c); err != nil {
			h.perIP.Allow(ip, h.now())
			// Its body is not waited for: the connection closes after the answer.
			c.Header("Connection", "close")
			respondError(c, err)
			return
		}
		body, err := h.readBody(c)
		if err != nil {
			respondError(c, err)
			return
		}
		if ok, wait := h.perIP.Allow(ip, h.now()); !ok && !caller(c).Service { // as allowIP
			respondError(c, &limited{wait})
			return
		}
		if caller(c).Service { // a shop's back end does not buy
			respondError(c, errNotBuyer)
			return
		}
		id, _ := saleOfPurchase(c, c.FullPath()) // 0 for a path naming no sale: answered 404
		if !h.gate.Enter(id) {
			h.metrics.shed.Inc()
			respondError(c, errOverloaded)
			return
		}
		defer h.gate.Leave(id)
		next(c, body)
	}
}

// haveCodes answers the routes of access codes 404 where the handler has none.
func (h *Handler) haveCodes(c *gin.Context) {
	if h.codes == nil {
		respondError(c, errNoRoute)
		return
	}
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
	if h.allowIP(c) {
		c.Next()
	}
}

// ipKey is the request's key of the per-IP limit, "" while the limit is off (finding
// the client IP costs work).
func (h *Handler) ipKey(c *gin.Context) string {
	if !h.perIP.On() {
		return ""
	}
	return ratelimit.ClientKey(c.ClientIP())
}

// allowIP counts the request against its client IP's limit; past it, it answers 429
// and returns false.
func (h *Handler) allowIP(c *gin.Context) bool {
	if !h.perIP.On() {
		return true
	}
	if ok, wait := h.perIP.Allow(ratelimit.ClientKey(c.ClientIP()), h.now()); !ok && !h.fromService(c) {
		respondError(c, &limited{wait})
		return false
	}
	return true
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

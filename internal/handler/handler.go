// Package handler is the HTTP API documented in api/openapi.yaml, on Gin: routes, authentication, rate limits, body limits, and the
// one place where errors become statuses (errors.go).
package handler

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	apidoc "seckill/api"
	"seckill/internal/admission"
	"seckill/internal/altcha"
	"seckill/internal/auth"
	"seckill/internal/funnel"
	"seckill/internal/health"
	"seckill/internal/presence"
	"seckill/internal/ratelimit"
	"seckill/internal/waitingroom"
	"seckill/web"
)

// Services are the parts of internal/sale the routes answer with, one per kind of
// route (cmd/api gives sale.Service's parts of the same names).
type Services struct {
	Catalog   Catalog   // sales, their public reads and their lines (saleRoutes)
	Purchases Purchases // purchases (purchaseRoutes)
	Groups    Groups    // a group-buy's seats and groups (groupRoutes)
	Orders    Orders    // orders after their purchase (orderRoutes)
	Waitlists Waitlists // the waitlists (waitlistRoutes)
}

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
	// script instead (sale.Settings.UserRate).
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

// Handler serves the API. Its routes are registered in one place (Routes) and answered
// by the kinds of route below, which share one middleware: the sales and their lines,
// purchases, groups, orders, waitlists, and the back office.
type Handler struct {
	mw        *middleware
	sales     *saleRoutes
	purchases *purchaseRoutes
	groups    *groupRoutes
	orders    *orderRoutes
	waitlists *waitlistRoutes
	office    *backOffice
	rooms     Rooms
	proxies   []string
	cors      *cors
	ready     *health.Probe
	trace     gin.HandlerFunc
}

// DefaultBodyTimeout is SECKILL_BODY_TIMEOUT's default, for handlers built without one.
const DefaultBodyTimeout = 2 * time.Second

// New returns a Handler over the services s.
func New(s Services, o Options) *Handler {
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
	mw := &middleware{tokens: auth.NewVerifier(o.JWTSecret, o.IdP), gate: gate,
		perUser: ratelimit.New(o.RateUser, o.APIs), perIP: ratelimit.New(o.RateIP, o.APIs),
		metrics: newMetrics(o.Registry, o.Answers, o.Refusals), now: o.Now, bodyTimeout: o.BodyTimeout}
	cursors := auth.NewCursors(o.JWTSecret)
	return &Handler{mw: mw,
		sales:     &saleRoutes{svc: s.Catalog, mw: mw, rooms: o.Rooms, funnels: o.Funnel},
		purchases: &purchaseRoutes{svc: s.Purchases, mw: mw, passes: o.Passes},
		groups:    &groupRoutes{svc: s.Groups, mw: mw},
		orders:    &orderRoutes{svc: s.Orders, mw: mw, cursors: cursors},
		waitlists: &waitlistRoutes{svc: s.Waitlists, mw: mw, rooms: o.Rooms},
		office: &backOffice{mw: mw, live: o.Instances, hooks: o.Webhooks, funnels: o.Funnel, codes: o.Codes,
			cursors: cursors},
		rooms: o.Rooms, proxies: o.TrustedProxies, cors: newCORS(o.CORSOrigins), ready: o.Ready, trace: o.Trace}
}

// Routes returns the API's http.Handler.
func (h *Handler) Routes() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	// A path with a trailing slash is 404 as any other unknown path: gin's redirect of it
	// would be answered past the middleware (no Cache-Control, no CORS, an HTML body).
	r.RedirectTrailingSlash = false
	// The client IP is the peer's, or, from a trusted proxy only, the last address of
	// X-Forwarded-For that is not itself a trusted proxy. config.Load checked the CIDRs;
	// one gin still refuses is said in the log (gin then trusts the entries before it).
	r.TrustedPlatform = "" // no platform header (CF-Connecting-IP and the like) is believed
	r.RemoteIPHeaders = []string{"X-Forwarded-For"}
	if err := r.SetTrustedProxies(h.proxies); err != nil {
		slog.Error("trusted proxies: an entry is refused", "proxies", h.proxies, "err", err)
	}
	mw, sales, buy, groups, orders, waitlists, office := h.mw, h.sales, h.purchases, h.groups, h.orders, h.waitlists, h.office
	if h.trace != nil {
		r.Use(h.trace)
	}
	r.Use(mw.recover, mw.metrics.observe)
	if h.cors != nil { // before every other check, so their refusals carry its headers
		r.Use(h.cors.headers)
	}
	r.Use(mw.limitBody, noStore)
	// A body of unknown length is read whole (wholeBody) before a route without a token
	// answers, and after the token of one with a token is verified: an upload by someone
	// the API does not know is never waited for on a route that needs a token.
	open := r.Group("", mw.wholeBody)
	web.Register(open) // the buyer's page at /, the admin's at /admin
	r.NoRoute(mw.wholeBody, func(c *gin.Context) { respondError(c, errNoRoute) })
	r.NoMethod(mw.wholeBody, func(c *gin.Context) {
		if !h.cors.preflight(c) { // a preflight: gin found the path, and no OPTIONS route
			respondError(c, errMethod)
		}
	})

	get(open, "/healthz", gin.WrapF(health.Live))
	get(open, "/readyz", gin.WrapH(h.ready))
	// /metrics is not here: it is on the operations port (health.Operations).

	api := r.Group("/api/v1", mw.wholeBody, mw.limitIP)
	// The public reads a crowd repeats, which a shared cache may keep (shared.go).
	get(api, "/activities", listActivities(sales.svc.PublicActivities, answerShared))
	get(api, "/activities/:id", sharedByActivity(sales.svc.PublicActivity))
	get(api, "/activities/:id/line/status", sales.lineStatus)
	get(api, "/activities/:id/groups", groups.listGroups(false))
	get(api, "/groups/:gid", groups.getGroup)
	get(api, "/openapi.yaml", openAPI) // the reference at /docs renders it
	get(api, "/activities/:id/line/challenge", byActivity(func(ctx context.Context, id int64) (altcha.Challenge, error) {
		ch, err := h.rooms.Challenge(ctx, id)
		return ch, sales.lineError(ctx, id, err)
	}))

	// Purchases are limited where they are answered: by the reserve script when they
	// reach Redis, here when the process answers them itself (purchaseError). They
	// count toward the per-IP limit and the bound of purchases in flight only once they
	// have arrived whole (arrived).
	buying := r.Group("/api/v1")
	buying.POST("/activities/:id/orders", mw.arrived(buy.buy))
	buying.POST("/activities/:id/groups", mw.arrived(groups.seat(true)))
	buying.POST("/groups/:gid/join", mw.arrived(groups.seat(false)))
	// The routes with a token count toward the per-IP limit once the token is verified
	// and the body has arrived (the contract's door): an upload that stalls, or a forged
	// token, counts toward no bound.
	signedIn := r.Group("/api/v1")
	buyer := signedIn.Group("", mw.authenticate, mw.wholeBody, mw.limitIP, mw.limitUser)
	buyer.POST("/activities/:id/line", requireBuyer, sales.joinLine)
	get(buyer, "/activities/:id/line", requireBuyer, sales.ticket)
	buyer.POST("/activities/:id/waitlist", requireBuyer, waitlists.joinWaitlist)
	get(buyer, "/activities/:id/waitlist", requireBuyer, waitlists.waitlistEntry)
	buyer.DELETE("/activities/:id/waitlist", requireBuyer, waitlists.leaveWaitlist)
	get(buyer, "/orders", orders.listOrders)
	get(buyer, "/orders/:id", byOrder(orders.svc.GetOrder))
	buyer.POST("/orders/:id/pay", byOrder(orders.svc.Pay))
	buyer.POST("/orders/:id/cancel", byOrder(orders.svc.Cancel))
	buyer.POST("/orders/:id/refund", requireShop, orders.refund)

	admin := signedIn.Group("/admin", mw.authenticate, mw.wholeBody, mw.limitIP, requireAdmin)
	admin.POST("/activities", sales.createActivity)
	get(admin, "/activities", listActivities(sales.svc.ListActivities, func(c *gin.Context, v any) { c.JSON(http.StatusOK, v) }))
	admin.PATCH("/activities/:id", sales.patchActivity)
	get(admin, "/activities/:id/stats", byActivity(sales.svc.Stats))
	get(admin, "/activities/:id/ledger", byActivity(sales.svc.Ledger))
	admin.POST("/activities/:id/rebuild", byActivity(sales.svc.Rebuild))
	get(admin, "/activities/:id/groups", groups.listGroups(true))
	get(admin, "/activities/:id/line", byActivity(func(ctx context.Context, id int64) (waitingroom.Figures, error) {
		return h.rooms.Figures(ctx, id)
	}))
	get(admin, "/instances", office.instances)
	// The shop's back end reads a drop's funnel too.
	get(signedIn, "/admin/activities/:id/funnel", mw.authenticate, mw.wholeBody, mw.limitIP, requireShop, office.funnel)
	admin.POST("/webhooks", office.createWebhook)
	get(admin, "/webhooks", office.listWebhooks)
	admin.DELETE("/webhooks/:id", office.deleteWebhook)
	get(admin, "/webhooks/:id/deliveries", office.webhookDeliveries)
	// The shop's back end keeps a sale's access codes too.
	shop := signedIn.Group("", mw.authenticate, requireShop, mw.wholeBody, mw.limitIP, office.haveCodes)
	shop.POST(strings.TrimPrefix(codesPath, "/api/v1"), office.addCodes)
	get(shop, strings.TrimPrefix(codesPath, "/api/v1"), office.listCodes)
	shop.DELETE(strings.TrimPrefix(codesPath, "/api/v1")+"/*code", office.revokeCode)
	return r
}

// get registers a GET route and its HEAD: every GET of the API answers HEAD too, as RFC
// 9110 has a server do, with the same status and headers and no body (net/http drops
// what the handler writes).
func get(g gin.IRoutes, path string, handlers ...gin.HandlerFunc) {
	g.Match(getAndHead, path, handlers...)
}

var getAndHead = []string{http.MethodGet, http.MethodHead}

// openAPI answers the API's own OpenAPI document, the bytes committed in api/openapi.yaml.
func openAPI(c *gin.Context) {
	c.Data(http.StatusOK, "application/yaml; charset=utf-8", apidoc.OpenAPI)
}

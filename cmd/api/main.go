// Command api serves the flash-sale HTTP API.
//
//	api            serve (applies migrations first; once MySQL answers, if it does not at start)
//	api migrate    apply migrations/ and exit
//	api token -user <subject> [-admin|-service] [-ttl 1h]   print a token signed with the configured secret
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"seckill/internal/accesscode"
	"seckill/internal/altcha"
	"seckill/internal/auth"
	"seckill/internal/buyer"
	"seckill/internal/config"
	"seckill/internal/funnel"
	"seckill/internal/handler"
	"seckill/internal/health"
	"seckill/internal/order"
	"seckill/internal/outage"
	"seckill/internal/outbox"
	"seckill/internal/presence"
	"seckill/internal/sale"
	"seckill/internal/stock"
	stockcodes "seckill/internal/stock/codes"
	"seckill/internal/stock/replicas"
	"seckill/internal/store"
	"seckill/internal/task"
	"seckill/internal/telemetry"
	"seckill/internal/waitingroom"
	"seckill/lock"
	"seckill/migrations"
)

func main() {
	// GOGC and GOMEMLIMIT: the defaults of config.Vars, unless the environment sets them.
	config.SetRuntimeDefaults(config.API)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // a second signal ends the process at once
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, cfg)
	case "migrate":
		return migrate(ctx, cfg)
	case "token":
		return token(cfg, args, stdout)
	}
	return fmt.Errorf("unknown command %q (want serve, migrate or token)", cmd)
}

// migrate applies migrations/ on a connection pool of its own, without the bounds of the
// service's (config.MySQLForMigrations).
func migrate(ctx context.Context, cfg config.Config) error {
	sqlDB, err := cfg.MySQLForMigrations()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	applied, err := migrations.Up(ctx, sqlDB)
	if err != nil {
		return err
	}
	slog.Info("migrations applied", "versions", applied)
	return nil
}

// migrateOnceUp applies the migrations once MySQL answers, trying every second, then
// opens the schema's gate. It returns the error of a migration that failed with MySQL
// answering; nil when ctx ends first.
func migrateOnceUp(ctx context.Context, cfg config.Config, schema *store.Gate) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		err := migrate(ctx, cfg)
		switch {
		case err == nil:
			schema.Open()
			return nil
		case ctx.Err() != nil:
			return nil
		case !config.MySQLUnreachable(err):
			return err
		}
	}
}

func token(cfg config.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	user := fs.String("user", "", "the subject: the buyer's user id, or any string of 1 to 255 bytes without control characters (required)")
	admin := fs.Bool("admin", false, "give the admin role")
	service := fs.Bool("service", false, "give the service role (a shop's back end: pays and cancels any order)")
	ttl := fs.Duration("ttl", time.Hour, "how long the token is valid")
	if err := fs.Parse(args); err != nil {
		return err
	}
	subject, err := buyer.Parse(*user)
	if err != nil || *ttl <= 0 || *admin && *service {
		return errors.New("token: -user must be a subject of 1 to 255 bytes without control characters, -ttl positive, " +
			"and -admin and -service exclude each other")
	}
	role := auth.RoleUser
	switch {
	case *admin:
		role = auth.RoleAdmin
	case *service:
		role = auth.RoleService
	}
	t, err := auth.SignRole(cfg.JWTSecret, subject, role, *ttl, time.Now())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, t)
	return err
}

// replicaWait bounds one WAIT for SECKILL_REDIS_MIN_REPLICAS replicas; it stays below
// the Redis client's 1 s read timeout (config.Redis).
const replicaWait = 500 * time.Millisecond

func serve(ctx context.Context, cfg config.Config) error {
	slog.Info("starting api", "config", cfg.String())
	if cfg.UsesDevSecret() {
		slog.Warn("dev mode: tokens are signed with the public dev secret; set SECKILL_JWT_SECRET for anything real")
	}
	if err := cfg.CheckRedis(ctx); err != nil { // a wrong password or certificate: refuse to start
		return err
	}
	tracing, err := telemetry.Start(ctx, telemetry.API) // nil: off (no OTLP endpoint set)
	if err != nil {
		return err
	}
	defer tracing.Close()
	rdb := cfg.Redis()
	defer rdb.Close()
	db, err := cfg.MySQL()
	if err != nil {
		return err
	}
	if err := tracing.Instrument(rdb, db); err != nil {
		return err
	}
	// Nothing reads or writes MySQL before this version's migrations have run: at once
	// when MySQL answers (a failure stops the start), else once it does, while purchases,
	// which need Redis alone, are served (docs/deploying.md).
	schema, err := store.NewGate(db)
	if err != nil {
		return err
	}
	migrationFailed := make(chan error, 1)
	switch err := migrate(ctx, cfg); {
	case err == nil:
		schema.Open()
	case config.MySQLUnreachable(err):
		slog.Warn("mysql: no answer at start; serving purchases, and migrating once it answers", "err", err)
		go func() {
			if err := migrateOnceUp(ctx, cfg, schema); err != nil {
				migrationFailed <- err
			}
		}()
	default:
		return err
	}

	ap, err := config.RedisPipelined(rdb)
	if err != nil {
		return err
	}
	sk := stock.New(ap)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	go sk.Watch(watchCtx)
	locks := lock.New(ap)
	defer locks.Close()
	enq := asynq.NewClientFromRedisClient(ap)
	checkout := sale.Checkout(cfg.CheckoutURL)
	st := store.New(db, sale.EventViews{Checkout: checkout})
	// MySQL's outages, shared by every instance: pay windows do not run during one.
	outages := outage.NewRecord(ap)
	orders := order.New(st.Lifecycle, st.Activities, sk, outages)
	orders.Offers = task.NewEnqueuer(enq) // the waitlist's orders of units that come back
	svc := sale.New(st, sk, orders, outages, task.NewEnqueuer(enq), locks)
	codes := accesscode.New(db, st.Activities, stockcodes.New(sk)) // early access: the shop's codes, owned in Redis, kept in MySQL
	svc.SetCodes(codes)
	svc.LockWait = cfg.LockWait
	svc.ListMargin = max(svc.ListMargin, 2*cfg.LockWait)
	svc.BuyerPays, svc.Checkout = cfg.BuyerPays, checkout
	if cfg.BuyerPays && !cfg.Dev() {
		slog.Warn("SECKILL_BUYER_PAYS=true: buyers mark their own orders paid, a simulated payment; never with real money")
	}
	now := time.Now
	if cfg.ClockOffset != 0 { // a test of a wrong clock (SECKILL_CLOCK_OFFSET)
		slog.Warn("this process's clock is shifted", "offset", cfg.ClockOffset)
		now = func() time.Time { return time.Now().Add(cfg.ClockOffset) }
		svc.SetProcessClock(now)
	}
	passes := auth.NewPasses(cfg.JWTSecret)
	waitingRoom := waitingroom.New(ap, passes, altcha.New(auth.DeriveKey(cfg.JWTSecret, "altcha")))
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Ready while Redis answers (with its replicas, when purchases wait for them); MySQL
	// is reported, never needed: purchases do not use it.
	ready := []*health.Check{health.Watch(watchCtx, "redis", sk.Ping)}
	if cfg.MinReplicas > 0 {
		// WAIT on the connection that wrote: the client itself, not its auto-pipeliner.
		replicas := replicas.New(rdb, cfg.MinReplicas, replicaWait)
		svc.Replicas = replicas
		reg.MustRegister(replicas.Collector())
		ready = append(ready, health.Watch(watchCtx, "replicas", replicas.Connected))
	}
	// MySQL's check, on a connection of its own, also feeds the record of its outages.
	mysqlConn, err := cfg.MySQLProbe()
	if err != nil {
		return err
	}
	defer mysqlConn.Close()
	mysqlState := outage.NewMonitor(outages, "api")
	mysqlState.Register(reg)
	probe := health.NewProbe(ready, health.Watch(watchCtx, "mysql", mysqlConn.PingContext, mysqlState.Observe))
	svc.Register(reg)
	live := presence.New(ap)
	reg.MustRegister(live.Collector(now))
	answers := presence.NewAnswers()
	// The purchases each sale refused, counted here and added to Redis in batches for
	// its funnel; the last batch is flushed at exit.
	refusals, funnels := funnel.NewRefusals(), funnel.New(db, ap, st.Activities, st.Orders, sk, waitingRoom)
	flushCtx, stopFlush := context.WithCancel(context.Background())
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		refusals.Run(flushCtx, ap, funnels)
	}()
	defer func() { stopFlush(); <-flushed }()
	var idp *auth.IdP
	if ic, ok := cfg.IdP(); ok { // a shop's identity provider: its tokens beside ours
		if idp, err = auth.NewIdP(ctx, ic); err != nil {
			return err
		}
	}
	// The rate limits are split between the live API instances (their heartbeats).
	svc.UserRate = cfg.RateUser
	apis := live.WatchPeers(watchCtx, "api")
	h := handler.New(handler.Services{Catalog: svc.Catalog, Purchases: svc.Purchases, Groups: svc.Groups, Orders: svc.Orders,
		Waitlists: svc.Waitlists}, handler.Options{JWTSecret: cfg.JWTSecret, IdP: idp, RateUser: cfg.RateUser,
		RateIP: cfg.RateIP, APIs: apis.Count, TrustedProxies: cfg.TrustedProxies, CORSOrigins: cfg.CORSOrigins, Registry: reg, Instances: live,
		Answers: answers, Rooms: waitingRoom, Passes: passes, Now: now,
		InFlight: cfg.InFlight, SaleInFlight: cfg.SaleInFlight, BodyTimeout: cfg.BodyTimeout, Webhooks: outbox.NewWebhooks(db, cfg.WebhookAllowPrivate),
		Ready: probe, Trace: tracing.Gin(), Refusals: refusals, Funnel: funnels, Codes: codes})

	notDurable, err := durability(ctx, cfg, rdb, probe)
	if err != nil {
		return err
	}

	srv := &http.Server{Addr: cfg.HTTPAddr, Handler: h.Routes(),
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 15 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10}
	var conns health.Conns
	conns.Track(srv)
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return err
	}
	// Metrics (and profiles, with SECKILL_PPROF) on a port of their own, never the buyers'.
	opsLn, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		_ = ln.Close()
		return err
	}
	ops := &http.Server{Handler: health.Operations(reg, cfg.Pprof), ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout: 60 * time.Second}
	defer ops.Close()
	go func() {
		if err := ops.Serve(opsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("metrics server", "err", err)
		}
	}()
	slog.Info("metrics listening", "url", "http://"+opsLn.Addr().String()+"/metrics", "pprof", cfg.Pprof)
	slog.Info("api listening", "url", "http://"+ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	// The heartbeat (GET /api/v1/admin/instances) stops once the instance stops
	// accepting, so it leaves the list then.
	stopBeat := live.Start(presence.NewInstance("api", ln.Addr().String()), presence.FromRegistry(reg,
		presence.Figure{Name: "requests_per_second", Metric: "seckill_http_requests_total", Rate: true},
		presence.Figure{Name: "purchases_per_second", Metric: "seckill_http_requests_total", Label: "status", Value: "202", Rate: true},
		presence.Figure{Name: "answers_409_per_second", Metric: "seckill_http_requests_total", Label: "status", Value: "409", Rate: true},
		presence.Figure{Name: "answers_429_per_second", Metric: "seckill_http_requests_total", Label: "status", Value: "429", Rate: true},
		presence.Figure{Name: "answers_503_per_second", Metric: "seckill_http_requests_total", Label: "status", Value: "503", Rate: true}),
		presence.WithSales(answers))
	defer stopBeat()
	select {
	case err := <-errc:
		return err
	case err := <-migrationFailed: // it stops, as it would have at start, handing on its orders
		slog.Error("migrations failed once MySQL answered: stopping", "err", err)
		return errors.Join(err, shutdown(cfg, server{srv, ln, &conns}, probe, stopBeat, svc, errc))
	case err := <-notDurable: // as it would have at start
		return errors.Join(err, shutdown(cfg, server{srv, ln, &conns}, probe, stopBeat, svc, errc))
	case <-ctx.Done():
	}
	return shutdown(cfg, server{srv, ln, &conns}, probe, stopBeat, svc, errc)
}

// durability checks that a purchase answered 202 survives a Redis crash
// (config.Config.CheckDurability) and says on /readyz whether it does. Outside dev mode
// a Redis that may lose one stops the start; SECKILL_REDIS_DURABILITY=none starts and
// says in the log what it risks. A Redis that does not answer at start is checked once
// it does, every second until then: a refusal then arrives on the channel returned.
func durability(ctx context.Context, cfg config.Config, rdb redis.UniversalClient, probe *health.Probe) (<-chan error, error) {
	check := func() (done bool, err error) {
		durable, err := cfg.CheckDurability(ctx, rdb)
		switch {
		case config.IsUnreachable(err):
			return false, nil
		case err != nil && cfg.Dev():
			slog.Warn("dev mode: starting anyway", "err", err)
		case err != nil:
			return true, err
		case !durable:
			slog.Warn("SECKILL_REDIS_DURABILITY=none: a Redis crash can lose acknowledged orders and their Idempotency-Keys (a retry then makes a second order); turn AOF on or set SECKILL_REDIS_MIN_REPLICAS for real sales")
		}
		probe.SetDurable(durable)
		return true, nil
	}
	late := make(chan error, 1)
	if done, err := check(); done {
		return late, err
	}
	slog.Warn("redis: no answer at start; its durability is checked once it answers")
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			if done, err := check(); done {
				if err != nil {
					late <- err
				}
				return
			}
		}
	}()
	return late, nil
}

// server is the API's HTTP server, its listener and its connections.
type server struct {
	*http.Server
	ln    net.Listener
	conns *health.Conns
}

// shutdown is the API's side of a rolling deploy (docs/deploying.md, which says why in
// this order):
//  1. /readyz answers 503 at once, so load balancers and Kubernetes take the instance
//     out; every request is still served, connections kept alive, for
//     SECKILL_SHUTDOWN_DELAY;
//  2. the listener closes: a new connection is refused, which a front such as nginx
//     tries on another instance, safely since nothing was sent;
//  3. every answer now closes its connection, until the clients have let go of theirs
//     (nginx closes an idle one after 2 s), so none is closed under a request;
//  4. the requests in flight are finished and their orders handed to the queue, steps 3
//     and 4 within SECKILL_SHUTDOWN_TIMEOUT; what is left then is closed (the worker's
//     repair pass enqueues any order not handed on).
func shutdown(cfg config.Config, srv server, probe *health.Probe, stopBeat func(), svc *sale.Service, errc <-chan error) error {
	probe.Stop()
	slog.Info("shutting down: not ready, still serving", "for", cfg.ShutdownDelay)
	select {
	case <-time.After(cfg.ShutdownDelay):
	case err := <-errc:
		return err
	}
	deadline := time.Now().Add(cfg.ShutdownTimeout)
	if err := srv.ln.Close(); err != nil {
		return err
	}
	stopBeat()
	slog.Info("shutting down: no longer accepting; closing connections after their answers", "open", srv.conns.Open())
	// The clients get up to a quarter of the bound to let go of their connections, the
	// requests in flight up to three quarters, and handing their orders on the rest.
	dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(min(cfg.ShutdownTimeout/4, 3*time.Second)))
	defer dcancel()
	srv.conns.Drain(dctx)
	slog.Info("shutting down: finishing requests in flight", "connections", srv.conns.Open())
	sctx, cancel := context.WithDeadline(context.Background(), deadline.Add(-cfg.ShutdownTimeout/4))
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, net.ErrClosed) { // the listener is closed above
		slog.Warn("shutting down: requests still in flight at the bound are cut off", "err", err)
		_ = srv.Close()
	}
	cctx, ccancel := context.WithDeadline(context.Background(), deadline)
	defer ccancel()
	if left := svc.Close(cctx); left > 0 {
		slog.Warn("shutting down: orders left for the worker's repair pass", "orders", left)
	}
	slog.Info("shut down")
	return nil
}

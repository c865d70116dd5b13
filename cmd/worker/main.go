// Command worker writes queued orders to MySQL: an asynq server whose handler writes
// each task's orders in transactions, plus the periodic expiry, return, repair and
// archive jobs.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"seckill/internal/accesscode"
	"seckill/internal/config"
	"seckill/internal/funnel"
	"seckill/internal/health"
	"seckill/internal/order"
	"seckill/internal/outage"
	"seckill/internal/outbox"
	"seckill/internal/presence"
	"seckill/internal/sale"
	"seckill/internal/stock"
	stockcodes "seckill/internal/stock/codes"
	"seckill/internal/store"
	"seckill/internal/task"
	"seckill/internal/telemetry"
	"seckill/internal/upkeep"
	"seckill/internal/waitingroom"
	"seckill/internal/worker"
	"seckill/lock"
)

func main() {
	// GOGC and GOMEMLIMIT: the defaults of config.Vars, unless the environment sets them.
	config.SetRuntimeDefaults(config.Worker)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // a second signal ends the process at once
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	slog.Info("starting worker", "config", cfg.String())
	if err := cfg.CheckRedis(ctx); err != nil { // a wrong password or certificate: refuse to start
		return err
	}
	// A wrong password or certificate refuses the start; a MySQL that does not answer
	// does not: the worker starts, not ready, and writes orders once it answers.
	if _, err := cfg.CheckMySQL(ctx); err != nil {
		return err
	}
	tracing, err := telemetry.Start(ctx, telemetry.Worker) // nil: off (no OTLP endpoint set)
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

	ap, err := config.RedisPipelined(rdb)
	if err != nil {
		return err
	}
	st, sk := store.New(db, sale.EventViews{Checkout: sale.Checkout(cfg.CheckoutURL)}), stock.New(ap)
	// MySQL's outages, shared by every instance: pay windows do not run during one.
	outages := outage.NewRecord(ap)
	persister := worker.NewPersister(st.Batches, st.Orders, st.Activities, sk, outages, cfg.PersistBatch)
	rebuilder := upkeep.NewRebuilder(st.Upkeep, st.Activities, sk)
	persister.LostSale = rebuilder.Kick // a task whose sale Redis lost starts its rebuild
	if tracing.On() {
		persister.Tracer = tracing.Provider()
	}
	reg := prometheus.NewRegistry()
	inspector := asynq.NewInspectorFromRedisClient(rdb)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		worker.QueueDepth(inspector))
	persister.Register(reg)
	mysqlConn, err := cfg.MySQLProbe()
	if err != nil {
		return err
	}
	defer mysqlConn.Close()
	mysqlState := outage.NewMonitor(outages, "worker")
	mysqlState.Register(reg)
	// The orders that waited through an outage are written at once, not after their
	// tasks' backoff (up to 30 s).
	mysqlState.OnUp = func() {
		if n, err := inspector.RunAllRetryTasks(task.Queue); err != nil {
			slog.Warn("MySQL answers again: could not retry the waiting tasks now; their backoff will", "err", err)
		} else if n > 0 {
			slog.Info("MySQL answers again: the tasks that waited for it run now", "tasks", n)
		}
	}
	live := presence.New(ap)
	reg.MustRegister(live.Collector(time.Now))
	rebuilder.Register(reg)
	// Each task holds the orders of purchases an API committed together; the persister
	// writes them in transactions of up to SECKILL_PERSIST_BATCH orders.
	tasks := asynq.NewServeMux()
	tasks.HandleFunc(task.TypePersist, persister.HandleTask)
	tasks.HandleFunc(task.TypePersistV1, persister.HandleTask) // the previous release's tasks
	srv := asynq.NewServerFromRedisClient(ap, asynq.Config{
		Concurrency:       cfg.WorkerConcurrency,
		Queues:            map[string]int{task.Queue: 1},
		RetryDelayFunc:    task.RetryDelay,
		TaskCheckInterval: 50 * time.Millisecond,
		// Tasks still running this long after SIGTERM go back to the queue for another
		// worker (writing an order twice is harmless: the persister writes it once); the
		// rest of the shutdown gets the last part of SECKILL_SHUTDOWN_TIMEOUT.
		ShutdownTimeout: tasksBound(cfg.ShutdownTimeout),
		LogLevel:        asynq.WarnLevel,
	})
	if err := srv.Start(tasks); err != nil {
		return err
	}

	// Events out: every worker delivers (claims never overlap); the pruning is a
	// periodic job.
	deliverer := outbox.NewDeliverer(db, cfg.WebhookAllowPrivate)
	deliverer.Register(reg)
	if tracing.On() {
		deliverer.Tracer = tracing.Provider()
	}

	locks := lock.New(rdb)
	defer locks.Close()
	enqueuer := task.NewEnqueuer(asynq.NewClientFromRedisClient(ap))
	lifecycle := order.New(st.Lifecycle, st.Activities, sk, outages)
	lifecycle.Offers = enqueuer // the waitlist's orders of units that come back
	repairer := worker.NewRepairer(st.Activities, sk, enqueuer, persister)
	rooms := waitingroom.New(ap, nil, nil)
	admitter := waitingroom.NewAdmitter(rooms, st.Activities)
	archiver := upkeep.NewArchiver(st.Upkeep, sk, cfg.SaleRetention)
	archiver.Keeper = funnel.New(db, ap, st.Activities, st.Orders, sk, rooms) // a sale's funnel outlives its Redis state
	archiver.Register(reg)
	// Early access: who owns each code is decided in Redis and recorded in MySQL here.
	codes := accesscode.New(db, st.Activities, stockcodes.New(sk))
	rebuilder.Codes, archiver.Codes = codes, codes
	jobsCtx, stopJobs := context.WithCancel(ctx)
	defer stopJobs()
	worker.RunPeriodic(jobsCtx, locks, reg,
		worker.Job{Name: "expire-orders", Period: time.Second, Run: func(ctx context.Context) error {
			_, err := lifecycle.ExpireDueFor(ctx, 1000, 800*time.Millisecond)
			return err
		}},
		// Groups whose window passed unfilled fail: units back, orders cancelled.
		worker.Job{Name: "fail-groups", Period: time.Second, Run: func(ctx context.Context) error {
			_, err := lifecycle.FailDueGroups(ctx, 1000)
			return err
		}},
		worker.Job{Name: "return-units", Period: 2 * time.Second, Run: func(ctx context.Context) error {
			_, err := lifecycle.ReturnPending(ctx, 1000)
			return err
		}},
		worker.Job{Name: "repair-queue", Period: 2 * time.Second, Run: func(ctx context.Context) error {
			_, err := repairer.Repair(ctx)
			return err
		}},
		// Waiting rooms admit their lines at each sale's rate (internal/waitingroom); the
		// admission's own schedule in Redis keeps the rate whoever runs it.
		worker.Job{Name: "admit-lines", Period: 100 * time.Millisecond, Run: func(ctx context.Context) error {
			_, err := admitter.Run(ctx)
			return err
		}},
		// The owners of the access codes buyers presented, into MySQL (internal/accesscode).
		worker.Job{Name: "record-access-codes", Period: time.Second, Run: func(ctx context.Context) error {
			_, err := codes.Record(ctx)
			return err
		}},
		worker.Job{Name: "prune-webhooks", Period: time.Minute, Run: func(ctx context.Context) error {
			_, err := deliverer.Prune(ctx, 10000)
			return err
		}},
		// A sale over for SECKILL_SALE_RETENTION leaves Redis; MySQL answers for it
		// (internal/upkeep.Archiver).
		worker.Job{Name: "archive-sales", Period: 2 * time.Second, Run: func(ctx context.Context) error {
			_, err := archiver.Run(ctx)
			return err
		}},
		// A live sale Redis has lost is rebuilt from MySQL (internal/upkeep.Rebuilder).
		worker.Job{Name: "rebuild-lost-sales", Period: 2 * time.Second, Run: func(ctx context.Context) error {
			_, err := rebuilder.RebuildLost(ctx, time.Now())
			return err
		}})

	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		deliverer.Run(jobsCtx)
	}()

	// Ready while it can write orders: Redis and MySQL both answer (for monitoring;
	// nothing routes traffic to a worker).
	// MySQL's check, on a connection of its own, also feeds the record of its outages.
	probe := health.NewProbe([]*health.Check{health.Watch(ctx, "redis", sk.Ping),
		health.Watch(ctx, "mysql", mysqlConn.PingContext, mysqlState.Observe)})

	// The metrics address is internal: the probes, and net/http/pprof with SECKILL_PPROF.
	mux := health.Operations(reg, cfg.Pprof)
	mux.HandleFunc("/healthz", health.Live)
	mux.Handle("/readyz", probe)
	metrics := &http.Server{Addr: cfg.WorkerMetricsAddr, ReadHeaderTimeout: 5 * time.Second, Handler: mux}
	go func() {
		if err := metrics.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("worker metrics server", "err", err)
		}
	}()
	slog.Info("worker running", "queue", task.Queue, "concurrency", cfg.WorkerConcurrency, "metrics", "http://"+cfg.WorkerMetricsAddr+"/metrics")
	// The heartbeat (GET /api/v1/admin/instances) stops first on shutdown, so the
	// instance leaves the list at once.
	stopBeat := live.Start(presence.NewInstance("worker", cfg.WorkerMetricsAddr), presence.FromRegistry(reg,
		presence.Figure{Name: "orders_written_per_second", Metric: "seckill_persisted_orders_total", Label: "outcome", Value: "created", Rate: true},
		presence.Figure{Name: "transactions_per_second", Metric: "seckill_persist_batch_size", Rate: true},
		presence.Figure{Name: "queue_depth", Metric: "seckill_queue_depth"},
		presence.Figure{Name: "webhooks_delivered_per_second", Metric: "seckill_webhook_deliveries_total", Label: "outcome", Value: "delivered", Rate: true}))
	defer stopBeat()

	<-ctx.Done()
	deadline := time.Now().Add(cfg.ShutdownTimeout)
	tasksDone := time.Now().Add(tasksBound(cfg.ShutdownTimeout))
	probe.Stop()
	stopBeat()
	slog.Info("shutting down: taking no more tasks, finishing those in hand", "within", cfg.ShutdownTimeout)
	srv.Shutdown() // waits for handlers in flight, up to tasksBound; the rest go back to the queue
	select {
	case <-delivered: // the webhook attempts in flight, each bounded by its timeout, recorded
	case <-time.After(time.Until(tasksDone)):
		slog.Warn("shutting down: webhook attempts still in flight are tried again once their lease ends")
	}
	sctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	err = metrics.Shutdown(sctx)
	slog.Info("shut down")
	return err
}

// tasksBound is how long the worker's tasks and webhook attempts in hand may run after
// SIGTERM: the shutdown's bound less a margin for giving the rest back and stopping.
func tasksBound(timeout time.Duration) time.Duration {
	return max(timeout-max(timeout/5, time.Second), time.Millisecond)
}

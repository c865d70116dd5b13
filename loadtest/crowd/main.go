// Command crowd loads the flash-sale API with a crowd of buyers and checks the result
// in MySQL. See loadtest/README.md.
//
//	crowd audit   a crowd (users x attempts, concurrent and replayed purchases) on a
//	              small sale; waits for the queue to drain and audits MySQL: oversold,
//	              lost, duplicated and over-limit must all be 0, else exit 1
//	crowd ratios  the ratios to /healthz in one run: healthz req/s, purchases/s, sold-out
//	              answers/s, accepted/s vs persisted/s, purchase p99, and their ratios;
//	              then seats taken/s in a group-buy sale against purchases/s, and an
//	              audit of the group sale
//	crowd overload  what one API serves (closed loop), then an open-loop crowd at a
//	              multiple of it (vegeta): 202/s vs the capacity, p99 of all answers,
//	              connection errors, the API's RSS, and the audit of what was accepted
//	crowd hot     one hot sale with its stock in K buckets, for several K in turns:
//	              purchases/s, p99, CPU per purchase, each master's share of the
//	              sale's scripts, and an audit of each sale
//	crowd soak    a steady crowd for minutes on a sale nobody pays for: Redis', the
//	              API's and the worker's memory every 30 s, levelling off or not
//	crowd waiting  what a waiting crowd costs: the line's status and the sale straight
//	              at the APIs in turns with /healthz; then, through the nginx front,
//	              buyers waiting in a line as the buyer's page does beside a crowd
//	              reading the sale and the status: requests/s that reached the APIs,
//	              when each buyer saw its admission, its purchase's time
//	crowd drops   many short sales run to their end (bought, paid, cancelled), then
//	              archived by the worker (SECKILL_SALE_RETENTION short): the time to their
//	              archive, what the API answers for them, Redis's keys and memory; run
//	              it beside another scenario to see an archive under a crowd
//	crowd compare  this API's purchases and sold-out answers beside another service's
//	              purchase endpoint (any URL, its success told by a substring of the
//	              answer), each against /healthz, with CPU per purchase of each process
//	crowd plot    draw the plots of docs/performance.md from run records (-series)
//	crowd sale    create a sale (optionally sold out) and print its id (for ab.sh)
//	crowd token   print a token for a user (for ab.sh and k6)
//
// Tokens are signed in-process with SECKILL_JWT_SECRET (the dev secret when unset); the
// API must run with SECKILL_RATE_IP=0 and SECKILL_RATE_USER=0. -api takes several base
// URLs, comma-separated, to spread the load over several API processes.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"seckill/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := run(ctx, os.Args[1:], os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crowd:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// common are the flags every mode takes.
type common struct {
	urls    string
	dsn     string
	secret  string
	conns   int
	timeout time.Duration
	origin  string
	// otherSubjects is the share of buyers who sign in with a UUID or an Auth0 subject.
	otherSubjects float64
}

func (c *common) register(fs *flag.FlagSet, conns int) {
	fs.StringVar(&c.urls, "api", "http://"+env("SECKILL_HTTP_ADDR", "127.0.0.1:8080"),
		"API base URLs, comma-separated; requests go round-robin (several API processes)")
	fs.StringVar(&c.dsn, "mysql", env("SECKILL_MYSQL_DSN", "seckill:seckill@tcp(127.0.0.1:3306)/seckill?parseTime=true"),
		"MySQL DSN of the API's database, for the audit [$SECKILL_MYSQL_DSN]")
	fs.StringVar(&c.secret, "secret", env("SECKILL_JWT_SECRET", config.DevJWTSecret),
		"JWT secret [$SECKILL_JWT_SECRET, else the dev secret]")
	fs.IntVar(&c.conns, "conns", conns, "concurrent connections (buyers at once)")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "timeout of one request")
	fs.StringVar(&c.origin, "origin", "", "Origin header of every request, as a shop's pages on another origin send it (SECKILL_CORS_ORIGINS)")
	fs.Float64Var(&c.otherSubjects, "other-subjects", 0.2,
		"share of buyers whose token's subject is a UUID or an Auth0 subject, not their user id (0 to 1)")
}

func (c *common) api() *api {
	var urls []string
	for u := range strings.SplitSeq(c.urls, ",") {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			urls = append(urls, u)
		}
	}
	a := newAPI(urls, max(c.conns, 1), c.timeout, c.secret)
	a.origin, a.otherSubjects = c.origin, c.otherSubjects
	return a
}

func (c *common) db() (*sql.DB, error) {
	db, err := sql.Open("mysql", c.dsn)
	if err != nil {
		return nil, fmt.Errorf("-mysql: %w", err)
	}
	db.SetMaxOpenConns(4)
	return db, nil
}

func run(ctx context.Context, args []string, w io.Writer) (bool, error) {
	if len(args) == 0 {
		return false, fmt.Errorf("usage: crowd audit|waitlist|ratios|compare|overload|hot|soak|drops|waiting|plot|sale|token [flags]  (crowd MODE -h lists the flags)")
	}
	mode, args := args[0], args[1:]
	fs := flag.NewFlagSet("crowd "+mode, flag.ContinueOnError)
	var c common
	switch mode {
	case "audit":
		var cfg crowdConfig
		c.register(fs, 100)
		fs.IntVar(&cfg.Users, "users", 2000, "distinct buyers")
		fs.IntVar(&cfg.Attempts, "attempts", 4, "purchases per buyer")
		fs.Int64Var(&cfg.Stock, "stock", 4000, "units of the sale (the default sells out late: buyers want about 6000)")
		fs.IntVar(&cfg.Limit, "limit", 3, "per-user limit")
		fs.IntVar(&cfg.MaxQty, "max-qty", 2, "each purchase asks for 1..max-qty units")
		fs.Float64Var(&cfg.Together, "together", 0.3, "share of buyers whose first two purchases go at the same time")
		fs.Float64Var(&cfg.Replay, "replay", 0.3, "share of keyed purchases sent again with the same Idempotency-Key")
		fs.Float64Var(&cfg.NoKey, "nokey", 0.2, "share of purchases without an Idempotency-Key")
		fs.Int64Var(&cfg.FirstUser, "first-user", 1000, "user id of the first buyer")
		fs.IntVar(&cfg.Variants, "variants", 0, "0: a plain sale; 1..100: a sale of that many variants (V0, V1, ...), the stock split over them, each purchase naming one at random, audited per variant")
		fs.Uint64Var(&cfg.Seed, "seed", uint64(time.Now().UnixNano()), "random seed of the buyers' scripts")
		fs.DurationVar(&cfg.Drain, "drain", 2*time.Minute, "longest wait for MySQL to hold every accepted order")
		if err := fs.Parse(args); err != nil {
			return false, err
		}
		cfg.Conns = c.conns
		if cfg.Variants < 0 || cfg.Variants > 100 || int64(cfg.Variants) > cfg.Stock {
			return false, fmt.Errorf("-variants: want 0..100, and at most -stock")
		}
		return withAPI(ctx, c, func(a *api, db *sql.DB) (bool, error) { return runAudit(ctx, w, a, db, cfg) })
	case "waitlist":
		var cfg waitlistConfig
		c.register(fs, 50)
		fs.Int64Var(&cfg.Stock, "stock", 200, "units of the sale: each bought by a buyer, then returned by a cancel")
		fs.IntVar(&cfg.Waiting, "waiting", 400, "buyers on the waitlist (more than -stock: some stay waiting)")
		fs.IntVar(&cfg.Retriers, "retriers", 20, "connections retrying the sold-out sale while the units come back")
		fs.Int64Var(&cfg.FirstUser, "first-user", 800_000, "user id of the first buyer")
		fs.DurationVar(&cfg.Drain, "drain", time.Minute, "longest wait for the offers and for MySQL to hold their orders")
		if err := fs.Parse(args); err != nil {
			return false, err
		}
		cfg.Conns = c.conns
		if cfg.Stock < 1 || int64(cfg.Waiting) <= cfg.Stock || cfg.Retriers < 0 {
			return false, fmt.Errorf("-stock must be positive, -waiting above it, -retriers not negative")
		}
		return withAPI(ctx, c, func(a *api, db *sql.DB) (bool, error) { return runWaitlist(ctx, w, a, db, cfg) })
	case "ratios":
		var cfg ratiosConfig
		c.register(fs, 100)
		fs.DurationVar(&cfg.Phase, "phase", 8*time.Second, "length of each measured phase")
		fs.IntVar(&cfg.Buyers, "buyers", 300_000, "distinct users signed for the purchase phase")
		fs.Int64Var(&cfg.FirstUser, "first-user", 1_000_000, "user id of the first buyer")
		fs.BoolVar(&cfg.PurchaseKey, "purchase-key", false, "send an Idempotency-Key with every purchase")
		fs.DurationVar(&cfg.Drain, "drain", 2*time.Minute, "longest wait for MySQL to hold every accepted order")
		fs.BoolVar(&cfg.Strict, "strict", false, "exit 1 when a target is missed")
		fs.DurationVar(&cfg.Settle, "settle", 3*time.Second, "pause after the drain, before the last healthz phase")
		fs.DurationVar(&cfg.Slice, "slice", time.Second, "length of one turn when sold out and healthz alternate")
		fs.IntVar(&cfg.Group.Size, "group-size", 3, "seats of a group in the group phase (0: no group phase)")
		fs.DurationVar(&cfg.Group.Window, "group-window", 10*time.Minute, "group window: no group may close during the run")
		fs.IntVar(&cfg.Group.Seats, "group-seats", 2, "seats each user of the group phase takes, in as many groups (the per-user limit and cap)")
		fs.Float64Var(&cfg.Group.Open, "group-open", 0.2, "share of seats that open a group although the buyer's list shows one to join")
		fs.DurationVar(&cfg.Group.Refresh, "group-refresh", time.Second, "a buyer fetches the open groups again when its list is this old")
		fs.IntVar(&cfg.Group.Buyers, "group-buyers", 150_000, "distinct users signed for the group phase")
		fs.IntVar(&cfg.Retriers, "retriers", 20_000, "distinct users who keep retrying the sold-out sale (a flash crowd: many buyers, a few tries each)")
		limited := fs.String("limited", "", "base URL of an API with the rate limits on as shipped, trusting this tool's X-Forwarded-For; "+
			"the sold-out and purchase loads run on it too, in turns with the first API's, and compare")
		watch := fs.String("watch", "", "name=pid,... of processes whose CPU use each phase reports (e.g. api=123,worker=456)")
		series := fs.String("series", "", "write the run's record (each phase's answers over time, latencies, CPU) as JSON to this file, for crowd plot")
		label := fs.String("label", "", "what the run measures (a commit), written into the record")
		redisAddrs := fs.String("redis", "", "the Redis nodes (host:port,...) whose commands per order the purchase phase reports (empty: none)")
		profileDir := fs.String("profile", "", "write CPU profiles of the purchase phase to this folder, from -profile-from")
		profileFrom := fs.String("profile-from", "", "name=http://host:port,... of processes serving /debug/pprof/ (SECKILL_PPROF) to profile")
		if err := fs.Parse(args); err != nil {
			return false, err
		}
		var err error
		if cfg.Watch, err = parseWatch(*watch); err != nil {
			return false, err
		}
		if cfg.Profile, err = parseProfiler(*profileDir, *profileFrom); err != nil {
			return false, err
		}
		cfg.Record = newRecorder(*series, "ratios", *label, cfg.Watch)
		cfg.Conns = c.conns
		if *limited != "" {
			cfg.Limited = newAPI([]string{strings.TrimRight(*limited, "/")}, max(c.conns, 1), c.timeout, c.secret)
			cfg.Limited.origin = c.origin
			cfg.Limited.forwardFor = true
		}
		cfg.Group.FirstUser = cfg.FirstUser + int64(cfg.Buyers) // users the purchase phase did not see
		switch g := cfg.Group; {
		case g.Size != 0 && (g.Size < 2 || g.Size > 100):
			return false, fmt.Errorf("-group-size: want 0 or 2..100")
		case g.Size != 0 && (g.Window < time.Minute || g.Window > 7*24*time.Hour):
			return false, fmt.Errorf("-group-window: want 1m..168h")
		case g.Size != 0 && (g.Seats < 1 || g.Buyers < 1 || g.Refresh <= 0):
			return false, fmt.Errorf("-group-seats, -group-buyers and -group-refresh must be positive")
		}
		return withAPI(ctx, c, func(a *api, db *sql.DB) (bool, error) {
			cfg.Work = newWorkWatch(db, *redisAddrs)
			defer cfg.Work.close()
			return runRatios(ctx, w, a, db, cfg)
		})
	case "compare":
		var cfg compareConfig
		c.register(fs, 100)
		fs.DurationVar(&cfg.Phase, "phase", 8*time.Second, "length of each measured phase")
		fs.IntVar(&cfg.Rounds, "rounds", 2, "pairs of purchase phases (this API, then the other)")
		fs.IntVar(&cfg.Buyers, "buyers", 400_000, "distinct users signed for this API's purchases")
		fs.Int64Var(&cfg.FirstUser, "first-user", 40_000_000, "user id of the first buyer")
		fs.DurationVar(&cfg.Drain, "drain", 2*time.Minute, "longest wait for MySQL to hold this API's accepted orders after a phase")
		fs.StringVar(&cfg.Other.url, "other", "", "the other service's purchase URL (required); "+userMark+" in it or in its body is a number distinct for each request")
		fs.StringVar(&cfg.Other.method, "other-method", http.MethodPost, "its method")
		fs.StringVar(&cfg.OtherName, "other-name", "other", "the other service's name, in the output and the record")
		otherBody := fs.String("other-body", "", "its request body (none when empty)")
		fs.StringVar(&cfg.Other.ok, "other-ok", "", "a substring of a successful purchase's answer (empty: every 2xx)")
		fs.StringVar(&cfg.OtherSoldOut.url, "other-sold-out", "", "the same endpoint of an instance with nothing left to sell (empty: no sold-out load)")
		watch := fs.String("watch", "", "name=pid,... of processes whose CPU each phase reports (both services' processes)")
		series := fs.String("series", "", "write the run's record as JSON to this file, for crowd plot")
		label := fs.String("label", "", "what the run measures, written into the record")
		if err := fs.Parse(args); err != nil {
			return false, err
		}
		var err error
		if cfg.Watch, err = parseWatch(*watch); err != nil {
			return false, err
		}
		if cfg.Other.url == "" || cfg.Rounds < 1 || cfg.Phase <= 0 || cfg.Buyers < 1 {
			return false, fmt.Errorf("-other is required; -rounds, -phase and -buyers must be positive")
		}
		if *otherBody != "" {
			cfg.Other.body = []byte(*otherBody)
		}
		cfg.OtherSoldOut.method, cfg.OtherSoldOut.body, cfg.OtherSoldOut.ok = cfg.Other.method, cfg.Other.body, cfg.Other.ok
		cfg.Other.users = newUsers()
		cfg.OtherSoldOut.users = cfg.Other.users
		cfg.Conns, cfg.Record = c.conns, newRecorder(*series, "compare", *label, cfg.Watch)
		return withAPI(ctx, c, func(a *api, db *sql.DB) (bool, error) { return runCompare(ctx, w, a, db, cfg) })
	case "overload":
		var cfg overloadConfig
		c.register(fs, 100)
		fs.DurationVar(&cfg.Phase, "phase", 5*time.Second, "length of the closed-loop phase that measures the capacity")
		fs.DurationVar(&cfg.Attack, "attack", 15*time.Second, "length of the open-loop crowd")
		fs.Float64Var(&cfg.Times, "times", 3, "the crowd's arrival rate, in multiples of the capacity")
		fs.IntVar(&cfg.Buyers, "buyers", 400_000, "distinct users signed before the capacity phase, each buying once (more are signed when the crowd needs them)")
		fs.Int64Var(&cfg.FirstUser, "first-user", 5_000_000, "user id of the first buyer")
		fs.DurationVar(&cfg.Drain, "drain", 2*time.Minute, "longest wait for MySQL to hold every accepted order")
		fs.IntVar(&cfg.MaxOpen, "max-open", 4000, "most requests of the crowd open at once (connections)")
		fs.IntVar(&cfg.RSSPid, "rss-pid", 0, "pid of the API process whose memory is reported (0: none)")
		fs.BoolVar(&cfg.Strict, "strict", false, "exit 1 when a target is missed")
		watch := fs.String("watch", "", "name=pid,... of processes whose CPU use the crowd reports")
		if err := fs.Parse(args); err != nil {
			return false, err
		}
		var err error
		if cfg.Watch, err = parseWatch(*watch); err != nil {
			return false, err
		}
		cfg.Conns, cfg.Timeout = c.conns, c.timeout
		if cfg.Times <= 0 || cfg.Attack <= 0 || cfg.Phase <= 0 || cfg.Buyers < 1 || cfg.MaxOpen < 1 {
			return false, fmt.Errorf("-times, -attack, -phase, -buyers and -max-open must be positive")
		}
		return withAPI(ctx, c, func(a *api, db *sql.DB) (bool, error) { return runOverload(ctx, w, a, db, cfg) })
	case "waiting":
		var cfg waitingConfig
		c.register(fs, 64)
		fs.StringVar(&cfg.Front, "front", "", "base URL of the project's nginx in front of the APIs of -api (required)")
		metrics := fs.String("metrics", "", "the APIs' /metrics URLs, comma-separated: what reached them (required)")
		fs.IntVar(&cfg.Buyers, "buyers", 500, "buyers waiting in the line, each polling its status every 1 to 1.5 s")
		fs.IntVar(&cfg.Rate, "rate", 100, "the line's admit_per_second")
		fs.DurationVar(&cfg.Lead, "lead", 10*time.Second, "from the sale's creation to its start: the buyers join meanwhile")
		fs.Int64Var(&cfg.FirstUser, "first-user", 40_000_000, "user id of the first buyer")
		fs.IntVar(&cfg.Watchers, "watchers", 64, "connections reading the sale and its status through the front, as fast as it answers")
		fs.DurationVar(&cfg.Phase, "phase", 9*time.Second, "the direct phase: healthz, the status and the sale in turns of 1 s")
		watch := fs.String("watch", "", "name=pid,... of processes whose CPU use the phases report")
		if err := fs.Parse(args); err != nil {
			return false, err
		}
		var err error
		if cfg.Watch, err = parseWatch(*watch); err != nil {
			return false, err
		}
		for u := range strings.SplitSeq(*metrics, ",") {
			if u = strings.TrimSpace(u); u != "" {
				cfg.Metrics = append(cfg.Metrics, u)
			}
		}
		if cfg.Front == "" || len(cfg.Metrics) == 0 || cfg.Buyers < 1 || cfg.Rate < 1 || cfg.Watchers < 1 {
			return false, fmt.Errorf("-front and -metrics are required; -buyers, -rate and -watchers must be positive")
		}
		cfg.Conns = c.conns
		return withAPI(ctx, c, func(a *api, db *sql.DB) (bool, error) { return runWaiting(ctx, w, a, db, cfg) })
	case "hot":
		var cfg hotConfig
		c.register(fs, 100)
		fs.DurationVar(&cfg.Turn, "turn", 2*time.Second, "length of one turn of one sale's load")
		fs.IntVar(&cfg.Rounds, "rounds", 4, "turns of each sale")
		buckets := fs.String("buckets", "1,3", "stock_buckets of the sales, comma-separated")
		fs.IntVar(&cfg.Buyers, "buyers", 400_000, "distinct users signed, each buying once")
		fs.Int64Var(&cfg.FirstUser, "first-user", 30_000_000, "user id of the first buyer")
		fs.DurationVar(&cfg.Drain, "drain", 2*time.Minute, "longest wait for MySQL to hold every accepted order")
		watch := fs.String("watch", "", "name=pid,... of processes whose CPU use each sale's turns report")
		nodes := fs.String("nodes", "", "name=host:port,... of the Redis nodes whose script calls each turn counts (names as in -watch)")
		if err := fs.Parse(args); err != nil {
			return false, err
		}
		var err error
		if cfg.Watch, err = parseWatch(*watch); err != nil {
			return false, err
		}
		if cfg.Nodes, err = parseNodes(ctx, *nodes); err != nil {
			return false, err
		}
		for part := range strings.SplitSeq(*buckets, ",") {
			k, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil || k < 1 || k > 64 {
				return false, fmt.Errorf("-buckets: want numbers 1..64, got %q", part)
			}
			cfg.Buckets = append(cfg.Buckets, k)
		}
		cfg.Conns = c.conns
		if cfg.Turn <= 0 || cfg.Rounds < 1 || cfg.Buyers < 1 {
			return false, fmt.Errorf("-turn, -rounds and -buyers must be positive")
		}
		return withAPI(ctx, c, func(a *api, db *sql.DB) (bool, error) { return runHot(ctx, w, a, db, cfg) })
	case "soak":
		var cfg soakConfig
		c.register(fs, 1)
		fs.IntVar(&cfg.Rate, "rate", 1500, "purchases per second, each by a new buyer")
		fs.DurationVar(&cfg.Duration, "duration", 5*time.Minute, "length of the crowd")
		fs.DurationVar(&cfg.PayWindow, "pay-window", time.Minute, "the sale's pay window (nobody pays)")
		fs.DurationVar(&cfg.Every, "every", 30*time.Second, "time between two memory reports")
		fs.Int64Var(&cfg.FirstUser, "first-user", 20_000_000, "user id of the first buyer")
		fs.StringVar(&cfg.RedisAddr, "redis", env("SECKILL_REDIS_ADDR", "127.0.0.1:6379"), "the API's Redis, for INFO memory")
		fs.IntVar(&cfg.APIPid, "api-pid", 0, "pid of the API, for its RSS (0: none)")
		fs.IntVar(&cfg.WorkerPid, "worker-pid", 0, "pid of the worker, for its RSS (0: none)")
		if err := fs.Parse(args); err != nil {
			return false, err
		}
		cfg.Timeout = c.timeout
		if cfg.Rate < 1 || cfg.Duration <= 0 || cfg.Every <= 0 || cfg.PayWindow < time.Second {
			return false, fmt.Errorf("-rate, -duration and -every must be positive, -pay-window at least 1s")
		}
		return withAPI(ctx, c, func(a *api, db *sql.DB) (bool, error) { return runSoak(ctx, w, a, db, cfg) })
	case "drops":
		var cfg dropsConfig
		c.register(fs, 8)
		fs.IntVar(&cfg.Sales, "sales", 50, "short sales to run to their end and see archived")
		fs.IntVar(&cfg.Buyers, "buyers", 20, "buyers (and units) of each sale; half their orders paid, half cancelled")
		fs.DurationVar(&cfg.Open, "open", 10*time.Second, "how long each sale is open from its creation (its buyers buy in it)")
		fs.DurationVar(&cfg.Within, "within", 5*time.Minute, "longest wait for the last sale's archive (the worker's SECKILL_SALE_RETENTION short)")
		fs.Int64Var(&cfg.FirstUser, "first-user", 60_000_000, "user id of the first buyer")
		fs.StringVar(&cfg.RedisAddr, "redis", "", "the API's Redis, for its keys and used_memory before and after (empty: not read)")
		if err := fs.Parse(args); err != nil {
			return false, err
		}
		if cfg.Sales < 1 || cfg.Buyers < 1 || cfg.Open <= 0 || cfg.Within <= 0 {
			return false, fmt.Errorf("-sales, -buyers, -open and -within must be positive")
		}
		return withAPI(ctx, c, func(a *api, _ *sql.DB) (bool, error) { return runDrops(ctx, w, a, cfg) })
	case "plot":
		out := fs.String("out", "docs/img", "directory the SVG files are written to")
		if err := fs.Parse(args); err != nil {
			return false, err
		}
		if err := runPlot(*out, fs.Args()); err != nil {
			return false, err
		}
		return true, nil
	case "sale":
		c.register(fs, 1)
		stock := fs.Int64("stock", 1, "units")
		limit := fs.Int("limit", 1, "per-user limit")
		soldOut := fs.Bool("sold-out", false, "buy every unit (as user 2, limit permitting) so the sale answers sold_out")
		if err := fs.Parse(args); err != nil {
			return false, err
		}
		a := c.api()
		id, err := a.createSale(ctx, "crowd sale", *stock, *limit)
		if err != nil {
			return false, err
		}
		if *soldOut {
			if int64(*limit) < *stock {
				return false, fmt.Errorf("-sold-out needs -limit >= -stock")
			}
			tok, err := a.token("2", false)
			if err != nil {
				return false, err
			}
			if r := a.buy(ctx, id, tok, "", int(*stock)); r.status != 202 {
				return false, fmt.Errorf("buy out sale %d: %s %s", id, r.label(), r.body)
			}
		}
		_, err = fmt.Fprintln(w, id)
		return err == nil, err
	case "token":
		c.register(fs, 1)
		user := fs.String("user", "42", "the subject: a user id, or any other")
		admin := fs.Bool("admin", false, "admin role")
		if err := fs.Parse(args); err != nil {
			return false, err
		}
		tok, err := c.api().token(*user, *admin)
		if err != nil {
			return false, err
		}
		_, err = fmt.Fprintln(w, tok)
		return err == nil, err
	}
	return false, fmt.Errorf("unknown mode %q (want audit, waitlist, ratios, compare, overload, hot, soak, drops, waiting, plot, sale or token)", mode)
}

func withAPI(ctx context.Context, c common, f func(*api, *sql.DB) (bool, error)) (bool, error) {
	a := c.api()
	if len(a.urls) == 0 {
		return false, fmt.Errorf("-api: no URL")
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := a.waitHealthy(wctx); err != nil {
		return false, err
	}
	db, err := c.db()
	if err != nil {
		return false, err
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return false, fmt.Errorf("MySQL: %w", err)
	}
	return f(a, db)
}

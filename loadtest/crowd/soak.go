package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// soakConfig is a steady crowd for minutes: purchases at a constant rate on a sale with
// a short pay window that nobody pays, so orders expire and their units come back all
// along. What it watches is memory: Redis', the API's and the worker's.
type soakConfig struct {
	Rate      int           // purchases per second
	Duration  time.Duration // of the crowd
	PayWindow time.Duration // of the sale
	Every     time.Duration // between two reports
	FirstUser int64
	RedisAddr string // the Redis to read INFO memory from
	APIPid    int    // processes whose RSS is reported (0: none)
	WorkerPid int
	Timeout   time.Duration
}

// memSample is one report line's figures.
type memSample struct {
	at                   time.Duration
	redis, api, worker   int64 // bytes
	accepted, expired    int64
	answered, unexpected int64
}

func runSoak(ctx context.Context, w io.Writer, a *api, db *sql.DB, cfg soakConfig) (bool, error) {
	rdb := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return false, fmt.Errorf("redis %s: %w", cfg.RedisAddr, err)
	}
	saleID, err := a.create(ctx, saleSpec{Name: "soak", Stock: 1_000_000_000, PerUserLimit: 1,
		PayWindowSeconds: int(cfg.PayWindow.Seconds())})
	if err != nil {
		return false, err
	}
	// A pool of buyers, each back after about a pay window and a half-minute more: by
	// then their order has usually expired and their limit of one is free again (else
	// 409 limit_exceeded, an answer of the contract). The sale's users stay this many.
	n := min(int(float64(cfg.Rate)*cfg.Duration.Seconds())+cfg.Rate, int(float64(cfg.Rate)*(cfg.PayWindow+90*time.Second).Seconds()))
	tokens, err := a.tokens(cfg.FirstUser, n)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "soak: sale %d, %d purchases/s for %s by a pool of %d buyers, pay window %s (nobody pays: every order expires and its unit comes back)\n",
		saleID, cfg.Rate, cfg.Duration, n, cfg.PayWindow)
	var next atomic.Int64
	targeter := purchases(a.urls[0], saleID, func() string { return tokens[int(next.Add(1)-1)%n] })
	attacker := vegeta.NewAttacker(vegeta.Timeout(cfg.Timeout), vegeta.KeepAlive(true), vegeta.HTTP2(false),
		vegeta.MaxWorkers(2000), vegeta.MaxConnections(2000))

	var accepted, limited, refused, answered, unexpected atomic.Int64
	var mu sync.Mutex
	others := map[string]int{}
	sample := func(at time.Duration) memSample {
		s := memSample{at: at, api: procStatus(cfg.APIPid, "VmRSS"), worker: procStatus(cfg.WorkerPid, "VmRSS"),
			accepted: accepted.Load(), answered: answered.Load(), unexpected: unexpected.Load()}
		if info, err := rdb.Info(ctx, "memory").Result(); err == nil {
			s.redis = infoField(info, "used_memory")
		}
		_ = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE activity_id = ? AND status = 'cancelled'", saleID).Scan(&s.expired)
		return s
	}
	fmt.Fprintf(w, "  %8s %12s %10s %10s %10s %10s %10s\n", "time", "accepted", "expired", "redis MB", "api MB", "worker MB", "unexpected")
	report := func(s memSample) {
		fmt.Fprintf(w, "  %7.0fs %12d %10d %10.1f %10.1f %10.1f %10d\n", s.at.Seconds(), s.accepted, s.expired,
			float64(s.redis)/(1<<20), float64(s.api)/(1<<20), float64(s.worker)/(1<<20), s.unexpected)
	}
	start := time.Now()
	var samples []memSample
	done := make(chan struct{})
	go func() {
		defer close(done)
		for res := range attacker.Attack(targeter, vegeta.Rate{Freq: cfg.Rate, Per: time.Second}, cfg.Duration, "soak") {
			answered.Add(1)
			code := ""
			if res.Code >= 300 {
				code = errorCode(res.Body)
			}
			switch {
			case res.Code == http.StatusAccepted:
				accepted.Add(1)
			case res.Code == http.StatusConflict && code == "limit_exceeded":
				limited.Add(1)
			case res.Code == http.StatusTooManyRequests && code == "rate_limited" && res.Headers.Get("Retry-After") != "":
				refused.Add(1) // admission control: the process was full for a moment, nothing taken
			default: // a steady crowd within capacity: anything else is worth a look
				unexpected.Add(1)
				mu.Lock()
				others[strings.TrimSpace(fmt.Sprintf("%d %s", res.Code, code))]++
				mu.Unlock()
			}
		}
	}()
	tick := time.NewTicker(cfg.Every)
	defer tick.Stop()
	s := sample(0)
	samples = append(samples, s)
	report(s)
loop:
	for {
		select {
		case <-ctx.Done():
			attacker.Stop()
			<-done
			return false, ctx.Err()
		case <-done:
			break loop
		case <-tick.C:
			s := sample(time.Since(start))
			samples = append(samples, s)
			report(s)
		}
	}
	s = sample(time.Since(start))
	samples = append(samples, s)
	report(s)

	// Levelling off: once a pay window (and the returned set's retention) has passed,
	// expiries balance purchases; compare the second half of the run with the first
	// sample past that point.
	settled := cfg.PayWindow + time.Minute
	var from *memSample
	for i := range samples {
		if samples[i].at >= settled {
			from = &samples[i]
			break
		}
	}
	last := samples[len(samples)-1]
	if from == nil || from == &samples[len(samples)-1] {
		fmt.Fprintf(w, "  the run is too short to see memory level off after the pay window (%s + 1m); run longer (-duration)\n", cfg.PayWindow)
	} else {
		fmt.Fprintf(w, "  from %.0fs to the end (%.0fs): redis %+.1f MB, api %+.1f MB, worker %+.1f MB, while %d more orders were accepted and %d expired\n",
			from.at.Seconds(), last.at.Seconds(), float64(last.redis-from.redis)/(1<<20), float64(last.api-from.api)/(1<<20),
			float64(last.worker-from.worker)/(1<<20), last.accepted-from.accepted, last.expired-from.expired)
	}
	fmt.Fprintf(w, "  answers: %d in all, %d 202, %d 409 limit_exceeded (the buyer's order had not expired yet), "+
		"%d 429 rate_limited with Retry-After (refused at once: the API had its bound of purchases in flight)\n",
		last.answered, last.accepted, limited.Load(), refused.Load())
	ok := true
	// Levelled off: Redis grew by at most a tenth of its level once the pay window had
	// passed (a history kept per order would grow by megabytes a minute at this rate).
	if from != nil && from != &samples[len(samples)-1] {
		if grew := last.redis - from.redis; grew > from.redis/10 {
			fmt.Fprintf(w, "soak: Redis did not level off: %+.1f MB after %.0fs, more than a tenth of its %.1f MB then\n",
				float64(grew)/(1<<20), from.at.Seconds(), float64(from.redis)/(1<<20))
			ok = false
		} else {
			fmt.Fprintf(w, "  Redis levelled off: %+.1f MB after %.0fs, within a tenth of its %.1f MB then\n",
				float64(grew)/(1<<20), from.at.Seconds(), float64(from.redis)/(1<<20))
		}
	}
	if last.unexpected > 0 {
		fmt.Fprintf(w, "soak: %d answers outside the contract's for a steady crowd (of %d): %s\n",
			last.unexpected, last.answered, breakdownOf(others))
		ok = false
	}
	return ok, nil
}

// infoField reads an integer field of Redis' INFO.
func infoField(info, name string) int64 {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

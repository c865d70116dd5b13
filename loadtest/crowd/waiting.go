package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// waitingConfig is the waiting crowd's scenario.
type waitingConfig struct {
	Conns int
	// Front is the base URL of the project's nginx in front of the APIs; Metrics the
	// APIs' /metrics URLs, whose request counters say what reached them.
	Front   string
	Metrics []string
	// Buyers wait in a sale's line as the buyer's page does; Rate is its
	// admit_per_second; Lead the time from the sale's creation to its start.
	Buyers    int
	Rate      int
	Lead      time.Duration
	FirstUser int64
	// Watchers are the crowd's connections that read the sale and its line's status
	// through the front as fast as it answers (the waiting crowd's many pages).
	Watchers int
	// Phase is the length of the direct phase: the status and the sale in turns with
	// /healthz on the APIs themselves.
	Phase time.Duration
	Watch cpuWatch
}

// The routes whose requests the APIs count (seckill_http_requests_total's route).
const (
	routeStatus = "/api/v1/activities/:id/line/status"
	routeSale   = "/api/v1/activities/:id"
)

// roomSale creates a sale of stock units (limit 1) with a waiting room admitting rate a
// second that starts at starts, and returns its id.
func (a *api) roomSale(ctx context.Context, name string, stock int64, rate int, starts time.Time) (int64, error) {
	admin, err := a.token("1", true)
	if err != nil {
		return 0, err
	}
	body, _ := json.Marshal(map[string]any{"name": name, "product_name": "load-test unit", "price_cents": 100,
		"stock": stock, "per_user_limit": 1, "starts_at": starts.UTC().Format(time.RFC3339Nano),
		"ends_at": starts.Add(time.Hour).UTC().Format(time.RFC3339Nano), "waiting_room": true,
		"admit_per_second": rate, "prequeue_seconds": 7200})
	r := a.do(ctx, http.MethodPost, "/api/v1/admin/activities", admin, "", body)
	var got struct {
		ID int64 `json:"id"`
	}
	if r.err != nil || r.status != http.StatusCreated || json.Unmarshal(r.body, &got) != nil || got.ID <= 0 {
		return 0, fmt.Errorf("create a waiting-room sale: %s %s", r.label(), r.body)
	}
	return got.ID, nil
}

// apiRequests sums each API's count of requests of the routes (their /metrics).
func apiRequests(ctx context.Context, a *api, metrics []string, routes ...string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, u := range metrics {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := a.http.Do(req)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", u, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if !strings.HasPrefix(line, "seckill_http_requests_total{") {
				continue
			}
			for _, r := range routes {
				if strings.Contains(line, `route="`+r+`"`) {
					v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
					out[r] += int64(v)
				}
			}
		}
	}
	return out, nil
}

// waitingBuyer is one buyer of the crowd's sale, as its page waits: it joins, polls the
// line's status every 1 to 1.5 s, reads its ticket once admitted and buys.
type waitingBuyer struct {
	token      string
	place      int64
	polls      int
	seen       time.Time // the poll that showed admitted_through >= place
	admittedAt time.Time // its ticket's
	position   int64
	bought     time.Time // the purchase's 202
	buy        answer
	err        string
}

func (b *waitingBuyer) wait(ctx context.Context, front *api, saleID int64) {
	statusPath := fmt.Sprintf("/api/v1/activities/%d/line/status", saleID)
	for {
		r := front.do(ctx, http.MethodGet, statusPath, "", "", nil)
		b.polls++
		var st struct {
			State           string `json:"state"`
			AdmittedThrough int64  `json:"admitted_through"`
		}
		switch {
		case r.err != nil || r.status != http.StatusOK || json.Unmarshal(r.body, &st) != nil:
			b.err = "status: " + r.label()
			return
		case st.AdmittedThrough >= b.place:
			b.seen = time.Now()
			b.collect(ctx, front, saleID)
			return
		case st.State == "sold_out" || st.State == "ended":
			b.err = "the line closed before its place: " + st.State
			return
		}
		select {
		case <-ctx.Done():
			b.err = "not admitted in time"
			return
		case <-time.After(time.Second + rand.N(500*time.Millisecond)):
		}
	}
}

// collect reads the admitted buyer's ticket for its pass and buys with it.
func (b *waitingBuyer) collect(ctx context.Context, front *api, saleID int64) {
	r := front.do(ctx, http.MethodGet, fmt.Sprintf("/api/v1/activities/%d/line", saleID), b.token, "", nil)
	var tk struct {
		Status     string    `json:"status"`
		Position   int64     `json:"position"`
		Pass       string    `json:"pass"`
		AdmittedAt time.Time `json:"admitted_at"`
	}
	if r.err != nil || r.status != http.StatusOK || json.Unmarshal(r.body, &tk) != nil || tk.Status != "admitted" || tk.Pass == "" {
		b.err = fmt.Sprintf("ticket once admitted: %s %s", r.label(), r.body)
		return
	}
	b.admittedAt, b.position = tk.AdmittedAt, tk.Position
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, front.base()+fmt.Sprintf("/api/v1/activities/%d/orders", saleID),
		strings.NewReader(`{"quantity":1}`))
	if err != nil {
		b.err = err.Error()
		return
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Sale-Pass", tk.Pass)
	start := time.Now()
	resp, err := front.http.Do(req)
	b.buy = answer{latency: time.Since(start), err: err}
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b.buy.status, b.buy.body = resp.StatusCode, body
		if resp.StatusCode >= 300 {
			b.buy.code = errorCode(body)
		}
	}
	b.bought = time.Now()
}

// runWaiting measures what a waiting crowd costs: on the APIs themselves, the line's
// status and the sale in turns with /healthz (each API answers them from its
// snapshots); then, through the front, buyers waiting in a sale's line as the buyer's
// page does, beside a crowd reading the sale and the status as fast as the front
// answers: the requests a second that reached the APIs, when each buyer saw its
// admission, and its purchase's time. It fails when a buyer did not buy, the line did
// not admit in place order, or the APIs got more than a few of those reads a second.
func runWaiting(ctx context.Context, w io.Writer, direct *api, _ *sql.DB, cfg waitingConfig) (bool, error) {
	front := newAPI([]string{cfg.Front}, cfg.Watchers+cfg.Conns, direct.http.Timeout, direct.secret)
	fmt.Fprintf(w, "waiting: APIs %v, front %s; %d buyers in line at %d/s beside %d connections reading through the front\n",
		direct.urls, cfg.Front, cfg.Buyers, cfg.Rate, cfg.Watchers)

	// The status and the sale, straight at the APIs, in turns with healthz.
	probe, err := direct.roomSale(ctx, "waiting probe", 1_000_000, 1, time.Now().Add(time.Hour))
	if err != nil {
		return false, err
	}
	get := func(path string) func(ctx context.Context, _ int) (answer, bool) {
		return func(ctx context.Context, _ int) (answer, bool) {
			return direct.do(ctx, http.MethodGet, path, "", "", nil), true
		}
	}
	hammer(ctx, "warm-up", cfg.Conns, time.Second, get("/healthz"))
	phases := alternate(ctx, []string{"healthz", "status", "sale"}, cfg.Conns, cfg.Phase, time.Second, cfg.Watch,
		get("/healthz"), get(fmt.Sprintf("/api/v1/activities/%d/line/status", probe)), get(fmt.Sprintf("/api/v1/activities/%d", probe)))
	for _, p := range phases {
		p.print(w)
		if u := cfg.Watch.describe(p.cpu); u != "" {
			fmt.Fprintf(w, "  %-16s cpu in cores: %s\n", "", u)
		}
	}
	statusRatio, saleRatio := phases[1].rate()/phases[0].rate(), phases[2].rate()/phases[0].rate()
	fmt.Fprintf(w, "  status/s vs healthz %.3f (want >= 0.70), sale/s vs healthz %.3f\n", statusRatio, saleRatio)
	ok := statusRatio >= 0.70

	// The waiting crowd, through the front.
	starts := time.Now().Add(cfg.Lead)
	saleID, err := front.roomSale(ctx, "waiting crowd", int64(cfg.Buyers), cfg.Rate, starts)
	if err != nil {
		return false, err
	}
	buyers := make([]*waitingBuyer, cfg.Buyers)
	var next atomic.Int64
	joined := hammer(ctx, "join", cfg.Conns, cfg.Lead, func(ctx context.Context, _ int) (answer, bool) {
		i := int(next.Add(1) - 1)
		if i >= len(buyers) {
			return answer{}, false
		}
		token, err := front.buyerToken(cfg.FirstUser + int64(i))
		if err != nil {
			return answer{err: err}, true
		}
		b := &waitingBuyer{token: token}
		buyers[i] = b
		r := front.do(ctx, http.MethodPost, fmt.Sprintf("/api/v1/activities/%d/line", saleID), token, "", []byte(`{}`))
		var tk struct {
			Place int64 `json:"place"`
		}
		if r.status != http.StatusCreated || json.Unmarshal(r.body, &tk) != nil || tk.Place <= 0 {
			b.err = "join: " + r.label()
		}
		b.place = tk.Place
		return r, true
	})
	joined.print(w)

	paths := []string{fmt.Sprintf("/api/v1/activities/%d/line/status", saleID), fmt.Sprintf("/api/v1/activities/%d", saleID)}
	before, err := apiRequests(ctx, direct, cfg.Metrics, routeStatus, routeSale)
	if err != nil {
		return false, err
	}
	cpuBefore := cfg.Watch.sample()
	start := time.Now()
	watchCtx, stopWatchers := context.WithCancel(ctx)
	var n atomic.Int64
	var crowd phase
	var crowdDone sync.WaitGroup
	crowdDone.Go(func() {
		crowd = hammer(watchCtx, "reads at front", cfg.Watchers, time.Hour, func(ctx context.Context, _ int) (answer, bool) {
			r := front.do(ctx, http.MethodGet, paths[n.Add(1)%2], "", "", nil)
			return r, ctx.Err() == nil
		})
	})
	waitCtx, cancel := context.WithTimeout(ctx, cfg.Lead+time.Duration(cfg.Buyers/max(cfg.Rate, 1))*time.Second+30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, b := range buyers {
		if b == nil || b.err != "" {
			continue
		}
		wg.Go(func() { b.wait(waitCtx, front, saleID) })
	}
	wg.Wait()
	stopWatchers()
	crowdDone.Wait()
	elapsed := time.Since(start)
	usage := cfg.Watch.usage(cpuBefore, cfg.Watch.sample())
	after, err := apiRequests(ctx, direct, cfg.Metrics, routeStatus, routeSale)
	if err != nil {
		return false, err
	}
	crowd.print(w)
	if usage != "" {
		fmt.Fprintf(w, "  %-16s cpu in cores: %s\n", "", usage)
	}
	polls := 0
	for _, b := range buyers {
		if b != nil {
			polls += b.polls
		}
	}
	statusAt, saleAt := float64(after[routeStatus]-before[routeStatus]), float64(after[routeSale]-before[routeSale])
	fmt.Fprintf(w, "  through the front  %.0f reads/s (the crowd's %.0f/s and the buyers' polls %.0f/s) for %.1fs\n",
		(float64(crowd.tally.total())+float64(polls))/elapsed.Seconds(), crowd.rate(), float64(polls)/elapsed.Seconds(),
		elapsed.Seconds())
	fmt.Fprintf(w, "  reached the APIs   status %.1f/s, sale %.1f/s (want a few a second each)\n",
		statusAt/elapsed.Seconds(), saleAt/elapsed.Seconds())
	ok = ok && statusAt/elapsed.Seconds() <= 3 && saleAt/elapsed.Seconds() <= 3
	return reportBuyers(w, buyers) && ok, nil
}

// reportBuyers prints how the waiting buyers fared and reports whether every one bought,
// in place order, having seen its admission within 3 s.
func reportBuyers(w io.Writer, buyers []*waitingBuyer) bool {
	var seen, buy, latency []time.Duration
	var done []*waitingBuyer
	failed := map[string]int{}
	for _, b := range buyers {
		switch {
		case b == nil:
			failed["not joined"]++
		case b.err != "":
			failed[b.err]++
		case b.buy.status != http.StatusAccepted:
			failed["buy: "+b.buy.label()]++
		default:
			done = append(done, b)
			seen = append(seen, b.seen.Sub(b.admittedAt))
			buy = append(buy, b.bought.Sub(b.admittedAt))
			latency = append(latency, b.buy.latency)
		}
	}
	slices.SortFunc(done, func(a, b *waitingBuyer) int { return int(a.place - b.place) })
	outOfOrder := 0
	for i := 1; i < len(done); i++ {
		if done[i].admittedAt.Before(done[i-1].admittedAt) || done[i].position <= done[i-1].position {
			outOfOrder++
		}
	}
	for _, d := range [][]time.Duration{seen, buy, latency} {
		slices.Sort(d)
	}
	q := func(d []time.Duration) string {
		return fmt.Sprintf("p50 %s  p99 %s  max %s", ms(percentile(d, 50)), ms(percentile(d, 99)), ms(percentile(d, 100)))
	}
	fmt.Fprintf(w, "  buyers             %d of %d bought (others: %v); admitted out of place order: %d\n",
		len(done), len(buyers), failed, outOfOrder)
	fmt.Fprintf(w, "  admission seen     after admitted_at: %s (want max <= 3s)\n", q(seen))
	fmt.Fprintf(w, "  purchase           202 after admitted_at: %s; the purchase itself: %s\n", q(buy), q(latency))
	ok := len(done) == len(buyers) && outOfOrder == 0 && (len(seen) == 0 || seen[len(seen)-1] <= 3*time.Second)
	if ok {
		fmt.Fprintln(w, "waiting: PASS")
	} else {
		fmt.Fprintln(w, "waiting: FAIL")
	}
	return ok
}

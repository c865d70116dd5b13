package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// compareConfig measures this API's purchases beside another service's purchase
// endpoint, on the same machine with the same crowd: any HTTP endpoint that sells a
// unit per request, its success told by a substring of its answer.
type compareConfig struct {
	Conns     int
	Phase     time.Duration // each measured phase
	Rounds    int           // pairs of phases (this API, the other) per load
	Buyers    int           // distinct users signed for this API's purchases
	FirstUser int64
	Drain     time.Duration
	Other     otherEndpoint // a purchase on the other service
	OtherName string        // its name, which its phases' names begin with
	// OtherSoldOut is the other service's endpoint with nothing left to sell ("" url:
	// the sold-out load is left out).
	OtherSoldOut otherEndpoint
	Watch        cpuWatch
	Record       *recorder
}

// otherEndpoint is a request to the other service.
type otherEndpoint struct {
	url, method string
	body        []byte
	ok          string // a substring of a successful answer's body; "" counts every 2xx
	// users numbers the {user} of url and body, one number per request, so that a
	// service that sells each user once sees a new buyer in every request.
	users *atomic.Int64
}

// userMark is replaced, in the other service's URL and body, by a number no other
// request of this run or of an earlier one carries: the numbers start at the run's
// start time in microseconds, and no run sends a request per microsecond.
const userMark = "{user}"

func newUsers() *atomic.Int64 {
	var n atomic.Int64
	n.Store(time.Now().UnixMicro())
	return &n
}

// call sends the request and labels its answer: "200 ok" when it is a 2xx with ok in
// its body, "200 refused" or "409 refused" (its status) when it is any other answer
// below 500, as a sold-out answer is. The client c has "" as its base URL: the
// request's whole URL is the endpoint's.
func (e otherEndpoint) call(ctx context.Context, c *api) answer {
	url, body := e.url, e.body
	if e.users != nil {
		user := strconv.FormatInt(e.users.Add(1), 10)
		url = strings.ReplaceAll(url, userMark, user)
		if body != nil {
			body = bytes.ReplaceAll(body, []byte(userMark), []byte(user))
		}
	}
	r := c.do(ctx, e.method, url, "", "", body)
	if r.err == nil && r.status < 500 {
		r.code = "refused"
		if r.status < 300 && (e.ok == "" || bytes.Contains(r.body, []byte(e.ok))) {
			r.code = "ok"
		}
	}
	return r
}

// refusals counts the other service's refusals among counts by label, whatever their
// status.
func refusals(counts map[string]int) int {
	n := 0
	for label, c := range counts {
		if strings.HasSuffix(label, " refused") {
			n += c
		}
	}
	return n
}

// refusedRate is the rate of the other service's refusals.
func (p phase) refusedRate() float64 {
	return float64(refusals(p.tally.counts)) / p.elapsed.Seconds()
}

// runCompare measures, in this order and Rounds times: healthz, this API's purchases
// (distinct buyers, one unit each, plentiful stock) until MySQL holds them all, healthz,
// the other service's purchases; then healthz, this API's sold-out answers, healthz,
// the other's answers when it has nothing left. Each load is compared with the mean of
// the healthz phases on both sides of it, and its CPU per purchase is counted from its
// start until this API's worker has written its orders (the other service writes
// nothing, or writes before it answers).
func runCompare(ctx context.Context, w io.Writer, a *api, db *sql.DB, cfg compareConfig) (bool, error) {
	fmt.Fprintf(w, "compare: this API %v and %s (%s %s), %d connections, %s phases, %d rounds; this tool: %d CPUs\n",
		a.urls, cfg.OtherName, cfg.Other.method, cfg.Other.url, cfg.Conns, cfg.Phase, cfg.Rounds, runtime.NumCPU())
	tokens, err := a.tokens(cfg.FirstUser, cfg.Buyers)
	if err != nil {
		return false, err
	}
	other := newAPI([]string{""}, cfg.Conns, a.http.Timeout, "")
	otherSold := newAPI([]string{""}, cfg.Conns, a.http.Timeout, "")
	healthz := func(ctx context.Context, _ int) (answer, bool) {
		return a.do(ctx, http.MethodGet, "/healthz", "", "", nil), true
	}
	measure := func(name string, fn func(ctx context.Context, worker int) (answer, bool), after func() error) (phase, error) {
		before := cfg.Watch.sample()
		p := hammer(ctx, name, cfg.Conns, cfg.Phase, fn)
		var err error
		if after != nil {
			err = after()
		}
		p.cpu = cfg.Watch.span(before, cfg.Watch.sample())
		p.print(w)
		if u := cfg.Watch.perEvent(p.cpu, p.tally.counts["202"]+p.tally.counts["200 ok"]); u != "" && name != "healthz" {
			fmt.Fprintf(w, "  %-16s cpu per purchase: %s\n", "", u)
		}
		cfg.Record.add(p)
		return p, err
	}

	hammer(ctx, "warm-up", cfg.Conns, time.Second, healthz) // opens the connections
	hammer(ctx, "warm-up", cfg.Conns, time.Second, func(ctx context.Context, _ int) (answer, bool) {
		return cfg.Other.call(ctx, other), true
	})

	buyID, err := a.createSale(ctx, "compare purchase", 1_000_000_000, 1)
	if err != nil {
		return false, err
	}
	var next atomic.Int64
	var mu sync.Mutex
	var got []accepted202
	buy := func(ctx context.Context, _ int) (answer, bool) {
		i := int(next.Add(1) - 1)
		if i >= len(tokens) {
			return answer{}, false
		}
		r := a.buy(ctx, buyID, tokens[i], "", 1)
		if r.status == http.StatusAccepted {
			mu.Lock()
			got = append(got, accepted202{i, r.body})
			mu.Unlock()
		}
		return r, true
	}
	drained := func() error { // until MySQL holds every order accepted so far
		mu.Lock()
		n := len(got)
		mu.Unlock()
		deadline := time.Now().Add(cfg.Drain)
		for {
			stored, err := countOrders(ctx, db, buyID)
			if err != nil || stored >= n {
				return err
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("MySQL holds %d of %d accepted orders after %s", stored, n, cfg.Drain)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	buyOther := func(ctx context.Context, _ int) (answer, bool) { return cfg.Other.call(ctx, other), true }

	var figures []figure
	ratio := func(name string, p phase, rate float64, before, after phase) float64 {
		yard := (before.rate() + after.rate()) / 2
		r := rate / yard
		_, p99, _ := p.tally.percentiles()
		figures = append(figures, figure{name: name, measured: fmt.Sprintf("%.0f/s, p99 %s", rate, ms(p99)), ratio: r, ok: true})
		return r
	}
	var ours, theirs []float64
	for round := range cfg.Rounds {
		h1, _ := measure("healthz", healthz, nil)
		mine, err := measure("purchase", buy, drained)
		if err != nil {
			return false, err
		}
		h2, _ := measure("healthz", healthz, nil)
		their, _ := measure(cfg.OtherName+" purchase", buyOther, nil)
		h3, _ := measure("healthz", healthz, nil)
		suffix := " (round " + strconv.Itoa(round+1) + ")"
		ours = append(ours, ratio("purchases/s vs healthz"+suffix, mine, mine.rateOf("202"), h1, h2))
		theirs = append(theirs, ratio(cfg.OtherName+" purchases/s vs healthz"+suffix, their, their.rateOf("200 ok"), h2, h3))
	}
	if cfg.OtherSoldOut.url != "" {
		soldID, err := a.createSale(ctx, "compare sold out", 1, 1)
		if err != nil {
			return false, err
		}
		if r := a.buy(ctx, soldID, tokens[0], "", 1); r.status != http.StatusAccepted {
			return false, fmt.Errorf("buy the only unit of sale %d: %s %s", soldID, r.label(), r.body)
		}
		var n atomic.Int64
		soldOut := func(ctx context.Context, _ int) (answer, bool) {
			i := int(n.Add(1)-1) % min(len(tokens), 20_000)
			return a.buy(ctx, soldID, tokens[i], "", 1), true
		}
		theirSold := func(ctx context.Context, _ int) (answer, bool) { return cfg.OtherSoldOut.call(ctx, otherSold), true }
		h1, _ := measure("healthz", healthz, nil)
		mine, _ := measure("sold out", soldOut, nil)
		h2, _ := measure("healthz", healthz, nil)
		their, _ := measure(cfg.OtherName+" sold out", theirSold, nil)
		h3, _ := measure("healthz", healthz, nil)
		ratio("sold-out answers/s vs healthz", mine, mine.rateOf("409 sold_out"), h1, h2)
		ratio(cfg.OtherName+" sold-out answers/s vs healthz", their, their.refusedRate(), h2, h3)
	}
	for i := range ours {
		figures = append(figures, figure{name: fmt.Sprintf("purchases/s vs %s's (round %d)", cfg.OtherName, i+1),
			ratio: ours[i] / theirs[i], ok: true})
	}
	for i := range figures {
		figures[i].want = ""
	}
	printFigures(w, figures)
	cfg.Record.figures(figures)
	if cfg.Record != nil {
		cfg.Record.rec.Other = cfg.OtherName
	}
	return true, cfg.Record.write()
}

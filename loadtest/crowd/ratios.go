package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ratiosConfig is the measurement of the ratio targets, in one run against the same
// API processes, as ratios to GET /healthz so the machine's noise cancels.
type ratiosConfig struct {
	Conns       int           // connections (goroutines with one request in flight each)
	Phase       time.Duration // length of each measured phase
	Buyers      int           // distinct users signed for the purchase phase; it ends early when they run out
	FirstUser   int64
	PurchaseKey bool          // send an Idempotency-Key with every purchase
	Drain       time.Duration // how long to wait for MySQL to hold every accepted order
	Strict      bool          // exit 1 when a target is missed
	Settle      time.Duration // pause after the drain, before the last healthz phase
	Slice       time.Duration // length of one turn when sold out and healthz alternate
	Watch       cpuWatch      // processes whose CPU use each phase reports
	Group       groupConfig   // the group-buy phase after healthz 3 (groups.go)
	Retriers    int           // distinct users who keep retrying the sold-out sale
	// Limited, when set, is an API process with the rate limits on as shipped (on the
	// same Redis and MySQL): the sold-out and purchase loads also run against it, in
	// turns with the same loads on the first (limits off), and their ratios compare.
	Limited *api
	Record  *recorder // the run's record (-series), nil for none
	Work    workWatch // MySQL's and Redis's counters, for the work of one order
	Profile profiler  // CPU profiles of the purchase phase, when its dir is set
}

// The ratio targets, and those with the limits on as shipped.
const (
	wantPurchaseRatio = 0.20
	wantSoldOutRatio  = 0.70
	wantPersistRatio  = 0.90
	wantPurchaseP99   = 25 * time.Millisecond

	wantLimitedPurchaseRatio = 0.25
	wantLimitedSoldOutRatio  = 0.80
	wantLimitedVsOff         = 0.95 // limits on within 5 % of off
)

// figure is a line of the ratios' table: a measured figure, its ratio (-1 for none)
// and its target (want "" for none).
type figure struct {
	name     string
	measured string
	ratio    float64
	want     string
	ok       bool
}

// phase is one measured stretch of load, or several turns of one load added up.
type phase struct {
	name    string
	tally   *tally
	elapsed time.Duration
	cpu     cpuSpan // what the watched processes used meanwhile
	turns   []turn  // when it ran: one stretch, or the turns of a load that took turns
}

// turn is a stretch of time a load ran.
type turn struct {
	start   time.Time
	elapsed time.Duration
}

func (p phase) rate() float64 { return float64(p.tally.total()) / p.elapsed.Seconds() }

func (p phase) rateOf(label string) float64 {
	return float64(p.tally.counts[label]) / p.elapsed.Seconds()
}

func (p phase) print(w io.Writer) {
	p50, p99, worst := p.tally.percentiles()
	fmt.Fprintf(w, "  %-16s %8d req in %5.2fs = %7.0f req/s  p50 %7s  p99 %7s  max %7s  [%s]\n",
		p.name, p.tally.total(), p.elapsed.Seconds(), p.rate(), ms(p50), ms(p99), ms(worst), p.tally.breakdown())
}

// hammer runs conns goroutines, each sending one request at a time through fn, until d
// has passed or fn reports it has nothing left to send. The phase lasts from the first
// request to the last answer.
func hammer(ctx context.Context, name string, conns int, d time.Duration,
	fn func(ctx context.Context, worker int) (answer, bool)) phase {
	tallies := make([]*tally, conns)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := range conns {
		t := newTally()
		tallies[w] = t
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				r, ok := fn(ctx, w)
				if !ok {
					return
				}
				t.add(r)
			}
		})
	}
	wg.Wait()
	p := phase{name: name, tally: newTally(), elapsed: time.Since(start)}
	p.turns = []turn{{start, p.elapsed}}
	for _, t := range tallies {
		p.tally.merge(t)
	}
	return p
}

// alternate runs loads in turns of slice each, for d in all, and returns each load's
// phase (its tallies, time and CPU summed over its turns). Load that comes and goes on
// the machine falls on all alike, which back-to-back phases cannot promise.
func alternate(ctx context.Context, names []string, conns int, d, slice time.Duration, watch cpuWatch,
	fns ...func(ctx context.Context, worker int) (answer, bool)) []phase {
	out := make([]phase, len(names))
	for i, n := range names {
		out[i] = phase{name: n, tally: newTally()}
	}
	if slice <= 0 {
		slice = d / time.Duration(len(names))
	}
	for i := 0; time.Duration(i)*slice < d && ctx.Err() == nil; i++ {
		k := i % len(names)
		before := watch.sample()
		p := hammer(ctx, names[k], conns, slice, fns[k])
		out[k].tally.merge(p.tally)
		out[k].elapsed += p.elapsed
		out[k].turns = append(out[k].turns, p.turns...)
		out[k].cpu.add(watch.span(before, watch.sample()))
	}
	return out
}

// accepted202 is a 202 of the purchase phase: the buyer's index and the body.
type accepted202 struct {
	buyer int
	body  []byte
}

// ledgerOf is the ledger of a purchase phase's 202s: one unit each, buyer i being buyer
// number firstUser+i of a.
func ledgerOf(a *api, got []accepted202, firstUser int64) (*ledger, error) {
	l := newLedger()
	for _, acc := range got {
		var o order
		if err := json.Unmarshal(acc.body, &o); err != nil || o.ID == "" {
			return nil, fmt.Errorf("202 without an order id: %s", acc.body)
		}
		l.record(o.ID, ack{Buyer: a.subject(firstUser + int64(acc.buyer)), Quantity: 1}, true)
	}
	return l, nil
}

// runRatios measures, against the same API processes, in this order:
//
//	sold out   POST .../orders on a sale whose only unit is sold, by Retriers users
//	           cycling (a crowd that keeps retrying), in turns of Slice with healthz 1
//	           (GET /healthz) and, with Limited, with the same load on the API that has
//	           the limits on: Phase each
//	healthz 2  GET /healthz
//	purchase   POST .../orders by distinct users, one unit each, on a sale with 10^9 units;
//	           with Limited, in turns with the same load on it, Phase each
//	drain      orders accepted/s in the purchase phase against orders persisted/s,
//	           persisted/s = accepted orders / (first purchase request -> the poll that
//	           saw MySQL hold every one of them)
//	(settle)   a pause, so MySQL's and Redis's after-work does not weigh on healthz 3
//	healthz 3
//	group seats  buyers open groups of a group-buy sale with plentiful stock and join
//	           the open ones (Group; groups.go), seats taken/s against the purchase
//	           phase's purchases/s; then the groups left open are filled and the sale
//	           audited
//
// and prints the figures and their ratios against the targets. Sold-out answers are
// compared with the healthz turns they alternate with; purchases with the mean of the
// healthz phases just before and just after them (turns would let the worker drain
// during the healthz turns). Either way a machine that gets slower or faster during
// the run (other work on it) moves both sides. It returns whether the audits of the
// purchase sale and of the group sale passed and (with Strict) every target was met.
func runRatios(ctx context.Context, w io.Writer, a *api, db *sql.DB, cfg ratiosConfig) (bool, error) {
	fmt.Fprintf(w, "ratios: %d API instance(s) %v, %d connections, %s phases; this tool: %d CPUs, GOMAXPROCS %d (it shares them with the API)\n",
		len(a.urls), a.urls, cfg.Conns, cfg.Phase, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	tokens, err := a.tokens(cfg.FirstUser, cfg.Buyers)
	if err != nil {
		return false, err
	}
	run := func(name string, d time.Duration, fn func(ctx context.Context, worker int) (answer, bool)) phase {
		before := cfg.Watch.sample()
		p := hammer(ctx, name, cfg.Conns, d, fn)
		p.cpu = cfg.Watch.span(before, cfg.Watch.sample())
		p.print(w)
		if u := cfg.Watch.describe(p.cpu); u != "" {
			fmt.Fprintf(w, "  %-16s cpu in cores: %s\n", "", u)
		}
		cfg.Record.add(p)
		return p
	}
	healthz := func(ctx context.Context, _ int) (answer, bool) {
		return a.do(ctx, http.MethodGet, "/healthz", "", "", nil), true
	}

	hammer(ctx, "warm-up", cfg.Conns, time.Second, healthz) // opens the connections

	// Sold out: a sale whose only unit is gone, hammered by a crowd that retries, in
	// turns with healthz.
	soldID, err := a.createSale(ctx, "ratios sold out", 1, 1)
	if err != nil {
		return false, err
	}
	if r := a.buy(ctx, soldID, tokens[0], "", 1); r.status != http.StatusAccepted {
		return false, fmt.Errorf("buy the only unit of sale %d: %s %s", soldID, r.label(), r.body)
	}
	retriers := min(len(tokens), max(cfg.Retriers, 1))
	soldOutOn := func(a *api) func(ctx context.Context, _ int) (answer, bool) {
		var n atomic.Int64
		return func(ctx context.Context, _ int) (answer, bool) {
			i := int(n.Add(1)-1) % retriers
			return a.buy(ctx, soldID, tokens[i], "", 1), true
		}
	}
	loads := []func(context.Context, int) (answer, bool){soldOutOn(a), healthz}
	names := []string{"sold out", "healthz 1"}
	if cfg.Limited != nil {
		loads, names = append(loads, soldOutOn(cfg.Limited)), append(names, "sold out, limits")
	}
	soldTurns := alternate(ctx, names, cfg.Conns, time.Duration(len(loads))*cfg.Phase, cfg.Slice, cfg.Watch, loads...)
	for _, p := range soldTurns {
		cfg.Record.add(p)
		p.print(w)
		if u := cfg.Watch.describe(p.cpu); u != "" {
			fmt.Fprintf(w, "  %-16s cpu in cores: %s (its turns of %s)\n", "", u, cfg.Slice)
		}
		// What an answer costs each process, this tool too: the ratios to healthz come from
		// both sides of the two cores, the API's and the tool's.
		if u := cfg.Watch.perEvent(p.cpu, p.tally.total()); u != "" {
			fmt.Fprintf(w, "  %-16s cpu per answer: %s\n", "", u)
		}
	}
	soldOut, h1 := soldTurns[0], soldTurns[1]
	h2 := run("healthz 2", cfg.Phase, healthz)

	// Purchases: distinct users, plentiful stock.
	buyID, err := a.createSale(ctx, "ratios purchase", 1_000_000_000, 1)
	if err != nil {
		return false, err
	}
	var next atomic.Int64
	var mu sync.Mutex
	var got []accepted202
	buyOn := func(a *api) func(ctx context.Context, wk int) (answer, bool) {
		return func(ctx context.Context, wk int) (answer, bool) {
			i := int(next.Add(1) - 1)
			if i >= len(tokens) {
				return answer{}, false
			}
			key := ""
			if cfg.PurchaseKey {
				key = "ratios-" + strconv.Itoa(i)
			}
			r := a.buy(ctx, buyID, tokens[i], key, 1)
			if r.status == http.StatusAccepted {
				mu.Lock()
				got = append(got, accepted202{i, r.body})
				mu.Unlock()
			}
			return r, true
		}
	}
	// Each purchase load's CPU per purchase, from its own turns.
	perPurchase := func(p phase) {
		if u := cfg.Watch.perEvent(p.cpu, p.tally.counts["202"]); u != "" {
			fmt.Fprintf(w, "  %-16s cpu per purchase: %s; server side %s\n", "", u,
				cfg.Watch.serverSide(p.cpu, p.tally.counts["202"]))
		}
	}
	var purchase, limitedBuys phase
	// The drain reads MySQL through a connection of its own, whose reads the work per
	// order leaves out.
	drainDB, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer drainDB.Close()
	workBefore, err := cfg.Work.sample(ctx, drainDB)
	if err != nil {
		return false, err
	}
	purchaseTime := cfg.Phase
	if cfg.Limited != nil {
		purchaseTime *= 2
	}
	profiled := cfg.Profile.start(ctx, purchaseTime)
	if cfg.Limited == nil {
		purchase = run("purchase", cfg.Phase, buyOn(a))
		perPurchase(purchase)
	} else {
		turns := alternate(ctx, []string{"purchase", "purchase, limits"}, cfg.Conns, 2*cfg.Phase, cfg.Slice,
			cfg.Watch, buyOn(a), buyOn(cfg.Limited))
		purchase, limitedBuys = turns[0], turns[1]
		for _, p := range turns {
			cfg.Record.add(p)
			p.print(w)
			if u := cfg.Watch.describe(p.cpu); u != "" {
				fmt.Fprintf(w, "  %-16s cpu in cores: %s (its turns of %s)\n", "", u, cfg.Slice)
			}
			perPurchase(p)
		}
	}
	burstEnd := time.Now()
	burst := purchase.elapsed + limitedBuys.elapsed
	if int(next.Load()) >= len(tokens) && burst < cfg.Phase {
		fmt.Fprintf(w, "  (the purchase phase ran out of its %d buyers; raise -buyers)\n", len(tokens))
	}

	// Drain: when does MySQL hold every accepted order?
	l, err := ledgerOf(a, got, cfg.FirstUser)
	if err != nil {
		return false, err
	}
	want := l.acknowledged()
	atBurstEnd, err := countOrders(ctx, drainDB, buyID)
	if err != nil {
		return false, err
	}
	before := cfg.Watch.sample()
	drained, all, err := waitPersisted(ctx, drainDB, buyID, want, 20*time.Millisecond, time.Now().Add(cfg.Drain))
	if err != nil {
		return false, err
	}
	drainSpan := cfg.Watch.span(before, cfg.Watch.sample())
	drainCPU := cfg.Watch.describe(drainSpan)
	workAfter, err := cfg.Work.sample(ctx, drainDB)
	if err != nil {
		return false, err
	}
	start := burstEnd.Add(-burst)
	acceptedRate := float64(len(want)) / burst.Seconds()
	persistedRate := float64(len(want)) / drained.Sub(start).Seconds()
	fmt.Fprintf(w, "  drain            %d orders accepted in %.2fs = %.0f/s; MySQL held %d when the burst ended (%.0f/s)",
		len(want), burst.Seconds(), acceptedRate, atBurstEnd, float64(atBurstEnd)/burst.Seconds())
	if all {
		fmt.Fprintf(w, " and all of them %.2fs later; persisted/s = %d / %.2fs = %.0f/s\n",
			drained.Sub(burstEnd).Seconds(), len(want), drained.Sub(start).Seconds(), persistedRate)
	} else {
		fmt.Fprintf(w, "; still missing orders after waiting %s\n", cfg.Drain)
		persistedRate = 0
	}
	if drainCPU != "" {
		fmt.Fprintf(w, "  %-16s cpu in cores: %s\n", "", drainCPU)
	}
	// The whole cost of an order, the drain's share included: what the watched processes
	// used over the purchase turns and the drain, per order accepted.
	var whole cpuSpan
	for _, p := range []phase{purchase, limitedBuys, {cpu: drainSpan}} {
		if p.cpu.procs != nil {
			whole.add(p.cpu)
		}
	}
	if u := cfg.Watch.perEvent(whole, len(want)); u != "" && len(cfg.Watch.names) > 0 {
		fmt.Fprintf(w, "  %-16s cpu per order, purchase and drain: %s; server side %s\n", "", u,
			cfg.Watch.serverSide(whole, len(want)))
	}
	printWork(w, len(want), workBefore, workAfter)
	profiled(w)
	rep, err := auditSale(ctx, db, buyID, l)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "  audit of sale %d: oversold %d, lost %d, refused %d, duplicated %d, over limit %d, mismatched %d\n",
		buyID, rep.Oversold, len(rep.Lost), len(rep.Refused), rep.Duplicated(), len(rep.OverLimit), len(rep.Mismatched))

	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-time.After(cfg.Settle):
	}
	h3 := run("healthz 3", cfg.Phase, healthz)

	seats := groupResult{ok: true}
	if cfg.Group.Size > 0 {
		if seats, err = runGroups(ctx, w, a, db, cfg, run); err != nil {
			return false, err
		}
	}

	soldYard, buyYard := h1.rate(), (h2.rate()+h3.rate())/2
	_, p99, _ := purchase.tally.percentiles()
	buyRatio := purchase.rateOf("202") / buyYard
	soldRatio := soldOut.rateOf("409 sold_out") / soldYard
	persistRatio := persistedRate / acceptedRate
	results := []figure{
		{"successful purchases/s vs healthz", fmt.Sprintf("%.0f/s", purchase.rateOf("202")),
			buyRatio, fmt.Sprintf(">= %.2f", wantPurchaseRatio), buyRatio >= wantPurchaseRatio},
		{"sold-out answers/s vs healthz", fmt.Sprintf("%.0f/s", soldOut.rateOf("409 sold_out")),
			soldRatio, fmt.Sprintf(">= %.2f", wantSoldOutRatio), soldRatio >= wantSoldOutRatio},
		{"orders persisted/s vs accepted/s", fmt.Sprintf("%.0f/s", persistedRate),
			persistRatio, fmt.Sprintf(">= %.2f", wantPersistRatio), persistRatio >= wantPersistRatio},
		{"purchase p99", ms(p99), -1, "<= " + ms(wantPurchaseP99), p99 <= wantPurchaseP99},
	}
	if cfg.Limited != nil {
		onBuy, onSold := limitedBuys.rateOf("202")/buyYard, soldTurns[2].rateOf("409 sold_out")/soldYard
		results = append(results,
			figure{"purchases/s, limits on, vs healthz", fmt.Sprintf("%.0f/s", limitedBuys.rateOf("202")),
				onBuy, fmt.Sprintf(">= %.2f", wantLimitedPurchaseRatio), onBuy >= wantLimitedPurchaseRatio},
			figure{"sold-out answers/s, limits on", fmt.Sprintf("%.0f/s", soldTurns[2].rateOf("409 sold_out")),
				onSold, fmt.Sprintf(">= %.2f", wantLimitedSoldOutRatio), onSold >= wantLimitedSoldOutRatio},
			figure{"purchases/s, limits on vs off", "", onBuy / buyRatio,
				fmt.Sprintf(">= %.2f", wantLimitedVsOff), onBuy/buyRatio >= wantLimitedVsOff},
			figure{"sold-out answers/s, limits on vs off", "", onSold / soldRatio,
				fmt.Sprintf(">= %.2f", wantLimitedVsOff), onSold/soldRatio >= wantLimitedVsOff})
	}
	if cfg.Group.Size > 0 { // no target: how a seat compares with a purchase
		results = append(results, figure{"group seats/s vs purchases/s", fmt.Sprintf("%.0f/s", seats.seatRate),
			seats.seatRate / purchase.rateOf("202"), "", true})
	}
	fmt.Fprintf(w, "  healthz yardsticks: %.0f req/s for sold out (healthz 1, its turns), %.0f req/s for purchases (mean of healthz 2 and 3)\n",
		soldYard, buyYard)
	met := printFigures(w, results)
	cfg.Record.figures(results)
	if err := cfg.Record.write(); err != nil {
		return false, err
	}
	if !rep.OK() {
		fmt.Fprintln(w, "ratios: FAIL (the purchase sale's audit found problems)")
		return false, nil
	}
	if !seats.ok {
		fmt.Fprintln(w, "ratios: FAIL (the group sale's audit found problems)")
		return false, nil
	}
	if !met && cfg.Strict {
		fmt.Fprintln(w, "ratios: FAIL (targets missed, -strict)")
		return false, nil
	}
	return true, nil
}

// printFigures prints the table of figures and reports whether every target was met.
func printFigures(w io.Writer, results []figure) bool {
	fmt.Fprintf(w, "  %-36s %10s %7s %9s\n", "target", "measured", "ratio", "want")
	met := true
	for _, r := range results {
		ratio, verdict := "", "met"
		if r.ratio >= 0 {
			ratio = fmt.Sprintf("%.3f", r.ratio)
		}
		if r.want == "" {
			verdict = "(no target)"
		}
		if !r.ok {
			verdict, met = "MISSED", false
		}
		fmt.Fprintf(w, "  %-36s %10s %7s %9s  %s\n", r.name, r.measured, ratio, r.want, verdict)
	}
	return met
}

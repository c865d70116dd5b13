package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// overloadConfig is the crowd past capacity: what one API serves, measured closed-loop,
// then an open-loop crowd (constant arrival rate, whatever the answers take) at Times
// that rate, with vegeta.
type overloadConfig struct {
	Conns     int           // connections of the closed-loop capacity phase
	Phase     time.Duration // length of the capacity phase
	Attack    time.Duration // length of the open-loop crowd
	Times     float64       // the crowd's arrival rate, in multiples of the capacity
	Buyers    int           // distinct users, each buying once
	FirstUser int64
	Timeout   time.Duration // of one request of the crowd
	MaxOpen   int           // most requests of the crowd open at once
	Drain     time.Duration // longest wait for MySQL to hold every accepted order
	RSSPid    int           // the API process whose memory is reported (0: none)
	Strict    bool          // exit 1 when a target is missed
	Watch     cpuWatch      // processes whose CPU use the crowd reports
}

// Targets of the crowd past capacity.
const (
	wantOverloadServed = 0.90                   // 202/s during the crowd, vs the capacity
	wantOverloadP99    = 250 * time.Millisecond // of all answers
	wantOverloadRSS    = 300 << 20              // bytes
)

func runOverload(ctx context.Context, w io.Writer, a *api, db *sql.DB, cfg overloadConfig) (bool, error) {
	tokens, err := a.tokens(cfg.FirstUser, cfg.Buyers)
	if err != nil {
		return false, err
	}
	saleID, err := a.createSale(ctx, "overload", 1_000_000_000, 1)
	if err != nil {
		return false, err
	}
	var next atomic.Int64
	nextToken := func() (string, bool) {
		i := int(next.Add(1) - 1)
		return tokens[min(i, len(tokens)-1)], i < len(tokens)
	}
	healthz := func(ctx context.Context, _ int) (answer, bool) {
		return a.do(ctx, http.MethodGet, "/healthz", "", "", nil), true
	}
	hammer(ctx, "warm-up", cfg.Conns, time.Second, healthz)

	// Capacity: purchases/s of a closed loop of cfg.Conns buyers.
	l := newLedger()
	record := func(body []byte) error {
		var o order
		if err := json.Unmarshal(body, &o); err != nil || o.ID == "" {
			return fmt.Errorf("202 without an order id: %s", body)
		}
		l.record(o.ID, ack{Buyer: o.Buyer, Quantity: 1}, true)
		return nil
	}
	var bad atomic.Value
	capBefore := cfg.Watch.sample()
	capacity := hammer(ctx, "capacity", cfg.Conns, cfg.Phase, func(ctx context.Context, _ int) (answer, bool) {
		tok, ok := nextToken()
		if !ok {
			return answer{}, false
		}
		r := a.buy(ctx, saleID, tok, "", 1)
		if r.status == http.StatusAccepted {
			if err := record(r.body); err != nil {
				bad.Store(err)
			}
		}
		return r, true
	})
	capCPU := cfg.Watch.span(capBefore, cfg.Watch.sample())
	if err, _ := bad.Load().(error); err != nil {
		return false, err
	}
	fmt.Fprintf(w, "overload: sale %d, one API at %s\n", saleID, a.urls[0])
	capacity.print(w)
	if u := cfg.Watch.describe(capCPU); u != "" {
		fmt.Fprintf(w, "  %-16s cpu in cores: %s\n", "", u)
	}
	served := capacity.rateOf("202")
	if served <= 0 {
		return false, fmt.Errorf("the capacity phase got no 202: %s", capacity.tally.breakdown())
	}

	// The crowd: open loop at Times the capacity.
	rate := int(cfg.Times * served)
	if need := int(float64(rate)*cfg.Attack.Seconds()) + int(next.Load()); need > len(tokens) {
		more, err := a.tokens(cfg.FirstUser+int64(len(tokens)), need-len(tokens)) // a faster API than -buyers foresaw
		if err != nil {
			return false, err
		}
		tokens = append(tokens, more...)
	}
	targeter := purchases(a.urls[0], saleID, func() string { tok, _ := nextToken(); return tok })
	// At most MaxOpen requests open at once (a worker each, a connection each): past that
	// the crowd cannot keep its rate, and the line says how far it fell short.
	attacker := vegeta.NewAttacker(vegeta.Timeout(cfg.Timeout), vegeta.KeepAlive(true), vegeta.HTTP2(false),
		vegeta.Connections(cfg.MaxOpen), vegeta.MaxConnections(cfg.MaxOpen), vegeta.MaxWorkers(uint64(cfg.MaxOpen)))
	rss := newRSSWatch(cfg.RSSPid)
	stopRSS := rss.run(100 * time.Millisecond)
	var m vegeta.Metrics
	codes := map[string]int{}
	connErrors := 0
	var firstErr string
	start, before := time.Now(), cfg.Watch.sample()
	for res := range attacker.Attack(targeter, vegeta.Rate{Freq: rate, Per: time.Second}, cfg.Attack, "overload") {
		m.Add(res)
		switch {
		case res.Code == 0:
			connErrors++
			if firstErr == "" {
				firstErr = res.Error
			}
			codes["error"]++
		case res.Code == http.StatusAccepted:
			codes["202"]++
			if err := record(res.Body); err != nil {
				return false, err
			}
		default:
			codes[strconv.Itoa(int(res.Code))+" "+errorCode(res.Body)]++
		}
	}
	elapsed, crowdCPU := time.Since(start), cfg.Watch.span(before, cfg.Watch.sample())
	cpu := cfg.Watch.describe(crowdCPU)
	m.Close()
	stopRSS()
	accepted := float64(codes["202"]) / elapsed.Seconds()
	fmt.Fprintf(w, "  %-16s %8d req in %5.2fs offered at %d/s (%.1f x capacity): %.0f answers/s  p50 %7s  p99 %7s  max %7s  [%s]\n",
		"crowd", m.Requests, elapsed.Seconds(), rate, cfg.Times, float64(m.Requests)/elapsed.Seconds(),
		ms(m.Latencies.P50), ms(m.Latencies.P99), ms(m.Latencies.Max), breakdownOf(codes))
	if cpu != "" {
		fmt.Fprintf(w, "  %-16s cpu in cores: %s\n", "", cpu)
	}
	if firstErr != "" {
		fmt.Fprintf(w, "  %-16s first connection error: %s\n", "", firstErr)
	}
	if most, ok := keepable(capCPU, crowdCPU); ok {
		fmt.Fprintf(w, "  %-16s this tool took %.2f cores in the capacity phase and %.2f in the crowd: with what it left, "+
			"purchases could keep at most %.2f of the capacity, were refusals free\n",
			"", capCPU.cores(capCPU.self), crowdCPU.cores(crowdCPU.self), most)
	}
	peak, hwm := rss.peak(), rss.hwm()
	if cfg.RSSPid > 0 {
		fmt.Fprintf(w, "  %-16s API memory: RSS at most %.0f MB during the crowd (sampled every 100ms), high-water mark %.0f MB\n",
			"", float64(peak)/(1<<20), float64(hwm)/(1<<20))
	}

	// Nothing acknowledged is lost: MySQL ends up with every 202, once.
	want := l.acknowledged()
	_, all, err := waitPersisted(ctx, db, saleID, want, 50*time.Millisecond, time.Now().Add(cfg.Drain))
	if err != nil {
		return false, err
	}
	rep, err := auditSale(ctx, db, saleID, l)
	if err != nil {
		return false, err
	}
	// A purchase whose answer timed out may have been made: its order is in MySQL with no
	// 202 naming it (each buyer buys once, so at most one per timeout).
	fmt.Fprintf(w, "  audit of sale %d: %d orders acknowledged, all in MySQL %v; oversold %d, lost %d, over limit %d, "+
		"duplicated %d, orders of unanswered purchases %d (of %d unanswered)\n",
		saleID, len(want), all, rep.Oversold, len(rep.Lost), len(rep.OverLimit),
		len(rep.KeyDuplicates)+rep.Repeated, len(rep.Phantom), connErrors)
	auditOK := all && rep.Oversold == 0 && len(rep.Lost) == 0 && len(rep.OverLimit) == 0 && len(rep.Refused) == 0 &&
		len(rep.KeyDuplicates) == 0 && rep.Repeated == 0 && len(rep.Mismatched) == 0 && len(rep.Phantom) <= connErrors

	results := []figure{
		{"202/s during the crowd vs capacity", fmt.Sprintf("%.0f/s", accepted), accepted / served,
			fmt.Sprintf(">= %.2f", wantOverloadServed), accepted/served >= wantOverloadServed},
		{"p99 of all answers", ms(m.Latencies.P99), -1, "<= " + ms(wantOverloadP99), m.Latencies.P99 <= wantOverloadP99},
		{"connection errors", strconv.Itoa(connErrors), -1, "0", connErrors == 0},
	}
	if cfg.RSSPid > 0 {
		results = append(results, figure{"API RSS during the crowd", fmt.Sprintf("%.0fMB", float64(peak)/(1<<20)), -1,
			fmt.Sprintf("<= %dMB", wantOverloadRSS>>20), peak <= wantOverloadRSS})
	}
	met := printFigures(w, results)
	if !auditOK {
		fmt.Fprintln(w, "overload: FAIL (the audit found problems)")
		return false, nil
	}
	if !met && cfg.Strict {
		fmt.Fprintln(w, "overload: FAIL (targets missed, -strict)")
		return false, nil
	}
	return true, nil
}

// purchases is a vegeta targeter of purchases of one unit of a sale, each with the
// token next gives.
func purchases(base string, saleID int64, next func() string) vegeta.Targeter {
	url := fmt.Sprintf("%s/api/v1/activities/%d/orders", base, saleID)
	return func(t *vegeta.Target) error {
		t.Method, t.URL, t.Body = http.MethodPost, url, []byte(`{"quantity":1}`)
		t.Header = http.Header{"Authorization": {"Bearer " + next()}, "Content-Type": {"application/json"}}
		return nil
	}
}

// breakdownOf lists answer counts, the most frequent first.
func breakdownOf(counts map[string]int) string {
	t := newTally()
	for k, n := range counts {
		t.counts[k] = n
	}
	return t.breakdown()
}

// rssWatch samples a process's resident memory from /proc.
type rssWatch struct {
	pid int
	max atomic.Int64
}

func newRSSWatch(pid int) *rssWatch { return &rssWatch{pid: pid} }

// run samples every interval until the returned stop is called.
func (r *rssWatch) run(interval time.Duration) (stop func()) {
	if r.pid <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if v := procStatus(r.pid, "VmRSS"); v > r.max.Load() {
				r.max.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

func (r *rssWatch) peak() int64 { return r.max.Load() }
func (r *rssWatch) hwm() int64  { return procStatus(r.pid, "VmHWM") }

// procStatus reads a "kB" field of /proc/<pid>/status, in bytes; 0 if it cannot.
func procStatus(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// keepable is the most of the capacity purchases could keep during the crowd were
// refusals free, given this tool's CPU: the capacity phase spent busy − tool cores on
// its purchases, and the crowd leaves at most all − tool cores to the service. It shares
// the machine's cores with what it measures, and offering Times the capacity costs it
// about Times as much. false when the spans cannot say (no /proc, nothing busy).
func keepable(capacity, crowd cpuSpan) (float64, bool) {
	if !capacity.ok || !crowd.ok || capacity.wall <= 0 || crowd.wall <= 0 {
		return 0, false
	}
	served := capacity.cores(capacity.busy - capacity.self)
	if served <= 0 {
		return 0, false
	}
	left := crowd.cores(crowd.all - crowd.self)
	return min(1, max(0, left/served)), true
}

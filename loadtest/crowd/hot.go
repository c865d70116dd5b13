package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// hotConfig is one hot sale bought with its stock in K buckets, for several K in turns
// against the same processes: how much of the sale's script work and CPU
// each Redis node takes, purchases/s and p99.
type hotConfig struct {
	Conns     int
	Turn      time.Duration // one turn of one sale's load
	Rounds    int           // turns per sale
	Buckets   []int         // the sales' stock_buckets
	Buyers    int
	FirstUser int64
	Drain     time.Duration
	Watch     cpuWatch
	Nodes     []redisNode // the Redis nodes whose commands each turn counts
}

// redisNode is a Redis server the tool reads INFO from, named as in Watch.
type redisNode struct {
	name string
	rdb  *redis.Client
	role string
}

// parseNodes reads "redis1=127.0.0.1:7001,...".
func parseNodes(ctx context.Context, s string) ([]redisNode, error) {
	var out []redisNode
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, addr, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("-nodes: want name=host:port, got %q", part)
		}
		n := redisNode{name: name, rdb: redis.NewClient(&redis.Options{Addr: addr})}
		info, err := n.rdb.Info(ctx, "replication").Result()
		if err != nil {
			return nil, fmt.Errorf("-nodes: %s: %w", addr, err)
		}
		n.role = "replica"
		if strings.Contains(info, "role:master") {
			n.role = "master"
		}
		out = append(out, n)
	}
	return out, nil
}

// scriptWork is what a node's script commands (evalsha and eval) did: calls and µs.
type scriptWork struct{ calls, usec int64 }

// scripts reads each node's script calls and time so far (INFO commandstats).
func scripts(ctx context.Context, nodes []redisNode) []scriptWork {
	out := make([]scriptWork, len(nodes))
	for i, n := range nodes {
		info, err := n.rdb.Info(ctx, "commandstats").Result()
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(info, "\n") {
			if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
				continue
			}
			for field := range strings.SplitSeq(strings.TrimSpace(line[strings.Index(line, ":")+1:]), ",") {
				k, v, _ := strings.Cut(field, "=")
				x, _ := strconv.ParseInt(v, 10, 64)
				switch k {
				case "calls":
					out[i].calls += x
				case "usec":
					out[i].usec += x
				}
			}
		}
	}
	return out
}

// hotSale is one of the sales and what its turns added up to.
type hotSale struct {
	buckets int
	id      int64
	phase   phase
	work    []scriptWork
	mu      sync.Mutex
	got     []accepted202
}

// runHot creates one sale per K of Buckets (10^9 units, a unit per buyer), then buys
// them in turns of Turn, Rounds each, by distinct buyers, and prints for each sale
// purchases/s, p99, the CPU per purchase of each watched process and each node's share
// of the script calls and of the script time; then waits for MySQL to hold every
// accepted order and audits each sale.
func runHot(ctx context.Context, w io.Writer, a *api, db *sql.DB, cfg hotConfig) (bool, error) {
	fmt.Fprintf(w, "hot: %d API instance(s) %v, %d connections, stock_buckets %v in turns of %s, %d each\n",
		len(a.urls), a.urls, cfg.Conns, cfg.Buckets, cfg.Turn, cfg.Rounds)
	tokens, err := a.tokens(cfg.FirstUser, cfg.Buyers)
	if err != nil {
		return false, err
	}
	sales := make([]*hotSale, len(cfg.Buckets))
	for i, k := range cfg.Buckets {
		id, err := a.create(ctx, saleSpec{Name: fmt.Sprintf("hot sale, %d buckets", k), Stock: 1_000_000_000,
			PerUserLimit: 1, StockBuckets: k})
		if err != nil {
			return false, err
		}
		sales[i] = &hotSale{buckets: k, id: id, phase: phase{name: fmt.Sprintf("K=%d", k), tally: newTally()},
			work: make([]scriptWork, len(cfg.Nodes))}
	}
	var next atomic.Int64
	buyOn := func(s *hotSale) func(ctx context.Context, _ int) (answer, bool) {
		return func(ctx context.Context, _ int) (answer, bool) {
			i := int(next.Add(1) - 1)
			if i >= len(tokens) {
				return answer{}, false
			}
			r := a.buy(ctx, s.id, tokens[i], "", 1)
			if r.status == http.StatusAccepted {
				s.mu.Lock()
				s.got = append(s.got, accepted202{i, r.body})
				s.mu.Unlock()
			}
			return r, true
		}
	}
	hammer(ctx, "warm-up", cfg.Conns, time.Second, func(ctx context.Context, _ int) (answer, bool) {
		return a.do(ctx, http.MethodGet, "/healthz", "", "", nil), true
	})
	for range cfg.Rounds {
		for _, s := range sales {
			before, work := cfg.Watch.sample(), scripts(ctx, cfg.Nodes)
			p := hammer(ctx, s.phase.name, cfg.Conns, cfg.Turn, buyOn(s))
			after := scripts(ctx, cfg.Nodes)
			s.phase.tally.merge(p.tally)
			s.phase.elapsed += p.elapsed
			s.phase.cpu.add(cfg.Watch.span(before, cfg.Watch.sample()))
			for i := range after {
				s.work[i].calls += after[i].calls - work[i].calls
				s.work[i].usec += after[i].usec - work[i].usec
			}
		}
	}
	if int(next.Load()) >= len(tokens) {
		fmt.Fprintf(w, "  (the buyers ran out: raise -buyers)\n")
	}
	ok := true
	for _, s := range sales {
		bought := s.phase.tally.counts["202"]
		s.phase.print(w)
		if u := cfg.Watch.describe(s.phase.cpu); u != "" {
			fmt.Fprintf(w, "  %-16s cpu in cores: %s\n", "", u)
		}
		if u := cfg.Watch.perEvent(s.phase.cpu, bought); u != "" {
			fmt.Fprintf(w, "  %-16s cpu per purchase: %s\n", "", u)
		}
		var calls, usec int64
		for _, x := range s.work {
			calls, usec = calls+x.calls, usec+x.usec
		}
		var parts []string
		for i, n := range cfg.Nodes {
			if n.role != "master" {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %s calls, %s time, %.1f µs/purchase", n.name,
				share(s.work[i].calls, calls), share(s.work[i].usec, usec), float64(s.work[i].usec)/float64(max(1, bought))))
		}
		sort.Strings(parts)
		if len(parts) > 0 {
			fmt.Fprintf(w, "  %-16s scripts by master: %s\n", "", strings.Join(parts, "; "))
		}
	}
	for _, s := range sales {
		l := newLedger()
		for _, acc := range s.got {
			var o order
			if err := json.Unmarshal(acc.body, &o); err != nil || o.ID == "" {
				return false, fmt.Errorf("202 without an order id: %s", acc.body)
			}
			l.record(o.ID, ack{Buyer: a.subject(cfg.FirstUser + int64(acc.buyer)), Quantity: 1}, true)
		}
		if _, _, err := waitPersisted(ctx, db, s.id, l.acknowledged(), 50*time.Millisecond, time.Now().Add(cfg.Drain)); err != nil {
			return false, err
		}
		rep, err := auditSale(ctx, db, s.id, l)
		if err != nil {
			return false, err
		}
		fmt.Fprintf(w, "  audit of sale %d (K=%d): oversold %d, lost %d, refused %d, duplicated %d, over limit %d, mismatched %d\n",
			s.id, s.buckets, rep.Oversold, len(rep.Lost), len(rep.Refused), rep.Duplicated(), len(rep.OverLimit), len(rep.Mismatched))
		ok = ok && rep.OK()
	}
	if !ok {
		fmt.Fprintln(w, "hot: FAIL (an audit found problems)")
	}
	return ok, nil
}

func share(part, whole int64) string {
	if whole <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f %%", 100*float64(part)/float64(whole))
}

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// waitlistConfig is the waitlist phase: a sale bought out, a waitlist longer than its
// stock, every unit returned by its buyer's cancel while a crowd retries the sold-out
// sale.
type waitlistConfig struct {
	Stock     int64 // units of the sale, each bought by one buyer, then cancelled
	Waiting   int   // buyers who join the waitlist (more than Stock: some stay waiting)
	Retriers  int   // connections of the crowd retrying the sold-out sale meanwhile
	Conns     int   // requests at once to buy, join and cancel
	FirstUser int64
	Drain     time.Duration
}

// waitlistAnswer is an entry as the API answers it.
type waitlistAnswer struct {
	Position int    `json:"position"`
	Status   string `json:"status"`
	OrderID  string `json:"order_id"`
}

// runWaitlist creates a sale of Stock units limited to 1 per buyer, sells it out to
// Stock buyers, lets Waiting others join its waitlist (each answered its position),
// then cancels every order while Retriers connections keep buying the sold-out sale. It
// audits what the contract promises: every returned unit offered once, to the entries
// first in line (positions 1..Stock), as an order marked offered that MySQL holds; the
// others still waiting; none of the units sold to the crowd; nothing past the stock or
// the limit. It returns whether the audit passed.
func runWaitlist(ctx context.Context, w io.Writer, a *api, db *sql.DB, cfg waitlistConfig) (bool, error) {
	id, err := a.create(ctx, saleSpec{Name: "crowd waitlist", Stock: cfg.Stock, PerUserLimit: 1})
	if err != nil {
		return false, err
	}
	buyers, err := a.tokens(cfg.FirstUser, int(cfg.Stock))
	if err != nil {
		return false, err
	}
	waiting, err := a.tokens(cfg.FirstUser+cfg.Stock, cfg.Waiting)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "waitlist: sale %d of %d units bought out, %d buyers on its waitlist, every unit returned while %d connections retry the sold-out sale\n",
		id, cfg.Stock, cfg.Waiting, cfg.Retriers)
	// each runs f(i) for i in [0, n) on cfg.Conns connections.
	each := func(n int, f func(i int)) {
		next := atomic.Int64{}
		var wg sync.WaitGroup
		for range max(1, cfg.Conns) {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
					f(i)
				}
			})
		}
		wg.Wait()
	}
	orders := make([]string, cfg.Stock)
	var failures atomic.Int64
	each(int(cfg.Stock), func(i int) {
		r := a.buy(ctx, id, buyers[i], fmt.Sprintf("w%d", i), 1)
		var o order
		if r.status != http.StatusAccepted || json.Unmarshal(r.body, &o) != nil {
			failures.Add(1)
			return
		}
		orders[i] = o.ID
	})
	if failures.Load() > 0 {
		return false, fmt.Errorf("waitlist: %d of %d purchases to sell the sale out failed", failures.Load(), cfg.Stock)
	}
	want := map[string]bool{}
	for _, o := range orders {
		want[o] = true
	}
	if _, all, err := waitPersisted(ctx, db, id, want, 20*time.Millisecond, time.Now().Add(cfg.Drain)); err != nil || !all {
		return false, fmt.Errorf("waitlist: the sale's orders not in MySQL: %v", err)
	}
	path := "/api/v1/activities/" + strconv.FormatInt(id, 10) + "/waitlist"
	position := make([]int, cfg.Waiting)
	each(cfg.Waiting, func(i int) {
		r := a.do(ctx, http.MethodPost, path, waiting[i], "", []byte(`{"quantity":1}`))
		var e waitlistAnswer
		if r.status != http.StatusCreated || json.Unmarshal(r.body, &e) != nil {
			failures.Add(1)
			return
		}
		position[i] = e.Position
	})
	if failures.Load() > 0 {
		return false, fmt.Errorf("waitlist: %d of %d joins failed", failures.Load(), cfg.Waiting)
	}

	// The crowd retries the sold-out sale while every order is cancelled.
	crowdCtx, stop := context.WithCancel(ctx)
	crowd := newTally()
	var crowdMu sync.Mutex
	var wg sync.WaitGroup
	retriers, err := a.tokens(cfg.FirstUser+cfg.Stock+int64(cfg.Waiting), cfg.Retriers)
	if err != nil {
		stop()
		return false, err
	}
	for i := range cfg.Retriers {
		wg.Go(func() {
			for crowdCtx.Err() == nil {
				r := a.buy(crowdCtx, id, retriers[i], "", 1)
				if crowdCtx.Err() != nil {
					return
				}
				crowdMu.Lock()
				crowd.add(r)
				crowdMu.Unlock()
			}
		})
	}
	start := time.Now()
	each(int(cfg.Stock), func(i int) {
		r := a.do(ctx, http.MethodPost, "/api/v1/orders/"+orders[i]+"/cancel", buyers[i], "", nil)
		if r.status != http.StatusOK {
			failures.Add(1)
		}
	})
	// Every entry first in line reads offered, its order in MySQL.
	entries := make([]waitlistAnswer, cfg.Waiting)
	offered := map[string]bool{}
	deadline := time.Now().Add(cfg.Drain)
	for {
		offered = map[string]bool{}
		each(cfg.Waiting, func(i int) {
			r := a.do(ctx, http.MethodGet, path, waiting[i], "", nil)
			_ = json.Unmarshal(r.body, &entries[i])
		})
		for _, e := range entries {
			if e.Status == "offered" {
				offered[e.OrderID] = true
			}
		}
		if int64(len(offered)) >= cfg.Stock || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	took := time.Since(start)
	_, inMySQL, err := waitPersisted(ctx, db, id, offered, 20*time.Millisecond, time.Now().Add(cfg.Drain))
	stop()
	wg.Wait()
	if err != nil {
		return false, err
	}

	var offeredRows, held int64
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(CASE WHEN status IN ('created', 'paid') THEN quantity END), 0) "+
		"FROM orders WHERE activity_id = ? AND offered", id).Scan(&offeredRows, &held); err != nil {
		return false, fmt.Errorf("waitlist: %w", err)
	}
	var heldAll, overLimit int64
	if err := db.QueryRowContext(ctx, "SELECT COALESCE(SUM(quantity), 0) FROM orders WHERE activity_id = ? AND status IN ('queued', 'created', 'paid')",
		id).Scan(&heldAll); err != nil {
		return false, fmt.Errorf("waitlist: %w", err)
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT buyer FROM orders WHERE activity_id = ? AND status IN ('created', 'paid') "+
		"GROUP BY buyer HAVING SUM(quantity) > 1) o", id).Scan(&overLimit); err != nil {
		return false, fmt.Errorf("waitlist: %w", err)
	}
	outOfLine := 0 // an offer to an entry behind one still waiting
	for i, e := range entries {
		if (e.Status == "offered") != (position[i] <= int(cfg.Stock)) {
			outOfLine++
		}
	}
	won := crowd.counts["202"]
	fmt.Fprintf(w, "  %d units returned by cancels: %d offered (%d orders marked offered in MySQL, all there: %v) in %.2fs; crowd answers while they came back: %s\n",
		cfg.Stock, len(offered), offeredRows, inMySQL, took.Seconds(), crowd.breakdown())
	fmt.Fprintf(w, "  offered out of line %d, units to the crowd %d, cancels failed %d, units held %d of %d, buyers over the limit %d\n",
		outOfLine, won, failures.Load(), heldAll, cfg.Stock, overLimit)
	ok := int64(len(offered)) == cfg.Stock && offeredRows == cfg.Stock && held == cfg.Stock && inMySQL &&
		outOfLine == 0 && won == 0 && failures.Load() == 0 && heldAll <= cfg.Stock && overLimit == 0
	if ok {
		fmt.Fprintln(w, "waitlist: PASS (every returned unit offered once, in line, none on open sale)")
	} else {
		fmt.Fprintln(w, "waitlist: FAIL")
	}
	return ok, nil
}

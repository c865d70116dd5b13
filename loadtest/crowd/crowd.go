package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// crowdConfig is the audit scenario: many users, several purchases each, small stock.
type crowdConfig struct {
	Users     int     // distinct buyers
	Attempts  int     // purchases each buyer makes
	Conns     int     // buyers served at once (each may have two requests in flight)
	Stock     int64   // units of the sale
	Limit     int     // per-user limit
	MaxQty    int     // each purchase asks for 1..MaxQty units
	Together  float64 // share of buyers whose first two purchases are sent at the same time
	Replay    float64 // share of purchases with a key that are sent again with the same key
	NoKey     float64 // share of purchases without an Idempotency-Key
	FirstUser int64   // number of the first buyer (its user id, or the source of its subject)
	Variants  int     // 0: a plain sale; else a sale of that many variants, the stock split over them, each purchase naming one
	Seed      uint64
	Drain     time.Duration // how long to wait for MySQL to hold every accepted order
}

// buyer runs one user's purchases and writes what the API answered into a ledger.
type buyer struct {
	api      *api
	activity int64
	ledger   *ledger
	nonce    string

	mu    sync.Mutex
	tally *tally // every purchase request
}

func (b *buyer) note(r answer) {
	b.mu.Lock()
	b.tally.add(r)
	b.mu.Unlock()
}

// purchase sends one purchase and records its outcome. A purchase with a key that got
// no answer (or 429 busy while an unanswered twin may hold the lock) is sent again
// with the same key, so its outcome is always known; one without a key is counted
// as unanswered.
func (b *buyer) purchase(ctx context.Context, who string, token, key string, qty int, variant string) answer {
	var r answer
	for try := 0; ; try++ {
		r = b.api.buyVariant(ctx, b.activity, token, key, qty, variant)
		b.note(r)
		again := r.err != nil || (try > 0 && r.status == http.StatusTooManyRequests)
		if !again || key == "" || try == 4 || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	a := ack{Buyer: who, Quantity: int64(qty), Key: key, Variant: variant}
	switch {
	case r.err != nil:
		b.ledger.noteUnanswered()
	case r.status == http.StatusAccepted || r.status == http.StatusOK:
		var o order
		if err := json.Unmarshal(r.body, &o); err != nil || o.ID == "" {
			b.ledger.noteUnanswered() // an answer that names no order tells nothing
			return r
		}
		b.ledger.record(o.ID, a, r.status == http.StatusAccepted)
	}
	return r
}

// both sends two purchases at the same time.
func (b *buyer) both(ctx context.Context, f, g func()) {
	var wg sync.WaitGroup
	wg.Go(f)
	wg.Go(g)
	wg.Wait()
}

// run is one user's script: Attempts purchases of 1..MaxQty units (each of a variant at
// random in a sale of variants); the first two at once for a Together share of users; a
// Replay share of keyed purchases sent again with the same key and body, half of them
// after the answer and half at the same time as the first; and one key in ten reused
// with another quantity.
func (b *buyer) run(ctx context.Context, cfg crowdConfig, rng *rand.Rand, user int64, token string) {
	who := b.api.subject(user)
	key := func(i int) string {
		if rng.Float64() < cfg.NoKey {
			return ""
		}
		return fmt.Sprintf("%s-u%d-a%d", b.nonce, user, i)
	}
	qty := func() int { return 1 + rng.IntN(cfg.MaxQty) }
	variant := func() string {
		if cfg.Variants == 0 {
			return ""
		}
		return fmt.Sprintf("V%d", rng.IntN(cfg.Variants))
	}
	for i := 0; i < cfg.Attempts; i++ {
		k, q, v := key(i), qty(), variant()
		if i == 0 && cfg.Attempts > 1 && rng.Float64() < cfg.Together {
			k2, q2, v2 := key(1), qty(), variant()
			b.both(ctx, func() { b.purchase(ctx, who, token, k, q, v) },
				func() { b.purchase(ctx, who, token, k2, q2, v2) })
			i++
			continue
		}
		if k == "" || rng.Float64() >= cfg.Replay {
			b.purchase(ctx, who, token, k, q, v)
		} else if rng.IntN(2) == 0 {
			b.purchase(ctx, who, token, k, q, v)
			b.purchase(ctx, who, token, k, q, v) // a client retrying after the answer
		} else {
			b.both(ctx, func() { b.purchase(ctx, who, token, k, q, v) }, // a double tap
				func() { b.purchase(ctx, who, token, k, q, v) })
		}
		if k != "" && cfg.MaxQty > 1 && rng.IntN(10) == 0 {
			b.purchase(ctx, who, token, k, q%cfg.MaxQty+1, v) // same key, other body: 422
		}
	}
}

// expected are the answers a correct API may give the crowd.
var expected = map[string]bool{"202": true, "200": true, "409 sold_out": true,
	"409 limit_exceeded": true, "429 busy": true, "422 idempotency_key_reused": true}

// runAudit creates a sale, lets the crowd buy, waits for MySQL to hold every accepted
// order and audits it. It returns whether the audit passed.
func runAudit(ctx context.Context, w io.Writer, a *api, db *sql.DB, cfg crowdConfig) (bool, error) {
	if cfg.MaxQty > cfg.Limit {
		return false, fmt.Errorf("-max-qty %d is above -limit %d", cfg.MaxQty, cfg.Limit)
	}
	spec := saleSpec{Name: "crowd audit", Stock: cfg.Stock, PerUserLimit: cfg.Limit}
	if cfg.Variants > 0 {
		spec.Stock, spec.Variants = 0, variantSpecs(cfg.Stock, cfg.Variants)
	}
	id, err := a.create(ctx, spec)
	if err != nil {
		return false, err
	}
	tokens, err := a.tokens(cfg.FirstUser, cfg.Users)
	if err != nil {
		return false, err
	}
	variants := ""
	if cfg.Variants > 0 {
		variants = fmt.Sprintf(" in %d variants", cfg.Variants)
	}
	fmt.Fprintf(w, "audit: sale %d (stock %d%s, limit %d), %d users x %d purchases of 1..%d units, %d buyers at once, %d instance(s)\n",
		id, cfg.Stock, variants, cfg.Limit, cfg.Users, cfg.Attempts, cfg.MaxQty, cfg.Conns, len(a.urls))

	b := &buyer{api: a, activity: id, ledger: newLedger(), tally: newTally(),
		nonce: fmt.Sprintf("c%x", time.Now().UnixNano()&0xffffffff)}
	users := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.Conns {
		wg.Go(func() {
			for u := range users {
				user := cfg.FirstUser + int64(u)
				rng := rand.New(rand.NewPCG(cfg.Seed, uint64(user)))
				b.run(ctx, cfg, rng, user, tokens[u])
			}
		})
	}
	for u := range cfg.Users {
		users <- u
	}
	close(users)
	wg.Wait()
	end := time.Now()
	elapsed := end.Sub(start)
	p50, p99, worst := b.tally.percentiles()
	fmt.Fprintf(w, "  %d purchase requests in %.2fs = %.0f req/s; latency p50 %s p99 %s max %s\n",
		b.tally.total(), elapsed.Seconds(), float64(b.tally.total())/elapsed.Seconds(), ms(p50), ms(p99), ms(worst))
	fmt.Fprintf(w, "  answers: %s\n", b.tally.breakdown())
	unexpected, internal := 0, 0
	for k, n := range b.tally.counts {
		if !expected[k] {
			unexpected += n
		}
		if k == "500 internal" {
			internal += n
		}
	}
	if unexpected > 0 {
		fmt.Fprintf(w, "  unexpected answers: %d (see the list above)\n", unexpected)
	}

	want := b.ledger.acknowledged()
	drained, all, err := waitPersisted(ctx, db, id, want, 20*time.Millisecond, time.Now().Add(cfg.Drain))
	if err != nil {
		return false, err
	}
	if all {
		fmt.Fprintf(w, "  drain: MySQL held all %d acknowledged orders %.2fs after the last answer\n",
			len(want), max(0, drained.Sub(end).Seconds()))
	} else {
		fmt.Fprintf(w, "  drain: MySQL still misses orders after %s\n", cfg.Drain)
	}
	rep, err := auditSale(ctx, db, id, b.ledger)
	if err != nil {
		return false, err
	}
	rep.print(w)
	ok := rep.OK() && internal == 0
	if internal > 0 {
		fmt.Fprintf(w, "  500 internal answers: %d (a bug in the API)\n", internal)
	}
	if ok {
		fmt.Fprintln(w, "audit: PASS")
	} else {
		fmt.Fprintln(w, "audit: FAIL")
	}
	return ok, nil
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// dropsConfig is the drops mode: many short sales run to their end, then archived by the
// worker (its SECKILL_SALE_RETENTION short), beside another scenario's crowd.
type dropsConfig struct {
	Sales, Buyers int
	Open          time.Duration // each sale is open this long from its creation
	Within        time.Duration // longest wait for the last sale to be archived
	FirstUser     int64
	RedisAddr     string // for INFO memory and DBSIZE before and after; "" for none
}

// drop is one sale of the drops mode and its orders.
type dropSale struct {
	id     int64
	orders []string
	tokens []string
}

// runDrops creates cfg.Sales sales of cfg.Buyers units each, open for cfg.Open, in which
// each buyer buys one unit with an Idempotency-Key; once MySQL has the orders, it pays
// half of each sale's and cancels the rest, then waits for every sale to be archived
// (archived_at) and checks what the API answers for it from MySQL: the units left, and a
// replay's 200. It prints the time from the last sale's end to its archive, and Redis's
// keys and used_memory before the sales and after their archive.
func runDrops(ctx context.Context, w io.Writer, a *api, cfg dropsConfig) (bool, error) {
	var rdb *redis.Client
	if cfg.RedisAddr != "" {
		rdb = redis.NewClient(&redis.Options{Addr: cfg.RedisAddr})
		defer rdb.Close()
	}
	keys0, mem0, err := redisFigures(ctx, rdb)
	if err != nil {
		return false, err
	}
	start := time.Now()
	sales := make([]*dropSale, cfg.Sales)
	errs := make([]error, cfg.Sales)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range sales {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			sales[i], errs[i] = runDrop(ctx, a, cfg, cfg.FirstUser+int64(i*cfg.Buyers))
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return false, err
		}
	}
	lastEnd := time.Now()
	fmt.Fprintf(w, "drops: %d sales of %d buyers run to their end in %v; waiting for their archive\n", cfg.Sales, cfg.Buyers,
		time.Since(start).Round(time.Millisecond))
	keys1, mem1, err := redisFigures(ctx, rdb)
	if err != nil {
		return false, err
	}
	ok := true
	for _, s := range sales {
		if err := waitArchived(ctx, a, s, lastEnd.Add(cfg.Within)); err != nil {
			fmt.Fprintf(w, "drops: sale %d: %v\n", s.id, err)
			ok = false
		}
	}
	archived := time.Since(lastEnd)
	keys2, mem2, err := redisFigures(ctx, rdb)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "drops: every sale archived %v after the last one's orders were final\n", archived.Round(time.Millisecond))
	if rdb != nil {
		fmt.Fprintf(w, "drops: Redis keys %d before, %d with the sales, %d after their archive; used_memory %d, %d, %d (%+d)\n",
			keys0, keys1, keys2, mem0, mem1, mem2, mem2-mem0)
	}
	if ok {
		fmt.Fprintln(w, "drops: PASS")
	} else {
		fmt.Fprintln(w, "drops: FAIL")
	}
	return ok, nil
}

// runDrop runs one sale to its end: created, bought, its orders in MySQL, half of them
// paid by the shop and the others cancelled by their buyers.
func runDrop(ctx context.Context, a *api, cfg dropsConfig, firstUser int64) (*dropSale, error) {
	admin, err := a.token("1", true)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	body, _ := json.Marshal(saleSpec{Name: "drop", ProductName: "load-test unit", PriceCents: 100, Stock: int64(cfg.Buyers),
		PerUserLimit: 1, StartsAt: now.Add(-time.Second).Format(time.RFC3339Nano), EndsAt: now.Add(cfg.Open).Format(time.RFC3339Nano),
		PayWindowSeconds: 10})
	r := a.do(ctx, http.MethodPost, "/api/v1/admin/activities", admin, "", body)
	var created struct {
		ID int64 `json:"id"`
	}
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &created) != nil {
		return nil, fmt.Errorf("create a drop: %s %s", r.label(), r.body)
	}
	s := &dropSale{id: created.ID}
	for u := range int64(cfg.Buyers) {
		tok, err := a.buyerToken(firstUser + u)
		if err != nil {
			return nil, err
		}
		r := a.buy(ctx, s.id, tok, dropKey(s.id, u), 1)
		var o order
		if r.status != http.StatusAccepted || json.Unmarshal(r.body, &o) != nil {
			return nil, fmt.Errorf("buy in drop %d: %s %s", s.id, r.label(), r.body)
		}
		s.orders, s.tokens = append(s.orders, o.ID), append(s.tokens, tok)
	}
	for i, id := range s.orders {
		for deadline := time.Now().Add(time.Minute); ; {
			r := a.do(ctx, http.MethodGet, "/api/v1/orders/"+id, s.tokens[i], "", nil)
			var o order
			if r.status == http.StatusOK && json.Unmarshal(r.body, &o) == nil && o.Status == "created" {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("order %s not in MySQL after a minute: %s %s", id, r.label(), r.body)
			}
			time.Sleep(50 * time.Millisecond)
		}
		action, by := "/pay", admin // the shop confirms a payment, the buyer cancels
		if i%2 == 1 {
			action, by = "/cancel", s.tokens[i]
		}
		if r := a.do(ctx, http.MethodPost, "/api/v1/orders/"+id+action, by, "", nil); r.status != http.StatusOK {
			return nil, fmt.Errorf("%s order %s: %s %s", action, id, r.label(), r.body)
		}
	}
	return s, nil
}

func dropKey(activityID, u int64) string {
	return "drop-" + strconv.FormatInt(activityID, 10) + "-" + strconv.FormatInt(u, 10)
}

// waitArchived waits until the sale is archived, then checks what MySQL answers: the
// units left (the cancelled half back), and a replay of the first buyer's key.
func waitArchived(ctx context.Context, a *api, s *dropSale, deadline time.Time) error {
	var got struct {
		StockTotal     int64   `json:"stock_total"`
		StockAvailable int64   `json:"stock_available"`
		ArchivedAt     *string `json:"archived_at"`
	}
	for {
		r := a.do(ctx, http.MethodGet, "/api/v1/activities/"+strconv.FormatInt(s.id, 10), "", "", nil)
		if r.status == http.StatusOK && json.Unmarshal(r.body, &got) == nil && got.ArchivedAt != nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("not archived in time: %s %s", r.label(), r.body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	paid := int64(len(s.orders)+1) / 2
	if got.StockAvailable != got.StockTotal-paid {
		return fmt.Errorf("archived with %d of %d units left, want %d", got.StockAvailable, got.StockTotal, got.StockTotal-paid)
	}
	r := a.buy(ctx, s.id, s.tokens[0], dropKey(s.id, 0), 1)
	var o order
	if r.status != http.StatusOK || json.Unmarshal(r.body, &o) != nil || o.ID != s.orders[0] {
		return fmt.Errorf("a replay once archived: %s %s, want 200 and order %s", r.label(), r.body, s.orders[0])
	}
	return nil
}

// redisFigures are Redis's key count and used_memory; zeros without a client.
func redisFigures(ctx context.Context, rdb *redis.Client) (keys, mem int64, err error) {
	if rdb == nil {
		return 0, 0, nil
	}
	if keys, err = rdb.DBSize(ctx).Result(); err != nil {
		return 0, 0, fmt.Errorf("redis: %w", err)
	}
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, 0, fmt.Errorf("redis: %w", err)
	}
	return keys, infoField(info, "used_memory"), nil
}

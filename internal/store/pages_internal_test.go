package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/testutil"
)

// The reads over a whole sale go page by page (salePages): wherever the pages' edges
// fall, each answers as one read would, with every order of the sale once and none of
// the sale beside it, whose orders interleave with its own. KeyedOrders: the orders
// with a key, made since the bound, in id order; CountOrders: the orders and units by
// status; OrderFacts: every order; LastFinal: the last instant an order became final.
func TestSaleReadsPageByPage(t *testing.T) {
	ctx := context.Background()
	db := testutil.MySQL(t).Gorm
	st := New(db, nil)
	now := time.Now().UTC().Truncate(time.Millisecond)
	var sales [2]int64
	for i := range sales {
		a := Activity{Name: "s", ProductName: "p", PriceCents: 100, StockTotal: 100, PerUserLimit: 10,
			StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), Kind: "sale"}
		if err := st.Activities.CreateActivity(ctx, &a, func(Activity) error { return nil }); err != nil {
			t.Fatal(err)
		}
		sales[i] = a.ID
	}
	since := now.Add(-time.Minute)
	var rows []Order
	var want, every []string
	counts := map[string]StatusCount{}
	var lastFinal time.Time
	for i := range 23 {
		act, created := sales[i%3/2], now // every third order is the other sale's
		var key, fingerprint *string
		if i%2 == 0 {
			k, f := fmt.Sprintf("k%d", i), "fp"
			key, fingerprint = &k, &f
		}
		if i%5 == 0 {
			created = since.Add(-time.Second) // before the bound
		}
		id, status, persisted := fmt.Sprintf("o-%02d", i), StatusCreated, now.Add(time.Duration(i)*time.Second)
		if i%4 == 3 {
			status = StatusFailed
		}
		rows = append(rows, Order{ID: id, ActivityID: act, Buyer: buyer.Of(int64(i + 1)), Quantity: 1 + i%3, AmountCents: 100,
			Status: status, CreatedAt: created, ExpiresAt: created.Add(time.Hour), PersistedAt: persisted,
			IdempotencyKey: key, RequestFingerprint: fingerprint})
		if act != sales[0] {
			continue
		}
		every = append(every, id)
		c := counts[status]
		counts[status] = StatusCount{Status: status, Orders: c.Orders + 1, Units: c.Units + int64(1+i%3)}
		lastFinal = persisted
		if key != nil && !created.Before(since) {
			want = append(want, id)
		}
	}
	if err := insertOrders(db, rows); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { salePage = n }(salePage)
	for _, page := range []int{1, 2, 3, 7, 100} {
		salePage = page
		got, err := st.Upkeep.KeyedOrders(ctx, sales[0], since)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(got))
		for i, o := range got {
			ids[i] = o.ID
		}
		if !slices.Equal(ids, want) {
			t.Errorf("pages of %d orders: keyed orders %v; want %v", page, ids, want)
		}
		if got, err := st.Orders.CountOrders(ctx, sales[0]); err != nil || !maps.Equal(got, counts) {
			t.Errorf("pages of %d orders: counts %v, %v; want %v", page, got, err, counts)
		}
		facts, err := st.Orders.OrderFacts(ctx, sales[0])
		factIDs := make([]string, len(facts))
		for i, f := range facts {
			factIDs[i] = f.ID
		}
		if slices.Sort(factIDs); err != nil || !slices.Equal(factIDs, every) {
			t.Errorf("pages of %d orders: facts of %v, %v; want %v", page, factIDs, err, every)
		}
		if got, err := st.Upkeep.LastFinal(ctx, sales[0]); err != nil || !got.Equal(lastFinal) {
			t.Errorf("pages of %d orders: last final %v, %v; want %v", page, got, err, lastFinal)
		}
	}
}

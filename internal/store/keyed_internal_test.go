package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/testutil"
)

// KeyedOrders reads a sale's orders page by page: every order of the sale with a key,
// made since the bound, comes back once, in id order, wherever the pages' edges fall,
// and no other (none without a key, none older, none of the sale beside it, whose
// orders interleave with its own).
func TestKeyedOrdersReadsPageByPage(t *testing.T) {
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
	var want []string
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
		id := fmt.Sprintf("o-%02d", i)
		rows = append(rows, Order{ID: id, ActivityID: act, Buyer: buyer.Of(int64(i + 1)), Quantity: 1, AmountCents: 100,
			Status: StatusCreated, CreatedAt: created, ExpiresAt: created.Add(time.Hour), IdempotencyKey: key,
			RequestFingerprint: fingerprint})
		if act == sales[0] && key != nil && !created.Before(since) {
			want = append(want, id)
		}
	}
	if err := insertOrders(db, rows); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { keyedPage = n }(keyedPage)
	for _, page := range []int{1, 2, 3, 7, 100} {
		keyedPage = page
		got, err := st.Upkeep.KeyedOrders(ctx, sales[0], since)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(got))
		for i, o := range got {
			ids[i] = o.ID
		}
		if !slices.Equal(ids, want) {
			t.Errorf("pages of %d orders: %v; want %v", page, ids, want)
		}
	}
}

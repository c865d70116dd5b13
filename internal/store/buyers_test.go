package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/outage"
	"seckill/internal/sale"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

// MySQL keeps every buyer apart by its bytes: buyers that differ in letter case or a
// trailing space, a 21-digit subject and a UUID each have their own limit, orders and
// holdings; the row of a decimal buyer keeps its user_id, any other's has none; only an
// order's buyer acts on it.
func TestBuyersInMySQL(t *testing.T) {
	db := testutil.MySQL(t)
	s := store.New(db.Gorm, sale.EventViews{})
	ctx := context.Background()
	a := newActivity(t, s, 100, 2)
	buyers := []buyer.ID{"auth0|AbC", "auth0|abc", "a", "a ", "42", "109876543210987654321",
		"8f14e45f-ceea-467f-a0e7-5ad1c4b1c0c2"}
	of := func(who buyer.ID, qty int) store.NewOrder {
		o := order(a, 0, qty)
		o.Buyer = who
		return o
	}
	var batch []store.NewOrder
	for _, who := range buyers {
		batch = append(batch, of(who, 2))
	}
	key, fingerprint := "k-1", "q2"
	batch[0].IdempotencyKey, batch[0].RequestFingerprint = &key, &fingerprint
	out, err := s.Batches.PersistBatch(ctx, batch, outage.Outages{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range batch {
		if out[o.ID].Status != store.StatusCreated {
			t.Fatalf("%q's order: %+v, want created", o.Buyer, out[o.ID])
		}
	}
	// each of them holds the limit: one more unit is over it, for each alone
	for _, who := range buyers {
		o := of(who, 1)
		out, err := s.Batches.PersistBatch(ctx, []store.NewOrder{o}, outage.Outages{})
		if err != nil || out[o.ID].Status != store.StatusFailed {
			t.Errorf("%q's order past the limit: %+v, %v; want failed", who, out[o.ID], err)
		}
	}
	held, err := s.Orders.Holdings(ctx, a.ID)
	if err != nil || len(held) != len(buyers) {
		t.Fatalf("holdings %v, %v; want one per buyer", held, err)
	}
	figures, err := s.Orders.Figures(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, who := range buyers {
		if held[who] != 2 || figures.Users[who] != 2 {
			t.Errorf("%q holds %d, user_purchases %d; want 2", who, held[who], figures.Users[who])
		}
		mine, err := s.Orders.ListUserOrders(ctx, who, 10)
		if err != nil || len(mine) != 2 { // the created one, and the one refused
			t.Fatalf("%q's orders: %+v, %v; want 2", who, mine, err)
		}
		for _, o := range mine {
			if o.Buyer != who {
				t.Errorf("%q's orders include %q's", who, o.Buyer)
			}
		}
		row, err := s.Orders.GetOrder(ctx, batch[i].ID)
		n, decimal := who.UserID()
		switch {
		case err != nil || row.Buyer != who:
			t.Errorf("%q's order read back: %+v, %v", who, row, err)
		case decimal && (row.UserID == nil || *row.UserID != n), !decimal && row.UserID != nil:
			t.Errorf("%q's order has user_id %v", who, row.UserID)
		}
	}
	// "a " may not cancel "a"'s order; "a" may, and holds nothing after
	if _, _, err := s.Lifecycle.CancelOrder(ctx, batch[2].ID, store.Access{Buyer: "a "}, time.Now()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a's order cancelled by \"a \": %v, want ErrNotFound", err)
	}
	if _, _, err := s.Lifecycle.CancelOrder(ctx, batch[2].ID, store.Access{Buyer: "a"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if held, err := s.Orders.Holdings(ctx, a.ID); err != nil || held["a"] != 2 || held["a "] != 2 {
		t.Errorf("holdings after a's cancel: %v, %v; want a's still held until its return, \"a \"'s whole", held, err)
	}
	if f, err := s.Orders.Figures(ctx, a.ID); err != nil || f.Users["a"] != 0 || f.Users["a "] != 2 {
		t.Errorf("user_purchases after a's cancel: %v, %v; want a at 0, \"a \" at 2", f.Users, err)
	}
	keyed, err := s.Upkeep.KeyedOrders(ctx, a.ID, time.Time{})
	if err != nil || len(keyed) != 1 || keyed[0].Buyer != batch[0].Buyer || *keyed[0].IdempotencyKey != key {
		t.Errorf("keyed orders %+v, %v; want %q's, with its key", keyed, err, batch[0].Buyer)
	}
}

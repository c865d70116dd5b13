package store_test

import (
	"context"
	"errors"
	"testing"

	"seckill/internal/outage"
	"seckill/internal/outbox"
	"seckill/internal/sale"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

// A closed gate fails every kind of statement on its database, the store's and the
// outbox's, reads, writes, raw SQL and transactions alike, with ErrSchemaPending and
// without touching a row; once open, the same calls go through.
func TestGateHoldsStatementsUntilOpen(t *testing.T) {
	db := testutil.MySQL(t)
	ctx := context.Background()
	rows := func() (n int64) {
		sqlDB, err := db.Gorm.DB()
		if err != nil {
			t.Fatal(err)
		}
		if err := sqlDB.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM activities) + (SELECT COUNT(*) FROM orders)").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	gate, err := store.NewGate(db.Gorm)
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(db.Gorm, sale.EventViews{})
	calls := []struct {
		name string
		call func() error
	}{
		{"create an activity", func() error {
			act := store.Activity{Name: "sale", ProductName: "phone", PriceCents: 100, StockTotal: 5, PerUserLimit: 1}
			return s.Activities.CreateActivity(ctx, &act, func(store.Activity) error { return nil })
		}},
		{"list activities", func() error { _, err := s.Activities.NewList().Read(ctx); return err }},
		{"read an order", func() error { _, err := s.Orders.GetOrder(ctx, "o1"); return err }},
		{"persist orders (a transaction)", func() error {
			_, err := s.Batches.PersistBatch(ctx, []store.NewOrder{order(store.Activity{ID: 1, PerUserLimit: 1, PriceCents: 100}, 1, 1)}, outage.Outages{})
			return err
		}},
		{"list webhooks (outbox)", func() error { _, err := outbox.NewWebhooks(db.Gorm, true).List(ctx); return err }},
		{"raw SQL", func() error { return db.Gorm.Exec("UPDATE activities SET sold = sold").Error }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, store.ErrSchemaPending) {
			t.Errorf("%s with the gate closed: %v, want ErrSchemaPending", c.name, err)
		}
	}
	if n := rows(); n != 0 {
		t.Errorf("%d rows written with the gate closed", n)
	}

	gate.Open()
	for _, c := range calls {
		if err := c.call(); errors.Is(err, store.ErrSchemaPending) {
			t.Errorf("%s with the gate open: %v", c.name, err)
		}
	}
	if n := rows(); n != 2 { // the activity, and the order persisted in it
		t.Errorf("%d rows written with the gate open, want 2", n)
	}
}

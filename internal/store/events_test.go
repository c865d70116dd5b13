package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"seckill/internal/outage"
	"seckill/internal/outbox"
	"seckill/internal/sale"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

// Each change's event is written in the transaction of the change: a batch that a
// guard refuses rolls back with the order.created events it had recorded (its orders
// are then written one by one: the one over stock gets order.failed alone), and a
// payment that comes after the pay window records the order's cancellation, never its
// payment; a confirmation sent again changes nothing and records nothing.
func TestEventsWithTheirChanges(t *testing.T) {
	db := testutil.MySQL(t)
	s := store.New(db.Gorm, sale.EventViews{})
	ctx := context.Background()
	if _, err := outbox.NewWebhooks(db.Gorm, true).Create(ctx, "http://127.0.0.1:9/hook", nil); err != nil {
		t.Fatal(err)
	}
	a := newActivity(t, s, 2, 2)
	batch := []store.NewOrder{order(a, 1, 1), order(a, 2, 1), order(a, 3, 1)}
	out, err := s.Batches.PersistBatch(ctx, batch, outage.Outages{})
	if err != nil {
		t.Fatal(err)
	}
	if out[batch[2].ID].Status != store.StatusFailed {
		t.Fatalf("the order over stock: %+v, want failed", out[batch[2].ID])
	}
	paid, late := batch[0].ID, batch[1].ID
	first, _, err := s.Lifecycle.PayOrder(ctx, paid, store.Access{Admin: true}, time.Now(), outage.Outages{})
	if err != nil {
		t.Fatalf("pay within the window: %v", err)
	}
	again, cancelled, err := s.Lifecycle.PayOrder(ctx, paid, store.Access{Service: true}, time.Now().Add(time.Minute), outage.Outages{})
	if err != nil || cancelled || again.Status != store.StatusPaid || !again.PaidAt.Equal(*first.PaidAt) ||
		*again.PaidBy != store.PaidByAdmin || *first.PaidBy != store.PaidByAdmin {
		t.Fatalf("the confirmation again: %v, cancelled %v, status %s paid at %v by %s; want paid at %v by admin, as first",
			err, cancelled, again.Status, again.PaidAt, *again.PaidBy, first.PaidAt)
	}
	after := batch[1].ExpiresAt.Add(time.Second)
	if _, _, err := s.Lifecycle.PayOrder(ctx, late, store.Access{Admin: true}, after, outage.Outages{}); !errors.Is(err, store.ErrExpired) {
		t.Fatalf("pay after the window: %v, want ErrExpired", err)
	}

	var rows []struct{ Subject, Type string }
	if err := db.Gorm.Raw("SELECT subject, type FROM outbox_events ORDER BY seq").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, r := range rows {
		got[r.Subject] = append(got[r.Subject], r.Type)
	}
	want := map[string][]string{
		paid:        {outbox.OrderCreated, outbox.OrderPaid},
		late:        {outbox.OrderCreated, outbox.OrderCancelled},
		batch[2].ID: {outbox.OrderFailed},
	}
	for id, types := range want {
		if strings.Join(got[id], " ") != strings.Join(types, " ") {
			t.Errorf("order %s: events %v, want %v", id, got[id], types)
		}
	}
	if len(rows) != 5 {
		t.Errorf("%d events, want 5: %v", len(rows), got)
	}
}

// Every order event of a sale carries the sale's external_ref as it is at the change
// (changed by a PATCH in between), and no such member without one; group events carry
// none.
func TestOrderEventsCarryTheSaleReference(t *testing.T) {
	db := testutil.MySQL(t)
	s := store.New(db.Gorm, sale.EventViews{})
	ctx := context.Background()
	if _, err := outbox.NewWebhooks(db.Gorm, true).Create(ctx, "http://127.0.0.1:9/hook", nil); err != nil {
		t.Fatal(err)
	}
	setRef := func(a store.Activity, ref *string) {
		t.Helper()
		if _, err := s.Activities.UpdateActivity(ctx, a.ID, func(a *store.Activity) error { a.ExternalRef = ref; return nil },
			func(store.Activity) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	sku1, sku2 := "SKU-1", "SKU-2"
	named, plain := newActivity(t, s, 5, 2), newActivity(t, s, 5, 2)
	setRef(named, &sku1)
	batch := []store.NewOrder{order(named, 1, 1), order(plain, 1, 1)}
	if _, err := s.Batches.PersistBatch(ctx, batch, outage.Outages{}); err != nil {
		t.Fatal(err)
	}
	setRef(named, &sku2)
	for _, o := range batch {
		if _, _, err := s.Lifecycle.PayOrder(ctx, o.ID, store.Access{Service: true}, time.Now(), outage.Outages{}); err != nil {
			t.Fatal(err)
		}
	}
	var rows []struct{ Subject, Type, Body string }
	if err := db.Gorm.Raw("SELECT subject, type, body FROM outbox_events ORDER BY seq").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	want := map[string]string{batch[0].ID + " " + outbox.OrderCreated: "SKU-1", batch[0].ID + " " + outbox.OrderPaid: "SKU-2",
		batch[1].ID + " " + outbox.OrderCreated: "", batch[1].ID + " " + outbox.OrderPaid: ""}
	got := map[string]string{}
	for _, r := range rows {
		var body struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
			t.Fatal(err)
		}
		ref, has := body.Data["external_ref"]
		if !has {
			got[r.Subject+" "+r.Type] = ""
			continue
		}
		var s string
		if err := json.Unmarshal(ref, &s); err != nil || s == "" {
			t.Errorf("%s of %s: external_ref %s", r.Type, r.Subject, ref)
		}
		got[r.Subject+" "+r.Type] = s
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the events' external_ref: %v, want %v", got, want)
	}
}

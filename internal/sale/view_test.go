package sale

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"seckill/internal/outage"
	"seckill/internal/outbox"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

// The events of internal/store carry the order object the API shows, built there from
// the same row: each event's order, as MySQL recorded it, is the order the API shows
// after that change (created, failed over stock, paid, cancelled).
func TestEventOrderIsTheAPIOrder(t *testing.T) {
	db := testutil.MySQL(t)
	st := store.New(db.Gorm)
	ctx := context.Background()
	if _, err := outbox.NewWebhooks(db.Gorm, true).Create(ctx, "http://127.0.0.1:9/hook", nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := store.Activity{Name: "sale", ProductName: "phone", PriceCents: 100, StockTotal: 2, PerUserLimit: 2,
		StartsAt: now, EndsAt: now.Add(time.Hour), PayWindowSeconds: 900}
	if err := st.CreateActivity(ctx, &a, func(store.Activity) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var batch []store.NewOrder
	for i, user := range []int64{1, 2, 3} {
		at := now.Add(time.Duration(i) * time.Millisecond)
		batch = append(batch, store.NewOrder{Limit: 2, Order: store.Order{ID: fmt.Sprintf("o%d-%d", a.ID, i),
			ActivityID: a.ID, UserID: user, Quantity: 1, AmountCents: 100, CreatedAt: at, ExpiresAt: at.Add(15 * time.Minute)}})
	}
	if _, err := st.PersistBatch(ctx, batch, outage.Outages{}); err != nil {
		t.Fatal(err)
	}
	paid, cancelled, failed := batch[0].ID, batch[1].ID, batch[2].ID
	if _, _, err := st.PayOrder(ctx, paid, store.Access{Admin: true}, time.Now(), outage.Outages{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CancelOrder(ctx, cancelled, store.Access{Admin: true}, time.Now()); err != nil {
		t.Fatal(err)
	}

	var rows []struct{ Subject, Type, Body string }
	if err := db.Gorm.Raw("SELECT subject, type, body FROM outbox_events ORDER BY seq").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	last := map[string]string{} // order id -> its last event's type
	for _, r := range rows {
		var body struct {
			Data struct{ Order json.RawMessage }
		}
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(body.Data.Order, &got); err != nil {
			t.Fatalf("%s of %s: %v in %s", r.Type, r.Subject, err, r.Body)
		}
		last[r.Subject] = r.Type
		if r.Type != outbox.OrderCreated { // the order as it is now: after its last change
			stored, err := st.GetOrder(ctx, r.Subject)
			if err != nil {
				t.Fatal(err)
			}
			if want := asJSON(t, storedView(stored)); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s of %s: event order %v, API order %v", r.Type, r.Subject, got, want)
			}
		}
	}
	want := map[string]string{paid: outbox.OrderPaid, cancelled: outbox.OrderCancelled, failed: outbox.OrderFailed}
	if fmt.Sprint(last) != fmt.Sprint(want) {
		t.Errorf("last events %v, want %v", last, want)
	}
}

func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

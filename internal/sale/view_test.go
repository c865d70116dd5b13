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
	db, st, a := subscribedSale(t, 2)
	ctx, now := context.Background(), a.StartsAt
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

// subscribedSale is a sale of stock units, started now, in a fresh database where an
// endpoint subscribes to every event, so that every change records its event.
func subscribedSale(t *testing.T, stock int64) (*testutil.MySQLDB, *store.Store, store.Activity) {
	t.Helper()
	db := testutil.MySQL(t)
	st := store.New(db.Gorm)
	ctx := context.Background()
	if _, err := outbox.NewWebhooks(db.Gorm, true).Create(ctx, "http://127.0.0.1:9/hook", nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := store.Activity{Name: "sale", ProductName: "phone", PriceCents: 100, StockTotal: stock, PerUserLimit: 2,
		StartsAt: now, EndsAt: now.Add(time.Hour), PayWindowSeconds: 900}
	if err := st.CreateActivity(ctx, &a, func(store.Activity) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return db, st, a
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

// The events of internal/store carry the group object the API shows, without the
// members only admins see: each group event's group is the group the admin's list shows
// after that change (completed, failed).
func TestEventGroupIsTheAPIGroup(t *testing.T) {
	db, st, a := subscribedSale(t, 10)
	ctx, now := context.Background(), a.StartsAt
	seat := func(user int64, group string) store.NewOrder {
		at := now.Add(time.Duration(user) * time.Millisecond)
		return store.NewOrder{Limit: 2, GroupSize: 2, GroupExpiresAt: now.Add(time.Minute), Order: store.Order{
			ID: fmt.Sprintf("o%d-%d", a.ID, user), ActivityID: a.ID, UserID: user, Quantity: 1, AmountCents: 100,
			CreatedAt: at, ExpiresAt: at.Add(15 * time.Minute), GroupID: &group}}
	}
	if _, err := st.PersistBatch(ctx, []store.NewOrder{seat(1, "full"), seat(2, "full"), seat(3, "alone")}, outage.Outages{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FailGroup(ctx, a.ID, "alone", 2, now.Add(time.Minute), time.Now()); err != nil {
		t.Fatal(err)
	}

	stored, err := st.ListGroups(ctx, a.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]map[string]any{}
	for _, g := range stored {
		v := asJSON(t, storedGroupView(g))
		if v["member_ids"] == nil {
			t.Errorf("group %s: the admin's view has no member_ids: %v", g.ID, v)
		}
		delete(v, "member_ids")
		shown[g.ID] = v
	}
	var rows []struct{ Subject, Type, Body string }
	if err := db.Gorm.Raw("SELECT subject, type, body FROM outbox_events WHERE type LIKE 'group.%' ORDER BY seq").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows {
		var body struct {
			Data struct{ Group map[string]any }
		}
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
			t.Fatal(err)
		}
		got[r.Subject] = r.Type
		if want := shown[r.Subject]; fmt.Sprint(body.Data.Group) != fmt.Sprint(want) {
			t.Errorf("%s of %s: event group %v, API group %v", r.Type, r.Subject, body.Data.Group, want)
		}
	}
	if want := map[string]string{"full": outbox.GroupCompleted, "alone": outbox.GroupFailed}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("group events %v, want %v", got, want)
	}
}

package sale

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/outage"
	"seckill/internal/outbox"
	"seckill/internal/stock"
	"seckill/internal/stock/group"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

// The events of internal/store carry the order object the API shows (EventViews renders
// it from the row): each event's order, as MySQL recorded it, is the order the API shows
// after that change (created, failed over stock, paid, cancelled, refunded). Each names
// its buyer by "buyer", and by "user_id" only for a decimal buyer.
func TestEventOrderIsTheAPIOrder(t *testing.T) {
	db, st, a := subscribedSale(t, 3)
	ctx, now := context.Background(), a.StartsAt
	var batch []store.NewOrder
	buyers := map[string]buyer.ID{}
	for i, who := range []buyer.ID{"1", "auth0|64f1c2", "109876543210987654321", "a b"} {
		at := now.Add(time.Duration(i) * time.Millisecond)
		batch = append(batch, store.NewOrder{Limit: 2, Order: store.Order{ID: fmt.Sprintf("o%d-%d", a.ID, i),
			ActivityID: a.ID, Buyer: who, Quantity: 1, AmountCents: 100, CreatedAt: at, ExpiresAt: at.Add(15 * time.Minute)}})
		buyers[batch[i].ID] = who
	}
	if _, err := st.Batches.PersistBatch(ctx, batch, outage.Outages{}); err != nil {
		t.Fatal(err)
	}
	paid, cancelled, refunded, failed := batch[0].ID, batch[1].ID, batch[2].ID, batch[3].ID
	for _, id := range []string{paid, refunded} {
		if _, _, err := st.Lifecycle.PayOrder(ctx, id, store.Access{Admin: true}, time.Now(), outage.Outages{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.Lifecycle.CancelOrder(ctx, cancelled, store.Access{Admin: true}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Lifecycle.RefundOrder(ctx, refunded, store.Access{Service: true}, false, time.Now()); err != nil {
		t.Fatal(err)
	}

	var rows []struct{ Subject, Type, Body string }
	if err := db.Gorm.Raw("SELECT subject, type, body FROM outbox_events ORDER BY seq").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	last := map[string]string{}              // order id -> its last event's type
	lastOrder := map[string]map[string]any{} // order id -> its last event's order
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
		last[r.Subject], lastOrder[r.Subject] = r.Type, got
		userID, decimal := got["user_id"]
		if who := buyers[r.Subject]; got["buyer"] != string(who) || decimal != (who == "1") || decimal && userID != float64(1) {
			t.Errorf("%s of %s: the order names buyer %v and user %v, want %q", r.Type, r.Subject, got["buyer"], userID, who)
		}
	}
	for id, got := range lastOrder { // the order as it is now: after its last change
		stored, err := st.Orders.GetOrder(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if want := asJSON(t, storedView(stored)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s of %s: event order %v, API order %v", last[id], id, got, want)
		}
	}
	want := map[string]string{paid: outbox.OrderPaid, cancelled: outbox.OrderCancelled, refunded: outbox.OrderRefunded,
		failed: outbox.OrderFailed}
	if fmt.Sprint(last) != fmt.Sprint(want) {
		t.Errorf("last events %v, want %v", last, want)
	}
}

// subscribedSale is a sale of stock units, started now, in a fresh database where an
// endpoint subscribes to every event, so that every change records its event.
func subscribedSale(t *testing.T, stock int64) (*testutil.MySQLDB, *store.Store, store.Activity) {
	t.Helper()
	db := testutil.MySQL(t)
	st := store.New(db.Gorm, EventViews{})
	ctx := context.Background()
	if _, err := outbox.NewWebhooks(db.Gorm, true).Create(ctx, "http://127.0.0.1:9/hook", nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := store.Activity{Name: "sale", ProductName: "phone", PriceCents: 100, StockTotal: stock, PerUserLimit: 2,
		StartsAt: now, EndsAt: now.Add(time.Hour), PayWindowSeconds: 900}
	if err := st.Activities.CreateActivity(ctx, &a, func(store.Activity) error { return nil }); err != nil {
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
	seat := func(user int64, group string) store.NewOrder { return seatOrder(a, user, group) }
	other := seat(2, "full") // a member of another subject than a user id
	other.Buyer = "auth0|2"
	if _, err := st.Batches.PersistBatch(ctx, []store.NewOrder{seat(1, "full"), other, seat(3, "alone")}, outage.Outages{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Lifecycle.FailGroup(ctx, a.ID, "alone", 2, now.Add(time.Minute), time.Now()); err != nil {
		t.Fatal(err)
	}

	stored, err := st.Orders.ListGroups(ctx, a.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]map[string]any{}
	for _, g := range stored {
		v := asJSON(t, storedGroupView(g))
		if g.ID == "full" && (fmt.Sprint(v["member_ids"]) != "[1]" ||
			fmt.Sprint(v["member_buyers"]) != "[map[buyer:1 user_id:1] map[buyer:auth0|2]]") {
			t.Errorf("group %s: the admin's view names members %v and %v, want buyers 1 and auth0|2, user 1",
				g.ID, v["member_buyers"], v["member_ids"])
		}
		delete(v, "member_ids")
		delete(v, "member_buyers")
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

// seatOrder is user's order of one unit of a, queued a.StartsAt plus user
// milliseconds, with a seat in group, of size 2, whose window ends a minute after the
// start.
func seatOrder(a store.Activity, user int64, group string) store.NewOrder {
	o := plainOrder(a, user)
	o.GroupID, o.GroupSize, o.GroupExpiresAt = &group, 2, a.StartsAt.Add(time.Minute)
	return o
}

// plainOrder is user's order of one unit of a, queued a.StartsAt plus user
// milliseconds, with a pay window of 15 minutes.
func plainOrder(a store.Activity, user int64) store.NewOrder {
	at := a.StartsAt.Add(time.Duration(user) * time.Millisecond)
	return store.NewOrder{Limit: a.PerUserLimit, Order: store.Order{ID: fmt.Sprintf("o%d-%d", a.ID, user),
		ActivityID: a.ID, Buyer: buyer.Of(user), Quantity: 1, AmountCents: a.PriceCents, CreatedAt: at, ExpiresAt: at.Add(15 * time.Minute)}}
}

// Every time in every event type and in the order and group answers is in the one
// format (RFC 3339 in UTC with milliseconds), though the worker's clock has
// nanoseconds and some instants fall on a whole second: the pay windows of a group's
// orders, started by the seat that fills it, and the changes stamped by that clock.
func TestTimesInOneFormat(t *testing.T) {
	db, st, a := subscribedSale(t, 10)
	ctx := context.Background()
	clock := a.StartsAt.Truncate(time.Second).Add(time.Second + 500) // a whole second and 500 ns
	st.SetClock(func() time.Time { return clock })
	paid, cancelled, refunded := plainOrder(a, 1), plainOrder(a, 2), plainOrder(a, 7)
	batch := []store.NewOrder{paid, cancelled, refunded, seatOrder(a, 3, "full"), seatOrder(a, 4, "full"), seatOrder(a, 5, "alone")}
	if _, err := st.Batches.PersistBatch(ctx, batch, outage.Outages{}); err != nil {
		t.Fatal(err)
	}
	if out, err := st.Batches.PersistBatch(ctx, []store.NewOrder{seatOrder(a, 6, "full")}, outage.Outages{}); err != nil ||
		out[fmt.Sprintf("o%d-6", a.ID)].Status != store.StatusFailed {
		t.Fatalf("a seat past the group's size: %v, %v; want it failed", out, err)
	}
	if _, err := st.Lifecycle.FailGroup(ctx, a.ID, "alone", 2, a.StartsAt.Add(time.Minute), clock); err != nil {
		t.Fatal(err)
	}
	for _, o := range []store.NewOrder{paid, refunded} {
		if _, _, err := st.Lifecycle.PayOrder(ctx, o.ID, store.Access{Admin: true}, clock.Add(time.Second), outage.Outages{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.Lifecycle.RefundOrder(ctx, refunded.ID, store.Access{Service: true}, true, clock.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Lifecycle.CancelOrder(ctx, cancelled.ID, store.Access{Admin: true}, clock); err != nil {
		t.Fatal(err)
	}

	var rows []struct{ Type, Body string }
	if err := db.Gorm.Raw("SELECT type, body FROM outbox_events ORDER BY seq").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	for _, r := range rows {
		types[r.Type] = true
		if n := testutil.CheckTimes(t, r.Type+" event", []byte(r.Body)); n < 2 {
			t.Errorf("%s event: %d times, want its created_at and its object's: %s", r.Type, n, r.Body)
		}
	}
	for _, typ := range outbox.Types {
		if !types[typ] {
			t.Errorf("no %s event among %d: the test did not make one", typ, len(rows))
		}
	}

	var orders []store.Order
	if err := db.Gorm.Where("activity_id = ?", a.ID).Find(&orders).Error; err != nil {
		t.Fatal(err)
	}
	answers := map[string]any{"queued order": queuedView(stock.QueuedOrder{OrderID: "q", ActivityID: a.ID,
		Buyer: "7", Quantity: 1, CreatedAt: clock}.Priced(stock.Sale{PriceCents: 100, PayWindow: 15 * time.Minute}), nil)}
	for _, o := range orders {
		answers[o.Status+" order "+o.ID] = storedView(o)
	}
	groups, err := st.Orders.ListGroups(ctx, a.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		answers[g.Status+" group "+g.ID] = storedGroupView(g)
	}
	answers["open group in Redis"] = groupView(group.Group{ID: "g", ExpiresAt: clock})
	for what, v := range answers {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if n := testutil.CheckTimes(t, what, b); n == 0 {
			t.Errorf("%s: no time in %s", what, b)
		}
	}
}

package sale_test

import (
	"context"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/sale"
	"seckill/internal/stock"
)

// A seat's expires_at is the deadline in force: while its group is open, the group's
// window, in the 202 and in a read of the order still queued (no worker here); once a
// seat completes the group, a whole pay window from now, for that seat and the others.
func TestSeatShowsItsGroupsDeadline(t *testing.T) {
	f := newFixture(t, 10, 2)
	ctx := context.Background()
	now := time.Now()
	size, window := 3, 600
	a, err := f.svc.Catalog.CreateActivity(ctx, sale.NewActivity{Name: "group", ProductName: "p", PriceCents: 100, Stock: 10,
		PerUserLimit: 2, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PayWindowSeconds: 3600,
		Kind: sale.KindGroup, GroupSize: &size, GroupWindowSeconds: &window})
	if err != nil {
		t.Fatal(err)
	}
	seat := func(user int64, group string) (sale.Group, sale.Order) {
		t.Helper()
		g, o, _, err := f.svc.Groups.Seat(ctx, sale.BuyRequest{Purchase: stock.Purchase{ActivityID: a.ID, Buyer: buyer.Of(user),
			Quantity: 1, OpenGroup: group == "", Group: group}})
		if err != nil {
			t.Fatalf("seat of buyer %d: %v", user, err)
		}
		return g, o
	}
	read := func(o sale.Order) sale.Order {
		t.Helper()
		got, err := f.svc.Orders.GetOrder(ctx, o.ID, sale.Caller{Admin: true})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	g, first := seat(1, "")
	_, second := seat(2, g.ID)
	for _, o := range []sale.Order{first, second, read(first), read(second)} {
		if o.Status != "queued" || !o.ExpiresAt.Equal(g.ExpiresAt.Time) {
			t.Errorf("order %s of an open group: %s, expires_at %v; want queued, the group's %v", o.ID, o.Status, o.ExpiresAt, g.ExpiresAt)
		}
	}
	before := time.Now()
	full, third := seat(3, g.ID)
	if full.Status != "complete" {
		t.Fatalf("the third seat of three: group %s", full.Status)
	}
	for _, o := range []sale.Order{third, read(first), read(third)} {
		if earliest := before.Add(time.Hour).Truncate(time.Millisecond); o.ExpiresAt.Before(earliest) {
			t.Errorf("order %s of a complete group: expires_at %v; want a whole pay window from now, %v or later", o.ID, o.ExpiresAt, earliest)
		}
	}
}

package order_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/outbox"
	"seckill/internal/stock"
	"seckill/internal/stock/reserve"
	"seckill/internal/store"
)

var shop = store.Access{Service: true}

// paid makes a paid order of qty units for user.
func (f *fixture) paid(user int64, qty int) store.Order {
	f.t.Helper()
	o, err := f.life.Pay(context.Background(), f.created(user, qty).ID, shop)
	if err != nil {
		f.t.Fatal(err)
	}
	return o
}

// subscribe makes the store record every event (an endpoint subscribed to all).
func (f *fixture) subscribe() {
	f.t.Helper()
	if _, err := outbox.NewWebhooks(f.db.Gorm, true).Create(context.Background(), "http://127.0.0.1:9/hook", nil); err != nil {
		f.t.Fatal(err)
	}
}

// events returns the types of the events recorded for each order, in order.
func (f *fixture) events() map[string][]string {
	f.t.Helper()
	var rows []struct{ Subject, Type string }
	if err := f.db.Gorm.Raw("SELECT subject, type FROM outbox_events ORDER BY seq").Scan(&rows).Error; err != nil {
		f.t.Fatal(err)
	}
	out := map[string][]string{}
	for _, r := range rows {
		out[r.Subject] = append(out[r.Subject], r.Type)
	}
	return out
}

// holds returns what a buyer holds in the sale by Redis and by MySQL's user_purchases.
func (f *fixture) holds(who buyer.ID) (redis, mysql int64) {
	f.t.Helper()
	snap, err := f.sk.Snapshot(context.Background(), f.act)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.db.Gorm.Raw("SELECT COALESCE(SUM(units), 0) FROM user_purchases WHERE activity_id = ? AND buyer = ?",
		f.act, who).Scan(&mysql).Error; err != nil {
		f.t.Fatal(err)
	}
	return snap.Users[who], mysql
}

// A refund, with and without restock: the order turns refunded, once; its buyer's
// units are free again in Redis and MySQL (the buyer buys up to the limit again); with
// restock the units are back on sale, without they stay off it (neither sold nor
// available), and a refund once the sale has ended keeps them off sale whatever was
// asked. Only a paid order is refundable; a refund again answers the same order.
func TestRefund(t *testing.T) {
	f := newFixture(t) // 10 units, 5 per buyer, pay window 60 s, the sale ends at t0+1h
	f.subscribe()
	ctx := context.Background()
	f.set(t0.Add(10 * time.Second))
	back, kept, late := f.paid(1, 5), f.paid(2, 2), f.paid(3, 1)
	created := f.created(4, 1)
	f.ledger(1)

	steps := []struct {
		name        string
		at          time.Duration // after t0
		id          string
		restock     bool
		wantErr     error
		wantRestock bool
	}{
		{"refund with restock", 20 * time.Second, back.ID, true, nil, true},
		{"again, asking no restock: the same refund", 21 * time.Second, back.ID, false, nil, true},
		{"refund without restock", 22 * time.Second, kept.ID, false, nil, false},
		{"a created order", 23 * time.Second, created.ID, true, store.ErrNotRefundable, false},
		{"no such order", 23 * time.Second, "nope", true, store.ErrNotFound, false},
		{"once the sale has ended", 2 * time.Hour, late.ID, true, nil, false},
	}
	refundedAt := map[string]time.Time{}
	for _, st := range steps {
		f.set(t0.Add(st.at))
		o, err := f.life.Refund(ctx, st.id, shop, st.restock)
		if !errors.Is(err, st.wantErr) {
			t.Errorf("%s: %v, want %v", st.name, err, st.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if o.Status != store.StatusRefunded || o.Restock == nil || *o.Restock != st.wantRestock || o.RefundedAt == nil {
			t.Errorf("%s: %s restock %v at %v; want refunded, restock %v", st.name, o.Status, o.Restock, o.RefundedAt, st.wantRestock)
			continue
		}
		if first, ok := refundedAt[o.ID]; ok && !first.Equal(*o.RefundedAt) {
			t.Errorf("%s: refunded at %v, the first answer said %v", st.name, *o.RefundedAt, first)
		}
		refundedAt[o.ID] = *o.RefundedAt
	}
	// 10 units: 5 back on sale, 2 + 1 kept off sale, 1 created. Every buyer refunded
	// holds nothing, in Redis and MySQL.
	f.ledger(6)
	for _, u := range []int64{1, 2, 3} {
		if r, m := f.holds(buyer.Of(u)); r != 0 || m != 0 {
			t.Errorf("buyer %d holds %d units in Redis, %d in MySQL; want none after the refund", u, r, m)
		}
	}
	if pending, _ := f.st.Lifecycle.PendingReturns(ctx, 10); len(pending) != 0 {
		t.Errorf("%d returns still pending", len(pending))
	}
	// The buyer refunded buys up to the limit again; the paid and refunded orders can
	// be neither paid nor cancelled.
	f.set(t0.Add(30 * time.Minute))
	if _, err := f.sk.Reserve(ctx, reserve.Reservation{Purchase: stock.Purchase{ActivityID: f.act, Buyer: "1", Quantity: 5},
		OrderID: "again", Now: t0.Add(30 * time.Minute), LockToken: "again", LockTTL: time.Millisecond}); err != nil {
		t.Errorf("the refunded buyer buys 5 units again: %v", err)
	}
	if _, err := f.life.Pay(ctx, back.ID, shop); !errors.Is(err, store.ErrNotPayable) {
		t.Errorf("pay a refunded order: %v, want ErrNotPayable", err)
	}
	if _, err := f.life.Cancel(ctx, back.ID, shop); !errors.Is(err, store.ErrNotCancellable) {
		t.Errorf("cancel a refunded order: %v, want ErrNotCancellable", err)
	}
	got := f.events()
	for _, o := range []store.Order{back, kept, late} {
		if want := fmt.Sprint([]string{outbox.OrderCreated, outbox.OrderPaid, outbox.OrderRefunded}); fmt.Sprint(got[o.ID]) != want {
			t.Errorf("order %s: events %v, want %s", o.ID, got[o.ID], want)
		}
	}
}

// Refunds race the order's payment, its cancel and its expiry, many goroutines per
// order: each order ends refunded or cancelled, as the answers said, with one event per
// change; the units come back once (to stock with a restock, to the buyer's allowance
// always), and the sale balances. A third of the orders are cancelled by their buyer at
// the same time, a quarter are never paid (the expiry cancels them under the refunds).
func TestRefundRaces(t *testing.T) {
	const orders, refunders = 12, 6
	f := newSaleFixture(t, orders, 1)
	f.subscribe()
	ctx := context.Background()
	var os []store.Order
	for u := int64(1); u <= orders; u++ {
		os = append(os, f.created(u, 1))
	}
	f.set(t0.Add(time.Minute - 5*time.Millisecond)) // the payers' last moments...

	type answers struct {
		payer       bool // a payment was sent
		pay, cancel error
		refunds     []store.Order
		refundErrs  []error
	}
	got := make([]answers, len(os))
	var wg sync.WaitGroup
	var paid atomic.Int64
	for i, o := range os {
		got[i].refunds, got[i].refundErrs = make([]store.Order, refunders), make([]error, refunders)
		if got[i].payer = i%4 != 3; got[i].payer {
			wg.Go(func() {
				_, got[i].pay = f.life.Pay(ctx, o.ID, shop)
				paid.Add(1)
			})
		}
		if i%3 == 0 { // a third of the orders: the buyer cancels at the same time
			wg.Go(func() { _, got[i].cancel = f.life.Cancel(ctx, o.ID, store.Access{Buyer: o.Buyer}) })
		}
		for r := range refunders {
			wg.Go(func() {
				// The shop refunds once the payment went through: a refund refused while
				// the order was created is tried again until it is cancelled, or the
				// refund goes through.
				for {
					got[i].refunds[r], got[i].refundErrs[r] = f.life.Refund(ctx, o.ID, shop, r%2 == 0)
					if !errors.Is(got[i].refundErrs[r], store.ErrNotRefundable) {
						return
					}
					now, err := f.st.Orders.GetOrder(ctx, o.ID)
					if err != nil || now.Status == store.StatusCancelled {
						return
					}
					time.Sleep(time.Millisecond) // pacing, so the payment gets the row in between
				}
			})
		}
	}
	// Once a first payment has answered, the window ends while the others race on.
	for deadline := time.Now().Add(10 * time.Second); paid.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	f.set(t0.Add(time.Minute)) // ...while the expiry runs
	if _, err := f.life.ExpireDue(ctx, 100); err != nil {
		t.Error(err)
	}
	wg.Wait()

	events := f.events()
	available := int64(0)
	finals := map[string]int{}
	for i, o := range os {
		a := got[i]
		row, err := f.st.Orders.GetOrder(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		finals[row.Status]++
		refunded := 0
		for r, err := range a.refundErrs {
			switch {
			case err == nil:
				refunded++
				if ro := a.refunds[r]; ro.Status != store.StatusRefunded || !ro.RefundedAt.Equal(*row.RefundedAt) || *ro.Restock != *row.Restock {
					t.Errorf("order %s: a refund answered %s at %v restock %v; the order is refunded at %v restock %v",
						o.ID, ro.Status, ro.RefundedAt, *ro.Restock, row.RefundedAt, *row.Restock)
				}
			case !errors.Is(err, store.ErrNotRefundable):
				t.Errorf("order %s: a refund answered %v", o.ID, err)
			}
		}
		var want []string
		switch {
		case row.Status == store.StatusRefunded && a.payer && a.pay == nil && refunded == refunders:
			want = []string{outbox.OrderCreated, outbox.OrderPaid, outbox.OrderRefunded}
			if *row.Restock {
				available++
			}
		case row.Status == store.StatusCancelled && (!a.payer || a.pay != nil) && refunded == 0:
			want = []string{outbox.OrderCreated, outbox.OrderCancelled}
			available++
		default:
			t.Errorf("order %s is %s: pay answered %v, cancel %v, %d of %d refunds 200", o.ID, row.Status, a.pay, a.cancel, refunded, refunders)
		}
		if fmt.Sprint(events[o.ID]) != fmt.Sprint(want) {
			t.Errorf("order %s (%s): events %v, want %v", o.ID, row.Status, events[o.ID], want)
		}
		if r, m := f.holds(o.Buyer); r != 0 || m != 0 {
			t.Errorf("buyer %q of the %s order holds %d units in Redis, %d in MySQL; want none", o.Buyer, row.Status, r, m)
		}
	}
	if pending, _ := f.st.Lifecycle.PendingReturns(ctx, 100); len(pending) != 0 {
		t.Errorf("%d returns still pending", len(pending))
	}
	f.ledger(available)
	if finals[store.StatusRefunded] == 0 || finals[store.StatusCancelled] == 0 {
		t.Errorf("the orders ended %v: the refunds did not meet both outcomes", finals)
	}
	t.Logf("orders ended %v; %d units back on sale", finals, available)
}

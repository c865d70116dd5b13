package queue

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"seckill/internal/stock"
)

func TestPayloadRoundTrip(t *testing.T) {
	plain := Order{ID: "01KAAAAAAAAAAAAAAAAAAAAAAA42", ActivityID: 42, UserID: 7, Quantity: 3,
		AmountCents: 3_000_000_000_000_000, CreatedAtMs: 1795306517000, ExpiresAtMs: 1795307417000, Limit: 5}
	capped := plain
	capped.Participations = 2
	seat := capped
	seat.Group, seat.GroupSize, seat.GroupExpiresAtMs = "01KBBBBBBBBBBBBBBBBBBBBBBB42", 3, 1795306577000
	keyed := plain
	keyed.IdempotencyKey, keyed.Fingerprint = "first-try", "q3"
	keyedSeat := seat
	keyedSeat.IdempotencyKey, keyedSeat.Fingerprint = "k_9-x", "q3:join:01KBBBBBBBBBBBBBBBBBBBBBBB42"
	for name, o := range map[string]Order{"plain": plain, "capped": capped, "seat in a group": seat,
		"with an Idempotency-Key": keyed, "seat with an Idempotency-Key": keyedSeat} {
		task := newPersistTask(o)
		if task.Type() != TypePersistOrder {
			t.Fatalf("%s: type %q", name, task.Type())
		}
		got, err := parseOrder(task.Payload())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(o, got); diff != "" {
			t.Errorf("%s: round trip (-want +got):\n%s", name, diff)
		}
	}
}

func TestParseOrderRefusesMalformed(t *testing.T) {
	for _, p := range []string{"", "x", "id 1 2 3 4 5 6", "id 1 2 3 4 5 6 7 8", "id a 2 3 4 5 6 7",
		"id 1 2 3 4 5 6 7 1 g 3", "id 1 2 3 4 5 6 7 1 g x 9", "id 1 2 3 4 5 6 7 0 - 0 0 key",
		"id 0 2 3 4 5 6 7", "id 1 2 0 4 5 6 7", "id 1 2 3 4 5 6 0", `{"id":"x"}`} {
		if o, err := parseOrder([]byte(p)); err == nil {
			t.Errorf("parseOrder(%q) = %+v, want an error", p, o)
		}
	}
}

// An API's batch becomes one task whose payload holds every order, one per line.
func TestBatchTask(t *testing.T) {
	var want []Order
	for i := int64(1); i <= 3; i++ {
		want = append(want, Order{ID: fmt.Sprintf("01KAAAAAAAAAAAAAAAAAAAAAA%d1", i), ActivityID: 1, UserID: i,
			Quantity: 1, AmountCents: 100, CreatedAtMs: 1, ExpiresAtMs: 2, Limit: 1})
	}
	task := NewBatchTask(want)
	if task.Type() != TypePersistOrder {
		t.Fatalf("type %q", task.Type())
	}
	got, err := ParseOrders(task.Payload())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("orders (-want +got):\n%s", diff)
	}
	if _, err := ParseOrders([]byte("bad\n")); err == nil {
		t.Error("a malformed line must fail the batch")
	}
}

// A queued order's amount is the unit price times the quantity, and it expires one pay
// window after it was taken.
func TestQueued(t *testing.T) {
	created := time.UnixMilli(1795306517123).UTC()
	got := Queued(stock.QueuedOrder{OrderID: "01KAAAAAAAAAAAAAAAAAAAAAAA7", ActivityID: 7, UserID: 3, Quantity: 2,
		CreatedAt: created, Limit: 4}, stock.Sale{PriceCents: 1250, PayWindow: 15 * time.Minute})
	want := Order{ID: "01KAAAAAAAAAAAAAAAAAAAAAAA7", ActivityID: 7, UserID: 3, Quantity: 2, AmountCents: 2500,
		CreatedAtMs: 1795306517123, ExpiresAtMs: 1795306517123 + 15*60*1000, Limit: 4}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Queued (-want +got):\n%s", diff)
	}
}

// QueuedOrder undoes Queued: a task's order is the queued order it was made from, a
// seat's group included.
func TestQueuedOrderUndoesQueued(t *testing.T) {
	created := time.UnixMilli(1795306517123).UTC()
	plain := stock.QueuedOrder{OrderID: "01KAAAAAAAAAAAAAAAAAAAAAAA7", ActivityID: 7, UserID: 3, Quantity: 2,
		CreatedAt: created, Limit: 4, Participations: 2}
	seat := plain
	seat.Group, seat.GroupSize, seat.GroupExpiresAt = "01KBBBBBBBBBBBBBBBBBBBBBBB7", 3, created.Add(time.Minute)
	for name, q := range map[string]stock.QueuedOrder{"plain": plain, "seat in a group": seat} {
		got := Queued(q, stock.Sale{PriceCents: 1250, PayWindow: 15 * time.Minute}).QueuedOrder()
		if diff := cmp.Diff(q, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

package queue

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPayloadRoundTrip(t *testing.T) {
	o := Order{ID: "01KAAAAAAAAAAAAAAAAAAAAAAA42", ActivityID: 42, UserID: 7, Quantity: 3,
		AmountCents: 3_000_000_000_000_000, CreatedAtMs: 1795306517000, ExpiresAtMs: 1795307417000, Limit: 5}
	task := NewPersistTask(o)
	if task.Type() != TypePersistOrder {
		t.Fatalf("type %q", task.Type())
	}
	got, err := ParseOrder(task.Payload())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(o, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestParseOrderRefusesMalformed(t *testing.T) {
	for _, p := range []string{"", "x", "id 1 2 3 4 5 6", "id 1 2 3 4 5 6 7 8", "id a 2 3 4 5 6 7",
		"id 0 2 3 4 5 6 7", "id 1 2 0 4 5 6 7", "id 1 2 3 4 5 6 0", `{"id":"x"}`} {
		if o, err := ParseOrder([]byte(p)); err == nil {
			t.Errorf("ParseOrder(%q) = %+v, want an error", p, o)
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

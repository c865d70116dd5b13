package task

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"seckill/internal/buyer"
	"seckill/internal/stock"
)

func ms(n int64) time.Time { return time.UnixMilli(n).UTC() }

func TestPayloadRoundTrip(t *testing.T) {
	plain := stock.QueuedOrder{OrderID: "01KAAAAAAAAAAAAAAAAAAAAAAA42", ActivityID: 42, Buyer: "7", Quantity: 3,
		AmountCents: 3_000_000_000_000_000, CreatedAt: ms(1795306517000), ExpiresAt: ms(1795307417000), Limit: 5}
	capped := plain
	capped.ParticipationCap = 2
	seat := capped
	seat.Group, seat.GroupSize, seat.GroupExpiresAt = "01KBBBBBBBBBBBBBBBBBBBBBBB42", 3, ms(1795306577000)
	keyed := plain
	keyed.IdempotencyKey, keyed.Fingerprint = "first-try", "q3"
	keyedSeat := seat
	keyedSeat.IdempotencyKey, keyedSeat.Fingerprint = "k_9-x", "q3:join:01KBBBBBBBBBBBBBBBBBBBBBBB42"
	for name, o := range map[string]stock.QueuedOrder{"plain": plain, "capped": capped, "seat in a group": seat,
		"with an Idempotency-Key": keyed, "seat with an Idempotency-Key": keyedSeat} {
		task := newPersistTask(o)
		if task.Type() != TypePersist {
			t.Fatalf("%s: type %q", name, task.Type())
		}
		got, err := ParseOrders(task.Type(), task.Payload())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff([]stock.QueuedOrder{o}, got); diff != "" {
			t.Errorf("%s: round trip (-want +got):\n%s", name, diff)
		}
	}
}

// The previous release's tasks (TypePersistV1) are read as the orders they were made
// from: these payloads are the bytes its encoder wrote for a plain order, a capped one,
// a seat and a keyed one.
func TestV1Payload(t *testing.T) {
	payload := "01KAAAAAAAAAAAAAAAAAAAAAA1 42 7 2 200 1795306517000 1795307417000 5\n" +
		"01KAAAAAAAAAAAAAAAAAAAAAA2 42 8 2 200 1795306517000 1795307417000 5 2 - 0 0\n" +
		"01KAAAAAAAAAAAAAAAAAAAAAA3 42 9 2 200 1795306517000 1795307417000 5 2 01KBBBBBBBBBBBBBBBBBBBBBB1 3 1795306577000\n" +
		"01KAAAAAAAAAAAAAAAAAAAAAA4 42 10 2 200 1795306517000 1795307417000 5 0 - 0 0 first-try q2"
	plain := stock.QueuedOrder{OrderID: "01KAAAAAAAAAAAAAAAAAAAAAA1", ActivityID: 42, Buyer: "7", Quantity: 2,
		AmountCents: 200, CreatedAt: ms(1795306517000), ExpiresAt: ms(1795307417000), Limit: 5}
	capped := plain
	capped.OrderID, capped.Buyer, capped.ParticipationCap = "01KAAAAAAAAAAAAAAAAAAAAAA2", "8", 2
	seat := capped
	seat.OrderID, seat.Buyer = "01KAAAAAAAAAAAAAAAAAAAAAA3", "9"
	seat.Group, seat.GroupSize, seat.GroupExpiresAt = "01KBBBBBBBBBBBBBBBBBBBBBB1", 3, ms(1795306577000)
	keyed := plain
	keyed.OrderID, keyed.Buyer, keyed.IdempotencyKey, keyed.Fingerprint = "01KAAAAAAAAAAAAAAAAAAAAAA4", "10", "first-try", "q2"
	got, err := ParseOrders(TypePersistV1, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]stock.QueuedOrder{plain, capped, seat, keyed}, got); diff != "" {
		t.Errorf("orders (-want +got):\n%s", diff)
	}
}

func TestParseOrdersRefusesMalformed(t *testing.T) {
	// A TypePersist line; those refused below break it in one place, or are no line at all.
	const wellFormed = "id 1 300 9 . . 2 3 4 5"
	if _, err := ParseOrders(TypePersist, []byte(wellFormed)); err != nil {
		t.Fatalf("%q: %v", wellFormed, err)
	}
	for typ, payloads := range map[string][]string{
		TypePersist: {"", "x", "id 1 300 9 . . 2 3 4", "id 1 300 9 . . 2 3 4 5 0 - 0", "id 1 300 9 key 2 3 4 5",
			"id a 300 9 . . 2 3 4 5", "id 1 300 x . . 2 3 4 5", "id 1 300 9 . . 2 3 4 5 1 g x 9",
			"id 0 300 9 . . 2 3 4 5", "id 1 300 9 . . 0 3 4 5", "id 1 300 9 . . 2 0 4 5", "id 1 300 9 . . 2 3 4 0",
			"id 1 300 9 . . 2 3 4 5\nbad", `{"id":"x"}`,
			"id 1 2 3 4 5 6 7", // a plain order of the previous release's form
		},
		TypePersistV1: {"", "x", "id 1 2 3 4 5 6", "id 1 2 3 4 5 6 7 8", "id a 2 3 4 5 6 7",
			"id 1 2 3 4 5 6 7 1 g 3", "id 1 2 3 4 5 6 7 1 g x 9", "id 1 2 3 4 5 6 7 0 - 0 0 key",
			"id 0 2 3 4 5 6 7", "id 1 2 0 4 5 6 7", "id 1 2 3 4 5 6 0", `{"id":"x"}`},
		"order:other": {wellFormed},
	} {
		for _, p := range payloads {
			if o, err := ParseOrders(typ, []byte(p)); err == nil {
				t.Errorf("ParseOrders(%q, %q) = %+v, want an error", typ, p, o)
			}
		}
	}
}

// An API's batch becomes one task whose payload holds every order, one per line.
func TestBatchTask(t *testing.T) {
	var want []stock.QueuedOrder
	for i := int64(1); i <= 3; i++ {
		want = append(want, stock.QueuedOrder{OrderID: fmt.Sprintf("01KAAAAAAAAAAAAAAAAAAAAAA%d1", i), ActivityID: 1,
			Buyer: buyer.Of(i), Quantity: 1, AmountCents: 100, CreatedAt: ms(1), ExpiresAt: ms(2), Limit: 1})
	}
	task := NewBatchTask(want, nil)
	if task.Type() != TypePersist {
		t.Fatalf("type %q", task.Type())
	}
	got, err := ParseOrders(task.Type(), task.Payload())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("orders (-want +got):\n%s", diff)
	}
	if _, err := ParseOrders(TypePersist, []byte("bad\n")); err == nil {
		t.Error("a malformed line must fail the batch")
	}
}

// A worker of the previous release, whose mux knows TypePersistV1 alone, has no handler
// for a TypePersist task (asynq matches a type by its longest registered prefix), so it
// fails the task for a worker that reads it, rather than misread it.
func TestPreviousWorkerHasNoHandlerForTheTask(t *testing.T) {
	previous := asynq.NewServeMux()
	previous.HandleFunc(TypePersistV1, func(context.Context, *asynq.Task) error { return nil })
	task := NewBatchTask([]stock.QueuedOrder{{OrderID: "o", ActivityID: 1, Buyer: "1", Quantity: 1, Limit: 1}}, nil)
	if _, pattern := previous.Handler(task); pattern != "" {
		t.Errorf("a worker of the previous release hands a %q task to its %q handler", task.Type(), pattern)
	}
	if err := previous.ProcessTask(context.Background(), task); !errors.Is(err, asynq.ErrHandlerNotFound) || errors.Is(err, asynq.SkipRetry) {
		t.Errorf("the previous release's worker: %v, want a handler-not-found error (retried)", err)
	}
}
